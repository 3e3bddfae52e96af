#include "server/cli.h"

#include <boost/program_options.hpp>
#include <cstdlib>
#include <sstream>

#include "server/formats/ascii.h"

namespace cerulean::server {

namespace po = boost::program_options;

namespace {

constexpr Subcommand kSubcommands[] = {
    {"export", 0, "export [--table T...] [--file F]", "write tables as JSON Lines"},
    {"import", 0, "import [--file F]", "load JSON Lines"},
    {"reset", 0, "reset", "delete all tables of the account"},
    {"snapshot", 2, "snapshot save|restore|delete NAME | list",
     "snapshots of the account, offline"},
    {"check", 0, "check", "check the database file for damage"},
    {"health", 0, "health [--tableHost H] [--tablePort P]",
     "exit 0 iff the server there answers GET /_health with 200 (plain HTTP)"},
};

// Azurite's options for its blob and queue services (Aspire's Azurite
// resource passes them): refused with a reason, since Cerulean serves tables.
constexpr const char* kAzuriteOtherServices[] = {"blobHost", "blobPort", "queueHost", "queuePort"};

// "Usage: ..." with one line per subcommand, then the options' caption.
std::string Usage() {
  constexpr size_t kColumn = 49;
  std::string usage = "Usage: cerulean [options]";
  usage.append(kColumn - usage.size(), ' ').append("run the Table service\n");
  for (const Subcommand& sub : kSubcommands) {
    std::string line = std::string("       cerulean ") + sub.synopsis;
    // A synopsis too long for the column puts its summary on the next line.
    if (line.size() >= kColumn) {
      line.append("\n").append(kColumn, ' ');
    } else {
      line.append(kColumn - line.size(), ' ');
    }
    usage += line + sub.summary + "\n";
  }
  return usage + "\nOptions (compatible with azurite-table)";
}

// The subcommand named `name`, or null.
const Subcommand* FindSubcommand(const std::string& name) {
  for (const Subcommand& sub : kSubcommands) {
    if (name == sub.name) return &sub;
  }
  return nullptr;
}

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
      "startupCheck", po::bool_switch(&out->startup_check),
      "check the --location database file before serving; refuse to start if it is damaged")(
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
  // Not in the help: the words (subcommand and its arguments), and the
  // options of Azurite's other services.
  std::vector<std::string> words;
  po::options_description hidden;
  hidden.add_options()("word", po::value(&words));
  for (const char* name : kAzuriteOtherServices) {
    hidden.add_options()(name, po::value<std::string>());
  }
  po::options_description all;
  all.add(desc).add(hidden);
  po::positional_options_description positional;
  positional.add("word", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
  for (const char* name : kAzuriteOtherServices) {
    if (vm.count(name) != 0) {
      return std::string("--") + name +
             " is an option of Azurite's blob and queue services; Cerulean serves the Table "
             "service only (run Azurite beside it for blobs and queues)";
    }
  }
  if (!words.empty()) {
    const Subcommand* sub = FindSubcommand(words[0]);
    if (sub == nullptr) return "unknown command '" + words[0] + "'";
    if (words.size() - 1 > static_cast<size_t>(sub->max_words)) {
      return std::string(sub->name) + ": unexpected word '" + words[sub->max_words + 1] + "'";
    }
    out->command = words[0];
    out->command_args.assign(words.begin() + 1, words.end());
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

std::span<const Subcommand> Subcommands() { return kSubcommands; }

std::optional<std::string> ParseCli(int argc, const char* const* argv, CliOptions* out) {
  po::options_description desc(Usage());
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
