// The composition root: parse the command line, pick the storage backend,
// build the ServerContext, run the HTTP server until SIGINT/SIGTERM.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "server/cli.h"
#include "server/devtools/explorer.h"
#include "server/devtools/faults.h"
#include "server/devtools/fixtures.h"
#include "server/devtools/logger.h"
#include "server/devtools/metrics.h"
#include "server/http/health_probe.h"
#include "server/http/http_server.h"
#include "server/operations/test_double.h"
#include "server/parent_watch.h"
#include "server/platform.h"
#include "server/protocol/document_cache.h"
#include "server/protocol/request.h"
#include "server/runtime/blocking_pool.h"
#include "server/runtime/body_budget.h"
#include "server/runtime/page_prefetch.h"
#include "server/runtime/response_budget.h"
#include "storage/edm_text.h"
#include "storage/platform.h"
#include "storage/postgres/postgres_store.h"
#include "storage/sqlite/sqlite_store.h"

namespace {

using namespace cerulean;

// Threads of the blocking pool (see ServerContext::blocking_pool): it starts
// with the first and grows to the second as work waits (blocking_pool.h).
constexpr size_t kInitialBlockingThreads = 2;
constexpr size_t kBlockingThreads = 32;

// The memory request bodies may hold across all connections (body_budget.h):
// 64 bodies of the largest size (4 MiB), against 4 GiB for 1,000
// connections (--maxConnections) without it. More bodies than that at once
// could only wait in memory: the server parses them on its I/O threads
// (one per CPU) and commits writes one group at a time.
constexpr size_t kBodyMemory = 256 * 1024 * 1024;

// The memory response bodies over 64 KiB may hold across all connections
// while they are rendered and written (response_budget.h): two of the
// longest pages (16 MiB), or 32 of the longest entities. A client reading
// its answers takes them in milliseconds on a local network; the budget
// fills only with answers nobody reads, which otherwise stay until the
// request timeout.
constexpr size_t kResponseMemory = 32 * 1024 * 1024;

// How long a cached ACL or CORS rule set is used on a store that other
// nodes write too (PostgreSQL) before it is read again (document_cache.h).
// Azure documents up to 30 s for a stored access policy to take effect;
// 5 s keeps a node well inside that while reading each document at most
// once per 5 s, off the I/O threads.
constexpr std::chrono::milliseconds kDocumentMaxAge{5000};

// The SQLite store's database file under --location.
std::string SqlitePath(const server::CliOptions& cli) {
  return (std::filesystem::path(cli.location) / "cerulean.sqlite").string();
}

storage::Result<std::unique_ptr<storage::Store>> OpenStore(const server::CliOptions& cli) {
  if (!cli.database.empty()) {
    storage::PostgresStoreOptions pg_options;
    pg_options.url = cli.database;
    // The database going away, coming back, or served by another host: one
    // line on stderr per change, with the time (UTC).
    pg_options.log = [](const std::string& line) {
      std::fprintf(stderr, "%s cerulean: %s\n",
                   storage::FormatDateTime(storage::NowTicks()).c_str(), line.c_str());
    };
    auto pg = storage::PostgresStore::Open(pg_options);
    if (!pg.ok()) return pg.status();
    return std::unique_ptr<storage::Store>(std::move(pg).value());
  }
  storage::SqliteStoreOptions store_options;
  if (cli.in_memory) {
    store_options.in_memory = true;
  } else {
    store_options.path = SqlitePath(cli);
  }
  store_options.check_at_open = cli.startup_check;
  // A damaged database file: one line on stderr, with the time (UTC).
  store_options.log = [](const std::string& line) {
    std::fprintf(stderr, "%s cerulean: %s\n", storage::FormatDateTime(storage::NowTicks()).c_str(),
                 line.c_str());
  };
  // Each I/O thread answers point reads itself: that many can run at once.
  store_options.point_reader_count = storage::UsableCpus();
  auto sqlite = storage::SqliteStore::Open(store_options);
  if (!sqlite.ok()) return sqlite.status();
  return std::unique_ptr<storage::Store>(std::move(sqlite).value());
}

// Loads every *.jsonl file of `dir` into the default account.
bool Seed(storage::Store& store, const std::string& dir) {
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".jsonl") files.push_back(entry.path());
  }
  if (ec) {
    std::fprintf(stderr, "cerulean: --seed %s: %s\n", dir.c_str(), ec.message().c_str());
    return false;
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    std::ifstream in(file);
    size_t count = 0;
    storage::Status s =
        server::ImportJsonLines(store, std::string(server::kDevAccount), in, &count);
    if (!s.ok()) {
      std::fprintf(stderr, "cerulean: --seed %s: %s\n", file.string().c_str(),
                   s.ToString().c_str());
      return false;
    }
  }
  return true;
}

