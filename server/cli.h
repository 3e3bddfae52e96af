// Command line: azurite-table compatible flags plus Cerulean's own.
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cerulean::server {

struct CliOptions {
  std::string host = "127.0.0.1";
  unsigned short port = 10002;
  std::string location = "./data";
  bool in_memory = false;
  // PostgreSQL connection URL (--database, else env CERULEAN_DATABASE);
  // empty: the SQLite store under `location`.
  std::string database;
  bool loose = false;
  bool skip_api_version_check = false;
  bool silent = false;
  bool json_log = false;
  std::string debug_file;
  std::string seed_dir;
  bool startup_check = false;  // --startupCheck: PRAGMA quick_check before serving
  // HTTPS (azurite: --cert with --key for PEM, or with --pwd for .pfx).
  std::string cert;
  std::string key;
  std::string pwd;
  std::string oauth;        // "basic" or empty
  std::string faults_file;  // --faults: fault rules set at start-up (faults.h)
  // The subcommand (a Subcommand's name) and the words after it; empty: serve.
  std::string command;
  std::vector<std::string> command_args;
  // export / import / reset subcommands.
  std::string account;
  std::vector<std::string> tables;
  std::string file;
  bool disable_product_style_url = false;
  bool disable_explorer = false;
  bool public_metrics = false;  // --publicMetrics: /_metrics in full without a signature
  // Connection limits (ConnectionLimits in server/http/session_group.h).
  unsigned max_connections = 1000;
  unsigned keep_alive_timeout_s = 60;
  unsigned request_timeout_s = 60;
  // --exitWithParent: stop, as on SIGTERM, at the end of stdin (ParentWatch).
  bool exit_with_parent = false;
  bool help = false;
  bool version = false;
  // The usage and options, when --help was given or the parse failed.
  std::string help_text;
};

// A subcommand, `cerulean NAME [WORD...] [options]`: a tool that runs instead
// of the server. Adding one is a row of Subcommands() and its case in main.cc.
struct Subcommand {
  const char* name;
  // How many words (not options) may follow the name, at most.
  int max_words;
  // The usage line after "cerulean ", and what it does.
  const char* synopsis;
  const char* summary;
};

// The subcommands, in the order the usage lists them.
std::span<const Subcommand> Subcommands();

// Parses argv. Returns an error message for unknown or malformed options, for
// a word that names no subcommand, and for more words than the subcommand
// takes; then the caller exits 2 with `help_text`.
std::optional<std::string> ParseCli(int argc, const char* const* argv, CliOptions* out);

}  // namespace cerulean::server
