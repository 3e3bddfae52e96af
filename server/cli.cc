#include "server/cli.h"

#include <boost/program_options.hpp>
#include <cstdlib>
#include <sstream>

#include "server/formats/ascii.h"

namespace cerulean::server {

namespace po = boost::program_options;

namespace {

constexpr const char* kUsage =
    "Usage: cerulean [options]                      run the Table service\n"
    "       cerulean export [--table T...] [--file F] write tables as JSON Lines\n"
    "       cerulean import [--file F]               load JSON Lines\n"
    "       cerulean reset                           delete all tables of the account\n"
    "       cerulean snapshot save|restore|delete NAME | list\n"
    "                                                snapshots of the account, offline\n"
    "       cerulean health [--tableHost H] [--tablePort P]\n"
    "                                                exit 0 iff the server there answers GET\n"
    "                                                /_health with 200 (plain HTTP)\n\n"
    "Options (compatible with azurite-table)";

// ParseCli, with the options described into `desc`.
std::optional<std::string> ParseInto(int argc, const char* const* argv, CliOptions* out,
                                     po::options_description& desc) {
  desc.add_options()("tableHost", po::value(&out->host)->default_value(out->host),
                     "address to listen on")("tablePort",
                                             po::value(&out->port)->default_value(out->port),
                                             "port to listen on; 0 picks a free port")(
      "location,l", po::value(&out->location)->default_value(out->location),
      "directory of the SQLite database")("inMemoryPersistence", po::bool_switch(&out->in_memory),
                                          "keep all data in memory only")(
      "database", po::value(&out->database),
      "serve from this PostgreSQL database, postgresql://USER@HOST:PORT/DB (any number of "
      "servers may share one), instead of the SQLite store under --location; default: the "
      "environment variable CERULEAN_DATABASE")(
      "loose,L", po::bool_switch(&out->loose),
      "ignore unsupported query options and headers, and the Shared Key date skew check")(
      "skipApiVersionCheck", po::bool_switch(&out->skip_api_version_check),
      "accept any well-formed x-ms-version")(
      "disableProductStyleUrl", po::bool_switch(&out->disable_product_style_url),
      "always parse the account from the first path segment")(
      "disableExplorer", po::bool_switch(&out->disable_explorer),
      "do not serve the table explorer page at /_explorer")(
      "publicMetrics", po::bool_switch(&out->public_metrics),
      "serve /_metrics with every account's tables and entities to unsigned requests (for a "
      "scraper that cannot sign)")(
      "disableTelemetry", "accepted for Azurite compatibility; Cerulean sends no telemetry")(
      "debug,d", po::value(&out->debug_file),
      "write full request/response headers and query plans to FILE")(
      "silent,s", po::bool_switch(&out->silent), "no access log on stdout")(
      "jsonLog", po::bool_switch(&out->json_log), "access log lines as JSON")(
      "cert", po::value(&out->cert),
      "serve HTTPS only, with this PEM certificate (chain) or .pfx file")(
      "key", po::value(&out->key), "the PEM private key of --cert")(
      "pwd", po::value(&out->pwd), "the password of a .pfx --cert (or of an encrypted --key)")(
      "oauth", po::value(&out->oauth),
      "accept OAuth bearer tokens: 'basic' checks issuer, audience and lifetime, not the "
      "signature; needs --cert")(
      "faults", po::value(&out->faults_file),
      "set the fault rules of FILE ({\"rules\": [...]}, as PUT /_faults) at start-up")(
      "maxConnections", po::value(&out->max_connections)->default_value(out->max_connections),
      "open connections at most; at the cap a new connection replaces the one idle longest")(
      "keepAliveTimeout",
      po::value(&out->keep_alive_timeout_s)->default_value(out->keep_alive_timeout_s),
      "seconds an idle connection has to begin its next request before it is closed")(
      "requestTimeout", po::value(&out->request_timeout_s)->default_value(out->request_timeout_s),
      "seconds a connection has to send the rest of a request once its request line arrived")(
      "seed", po::value(&out->seed_dir),
      "import every *.jsonl file of DIR at start-up (table = file name)")(
      "account", po::value(&out->account),
      "export/import/reset/snapshot: the account (default devstoreaccount1)")(
      "table", po::value(&out->tables)->multitoken(), "export: only these tables")(
      "file", po::value(&out->file), "export/import: the JSON Lines file (default stdout/stdin)")(
      "exitWithParent", po::bool_switch(&out->exit_with_parent),
      "stop, as on SIGTERM, when standard input ends: started with a pipe whose write end "
      "only the parent holds, the server ends with the parent however it ends")(
      "version,v", po::bool_switch(&out->version), "print the version")(
      "help,h", po::bool_switch(&out->help), "print this help");
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
  if (out->max_connections == 0) return std::string("--maxConnections must be at least 1");
  if (out->request_timeout_s == 0) return std::string("--requestTimeout must be at least 1");
  if (out->keep_alive_timeout_s == 0) {
    return std::string("--keepAliveTimeout must be at least 1");
  }
  if (out->database.empty()) {
    if (const char* env = std::getenv("CERULEAN_DATABASE"); env != nullptr) out->database = env;
  }
  if (!out->database.empty() && out->in_memory) {
    return std::string("--database and --inMemoryPersistence exclude each other");
  }
  if (!out->oauth.empty()) {
    // Azurite compares the level case-insensitively and knows only "basic".
    if (ToLower(out->oauth) != "basic")
      return "--oauth: unknown level '" + out->oauth + "' (supported: basic)";
    out->oauth = "basic";
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> ParseCli(int argc, const char* const* argv, CliOptions* out) {
  po::options_description desc(kUsage);
  std::optional<std::string> err = ParseInto(argc, argv, out, desc);
  // Formatted only when it is shown: it costs more than the parse.
  if (err || out->help) {
    std::ostringstream help;
    help << desc;
    out->help_text = help.str();
  }
  return err;
}

}  // namespace cerulean::server