// Sets the fault rules of `path` (--faults).
bool LoadFaults(const std::string& path, const server::Accounts& accounts,
                server::FaultInjector* faults) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) {
    std::fprintf(stderr, "cerulean: --faults %s: cannot read it\n", path.c_str());
    return false;
  }
  std::vector<server::FaultRule> rules;
  if (auto err =
          server::ParseFaultRules(text.str(), std::string(server::kDevAccount), false, &rules)) {
    std::fprintf(stderr, "cerulean: --faults %s: %s\n", path.c_str(), err->c_str());
    return false;
  }
  for (const auto& rule : rules) {
    if (accounts.Find(rule.account) == nullptr) {
      std::fprintf(stderr, "cerulean: --faults %s: no account '%s'\n", path.c_str(),
                   rule.account.c_str());
      return false;
    }
  }
  faults->Set(std::move(rules));
  return true;
}

// Checks the words after `cerulean snapshot`: an error message, or "".
std::string CheckSnapshotArgs(const std::vector<std::string>& args) {
  const std::string action = args.empty() ? "" : args[0];
  if (action == "list") return args.size() == 1 ? "" : "list takes no NAME";
  if (action != "save" && action != "restore" && action != "delete") {
    return "expected save, restore or delete NAME, or list";
  }
  if (args.size() != 2 || !server::ValidSnapshotName(args[1])) {
    return action + " needs a NAME of 1 to 128 letters, digits, '.', '_' or '-'";
  }
  return "";
}

// cerulean snapshot save|restore|delete NAME | list: the /_snapshots
// operations on a store no server has open. REQUIRES: CheckSnapshotArgs(args)
// is empty.
int RunSnapshotTool(storage::Store& store, const std::string& account,
                    const std::vector<std::string>& args) {
  const std::string& action = args[0];
  storage::Status s;
  if (action == "list") {
    std::vector<storage::SnapshotInfo> list;
    s = store.ListSnapshots(account, &list);
    for (const auto& info : list) {
      std::printf("%s\t%s\t%llu tables\t%llu entities\n", info.name.c_str(),
                  storage::FormatDateTime(info.created).c_str(),
                  static_cast<unsigned long long>(info.tables),
                  static_cast<unsigned long long>(info.entities));
    }
  } else if (action == "save") {
    storage::SnapshotInfo info;
    s = store.SaveSnapshot(account, args[1], &info);
    if (s.ok()) {
      std::fprintf(stderr, "saved %s: %llu tables, %llu entities\n", args[1].c_str(),
                   static_cast<unsigned long long>(info.tables),
                   static_cast<unsigned long long>(info.entities));
    }
  } else if (action == "restore") {
    storage::RestoreStats stats;
    s = store.RestoreSnapshot(account, args[1], &stats);
    if (s.ok()) {
      std::fprintf(stderr,
                   "restored %s: %llu tables kept, %llu patched, %llu copied (%llu entities)\n",
                   args[1].c_str(), static_cast<unsigned long long>(stats.tables_kept),
                   static_cast<unsigned long long>(stats.tables_patched),
                   static_cast<unsigned long long>(stats.tables_copied),
                   static_cast<unsigned long long>(stats.entities_copied));
    }
  } else {
    s = store.DeleteSnapshot(account, args[1]);
  }
  if (!s.ok()) {
    std::fprintf(stderr, "cerulean snapshot %s: %s\n", action.c_str(), s.ToString().c_str());
    return 1;
  }
  return 0;
}

// cerulean check [--location DIR]: the SQLite store's file, checked without
// changing it (PRAGMA integrity_check). 0 iff it is sound; else the problems
// on stdout, or why it could not be checked on stderr, and 1.
int RunCheck(const server::CliOptions& cli) {
  if (!cli.database.empty() || cli.in_memory) {
    std::fprintf(stderr, "cerulean check: checks the database file under --location\n");
    return 2;
  }
  const std::string path = SqlitePath(cli);
  std::vector<std::string> problems;
  storage::Status s = storage::SqliteStore::CheckFile(path, &problems);
  if (!s.ok()) {
    std::fprintf(stderr, "cerulean check: %s\n", s.ToString().c_str());
    return 1;
  }
  for (const auto& problem : problems) std::printf("%s: %s\n", path.c_str(), problem.c_str());
  if (!problems.empty()) return 1;
  std::printf("%s: ok\n", path.c_str());
  return 0;
}

// cerulean export|import|reset [--location DIR] [--account A] [--table T] [--file F]
int RunTool(const std::string& command, const server::CliOptions& cli,
            const std::vector<std::string>& args) {
  if (command == "check") return RunCheck(cli);
  if (command == "snapshot") {
    if (std::string err = CheckSnapshotArgs(args); !err.empty()) {
      std::fprintf(stderr, "cerulean snapshot: %s\n", err.c_str());
      return 2;
    }
  }
  auto store = OpenStore(cli);
  if (!store.ok()) {
    std::fprintf(stderr, "cerulean: cannot open storage: %s\n", store.status().ToString().c_str());
    return 1;
  }
  const std::string account = cli.account.empty() ? std::string(server::kDevAccount) : cli.account;
  if (command == "snapshot") return RunSnapshotTool(**store, account, args);
  size_t count = 0;
  storage::Status s;
  if (command == "export") {
    std::ofstream file;
    if (!cli.file.empty()) file.open(cli.file);
    std::ostream& out = cli.file.empty() ? std::cout : file;
    s = server::ExportTables(**store, account, cli.tables, out, &count);
    if (s.ok()) std::fprintf(stderr, "exported %zu entities\n", count);
  } else if (command == "import") {
    std::ifstream file;
    if (!cli.file.empty()) file.open(cli.file);
    if (!cli.file.empty() && !file) {
      std::fprintf(stderr, "cerulean: cannot read %s\n", cli.file.c_str());
      return 1;
    }
    std::istream& in = cli.file.empty() ? std::cin : file;
    s = server::ImportJsonLines(**store, account, in, &count);
    if (s.ok()) std::fprintf(stderr, "imported %zu entities\n", count);
  } else {
    s = (*store)->ResetAccount(account);
    if (s.ok()) std::fprintf(stderr, "reset account %s\n", account.c_str());
  }
  if (!s.ok()) {
    std::fprintf(stderr, "cerulean %s: %s\n", command.c_str(), s.ToString().c_str());
    return 1;
  }
  return 0;
}

// What a running server owns. Serve's steps build the members in this
// order (the TLS context, which `http` holds, first), and they are
// destroyed in reverse: the blocking pool, then `http`, which destroys its
// listener and io_contexts (with the sessions on them, which give their
// bytes back to the budgets), before the budgets and caches, and those
// before the store. The context holds pointers to the members after it;
// `http` holds the context.
struct Server {
  server::ServerContext ctx;
  std::unique_ptr<storage::Store> store;
  server::Metrics metrics;
  server::Logger logger;
  server::PagePrefetcher prefetcher;
  server::FaultInjector faults;
  std::optional<server::DocumentCache> documents;
  std::optional<server::BodyBudget> body_budget;
  std::optional<server::ResponseBudget> response_budget;
  // The I/O threads, TLS, the listener and its sessions, and the shutdown.
  server::HttpServer http;
  std::optional<server::BlockingPool> blocking_pool;
};

// The TLS context of --cert/--key/--pwd, if given; OAuth needs it. 0, or the
// exit status.
int OpenTls(const server::CliOptions& cli, Server& s) {
  if (std::string err = s.http.LoadTls(cli.cert, cli.key, cli.pwd); !err.empty()) {
    std::fprintf(stderr, "cerulean: %s\n", err.c_str());
    return 1;
  }
  if (!cli.oauth.empty() && !s.http.https()) {
    // Azurite documents this rule ("OAuth requires HTTPS endpoint"); starting
    // anyway would accept no bearer token at all.
    std::fprintf(
        stderr,
        "cerulean: OAuth requires HTTPS endpoint. Make sure HTTPS is enabled by providing --cert "
        "parameter along with --oauth parameter.\n");
    return 1;
  }
  return 0;
}

// The accounts, the store (seeded from --seed) and the request options of
// the context. 0, or the exit status.
int OpenAccountsAndStore(const server::CliOptions& cli, Server& s) {
  server::ServerContext& ctx = s.ctx;
  ctx.options.https = s.http.https();
  ctx.options.oauth = !cli.oauth.empty();
  if (!ctx.accounts.AddDefault()) return 1;
  if (const char* spec = std::getenv("AZURITE_ACCOUNTS"); spec != nullptr && *spec != '\0') {
    std::string error;
    if (!ctx.accounts.AddFromSpec(spec, &error)) {
      std::fprintf(stderr, "cerulean: AZURITE_ACCOUNTS: %s\n", error.c_str());
      return 2;
    }
  }
  auto store = OpenStore(cli);
  if (!store.ok()) {
    std::fprintf(stderr, "cerulean: cannot open storage: %s\n", store.status().ToString().c_str());
    return 1;
  }
  s.store = std::move(store).value();
  ctx.store = s.store.get();
  if (!cli.seed_dir.empty() && !Seed(*ctx.store, cli.seed_dir)) return 1;
  ctx.options.loose = cli.loose;
  ctx.options.skip_api_version_check = cli.skip_api_version_check;
  ctx.options.force_path_style = cli.disable_product_style_url;
  ctx.options.explorer = !cli.disable_explorer;
  ctx.options.public_metrics = cli.public_metrics;
  return 0;
}

// What the operations run with besides the store: metrics, logs, the page
// prefetcher, fault rules, the document cache and the memory budgets. 0, or
// the exit status.
int BuildServices(const server::CliOptions& cli, Server& s) {
  server::ServerContext& ctx = s.ctx;
  if (!s.logger.Open(!cli.silent, cli.json_log, cli.debug_file)) {
    std::fprintf(stderr, "cerulean: cannot open debug log %s\n", cli.debug_file.c_str());
    return 1;
  }
  ctx.metrics = &s.metrics;
  ctx.logger = &s.logger;
  ctx.prefetcher = &s.prefetcher;
  ctx.faults = &s.faults;
  if (!cli.faults_file.empty() && !LoadFaults(cli.faults_file, ctx.accounts, &s.faults)) return 1;
  // The server's bounded structures in /_metrics (server/README.md, "Memory bounds").
  s.metrics.TrackMemory("fault_rules", [&faults = s.faults] {
    const server::FaultInjector::Use use = faults.Memory();
    return server::MemoryUse{use.bytes, use.rules};
  });
  s.metrics.TrackMemory("page_prefetch", [&prefetcher = s.prefetcher] {
    const auto [bytes, pages] = prefetcher.Memory();
    return server::MemoryUse{bytes, pages};
  });
  // CORS rules and stored access policies, for routing and authentication
  // on the I/O threads (document_cache.h). Other nodes may write a
  // PostgreSQL database too: their changes are seen within kDocumentMaxAge.
  s.documents.emplace(
      ctx.accounts,
      server::DocumentCache::Options{.max_age = cli.database.empty() ? std::chrono::milliseconds(0)
                                                                     : kDocumentMaxAge});
  ctx.documents = &*s.documents;
  // Before `http`: sessions, which give their bytes back when destroyed, go
  // with its io_contexts.
  s.body_budget.emplace(kBodyMemory);
  ctx.body_budget = &*s.body_budget;
  s.response_budget.emplace(kResponseMemory);
  ctx.response_budget = &*s.response_budget;
  return 0;
}

// The blocking pool, and the HTTP server bound (not accepting yet). 0, or
// the exit status.
int StartListening(const server::CliOptions& cli, Server& s) {
  // Requests that can wait on storage run here: up to kBlockingThreads at
  // once, each on a reader connection or waiting for one.
  s.blocking_pool.emplace(kInitialBlockingThreads, kBlockingThreads);
  s.ctx.blocking_pool = &*s.blocking_pool;
  const server::ConnectionLimits limits{
      .max_connections = cli.max_connections,
      .keep_alive_timeout = std::chrono::seconds(cli.keep_alive_timeout_s),
      .request_timeout = std::chrono::seconds(cli.request_timeout_s)};
  if (std::string err = s.http.Open(s.ctx, cli.host, cli.port, limits); !err.empty()) {
    std::fprintf(stderr, "cerulean: %s\n", err.c_str());
    return 1;
  }
  return 0;
}

// The line clients and scripts wait for: where the server listens (and its
// explorer).
void PrintListening(const server::CliOptions& cli, const Server& s) {
  std::string host = cli.host;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  std::printf("Cerulean Table service is successfully listening at %s://%s:%u\n",
              s.http.https() ? "https" : "http", host.c_str(), s.http.port());
  if (s.ctx.options.explorer) {
    std::printf("Cerulean Table service explorer is available at %s\n",
                server::ExplorerUrl(s.http.https(), cli.host, s.http.port()).c_str());
  }
  std::fflush(stdout);
}

// Serves until the server is shut down (SIGINT/SIGTERM, or the end of stdin
// with --exitWithParent), then drained: accepting stops, page prefetch
// stops, in-flight requests finish (for up to a few seconds), and the I/O
// threads stop (HttpServer::Run).
void RunUntilDrained(const server::CliOptions& cli, Server& s) {
  // Destroyed before `s.http`, waiting for a call in progress, so that no
  // call finds it gone; a call after Run has returned does nothing.
  std::optional<server::ParentWatch> parent_watch;
  if (cli.exit_with_parent) parent_watch.emplace([&http = s.http] { http.RequestShutdown(); });
  s.http.Run([&] { PrintListening(cli, s); }, [&prefetcher = s.prefetcher] { prefetcher.Stop(); });
}

int Serve(const server::CliOptions& cli) {
  Server s;
  // HTTPS and OAuth first: a bad certificate should not touch the store.
  if (int status = OpenTls(cli, s)) return status;
  if (int status = OpenAccountsAndStore(cli, s)) return status;
  if (int status = BuildServices(cli, s)) return status;
  if (int status = StartListening(cli, s)) return status;
  RunUntilDrained(cli, s);
  s.blocking_pool->Join();
  // Writes still committing hand their completions to the (stopped)
  // io_contexts: let them finish while those still exist. The store
  // checkpoints when destroyed.
  s.ctx.store->Flush();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  server::TuneAllocator();
  server::CliOptions cli;
  if (auto err = server::ParseCli(argc, argv, &cli)) {
    std::fprintf(stderr, "cerulean: %s\n\n%s", err->c_str(), cli.help_text.c_str());
    return 2;
  }
  if (cli.help) {
    std::printf("%s", cli.help_text.c_str());
    return 0;
  }
  if (cli.version) {
    std::printf("cerulean %s\n", CERULEAN_VERSION);
    return 0;
  }
  if (cli.command == "health") {
    std::string err = server::ProbeHealth(cli.host, cli.port, std::chrono::seconds(3));
    if (err.empty()) return 0;
    std::fprintf(stderr, "cerulean health: %s:%u: %s\n", cli.host.c_str(), cli.port, err.c_str());
    return 1;
  }
  if (!cli.command.empty()) return RunTool(cli.command, cli, cli.command_args);
  return Serve(cli);
}
