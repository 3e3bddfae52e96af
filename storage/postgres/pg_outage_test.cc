// PostgresStore when the database stops answering: every call ends within a
// bounded time (kBusy), Healthy() turns false and true again without ever
// waiting, a store opened without its database serves once it comes, and a
// multi-host URL moves to the host that answers. The database "freezes"
// behind a TCP proxy that stops reading and forwarding while the kernel
// still accepts connections and data, as with a SIGSTOPped server or a
// stopped VM. Needs the test database (CERULEAN_TEST_DATABASE).
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "storage/postgres/pg_test_util.h"
#include "storage/postgres/postgres_store.h"
#include "storage/test_util.h"

namespace cerulean::storage {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using test::Insert;

// A TCP proxy on 127.0.0.1 in front of 127.0.0.1:`upstream_port`. While
// frozen it accepts nothing and forwards nothing (the listen backlog and the
// socket buffers still take what clients send).
class FreezableProxy {
 public:
  explicit FreezableProxy(int upstream_port) : upstream_port_(upstream_port) {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    REQUIRE(listen(listener_, 64) == 0);
    socklen_t len = sizeof(addr);
    REQUIRE(getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port_ = ntohs(addr.sin_port);
    REQUIRE(pipe(wake_) == 0);
    thread_ = std::thread([this] { Run(); });
  }
  ~FreezableProxy() {
    stop_ = true;
    Wake();
    thread_.join();
    for (const auto& [a, b] : pairs_) {
      close(a);
      close(b);
    }
    close(listener_);
    close(wake_[0]);
    close(wake_[1]);
  }
  int port() const { return port_; }
  void Freeze() {
    frozen_ = true;
    Wake();
  }
  void Thaw() {
    frozen_ = false;
    Wake();
  }

 private:
  void Wake() { static_cast<void>(write(wake_[1], "x", 1)); }
  void Run() {
    char buf[65536];
    while (!stop_) {
      std::vector<pollfd> fds{{wake_[0], POLLIN, 0}};
      if (!frozen_) {
        fds.push_back({listener_, POLLIN, 0});
        for (const auto& [a, b] : pairs_) {
          fds.push_back({a, POLLIN, 0});
          fds.push_back({b, POLLIN, 0});
        }
      }
      if (poll(fds.data(), fds.size(), 1000) <= 0) continue;
      if (fds[0].revents != 0) static_cast<void>(read(wake_[0], buf, sizeof(buf)));
      if (frozen_) continue;
      if (fds[1].revents != 0) Accept();
      for (size_t i = 2; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        const size_t pair = (i - 2) / 2;
        if (pair >= pairs_.size()) break;
        const int from = fds[i].fd;
        const int to = from == pairs_[pair].first ? pairs_[pair].second : pairs_[pair].first;
        const ssize_t n = read(from, buf, sizeof(buf));
        bool ok = n > 0;
        for (ssize_t sent = 0; ok && sent < n;) {
          const ssize_t w = write(to, buf + sent, static_cast<size_t>(n - sent));
          ok = w > 0;
          sent += ok ? w : 0;
        }
        if (!ok) {
          close(pairs_[pair].first);
          close(pairs_[pair].second);
          pairs_.erase(pairs_.begin() + static_cast<ptrdiff_t>(pair));
          break;  // the poll set is stale
        }
      }
    }
  }
  void Accept() {
    const int client = accept(listener_, nullptr, nullptr);
    if (client < 0) return;
    const int up = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(upstream_port_));
    if (connect(up, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(client);
      close(up);
      return;
    }
    pairs_.emplace_back(client, up);
  }

  const int upstream_port_;
  int listener_ = -1, port_ = 0;
  int wake_[2] = {-1, -1};
  std::atomic<bool> frozen_{false}, stop_{false};
  std::vector<std::pair<int, int>> pairs_;  // the proxy thread's
  std::thread thread_;
};

// The test database's URL split around its host:port ("scheme://user@" and
// "/db?..."), for URLs naming proxies instead. The suite's URL has the form
// postgresql://USER@127.0.0.1:PORT/DB.
struct UrlParts {
  std::string head, tail;
  int port = 0;
};
UrlParts SplitTestUrl(const std::string& url) {
  UrlParts parts;
  const size_t at = url.find('@');
  const size_t slash = url.find('/', at);
  const size_t colon = url.rfind(':', slash);
  REQUIRE(at != std::string::npos);
  REQUIRE(slash != std::string::npos);
  REQUIRE(colon > at);
  parts.head = url.substr(0, at + 1);
  parts.tail = url.substr(slash);
  parts.port = std::stoi(url.substr(colon + 1, slash - colon - 1));
  return parts;
}

// The lines a store logged, for assertions.
struct LogLines {
  std::mutex mu;
  std::vector<std::string> lines;
  std::function<void(const std::string&)> Sink() {
    return [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mu);
      lines.push_back(line);
    };
  }
  size_t Count(const std::string& part) {
    std::lock_guard<std::mutex> lock(mu);
    size_t n = 0;
    for (const auto& l : lines) n += l.find(part) != std::string::npos;
    return n;
  }
  std::string All() {
    std::lock_guard<std::mutex> lock(mu);
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
  }
};

// Options that make outages short to test (the bounds asserted below are
// several times these, so a loaded machine does not fail them).
PostgresStoreOptions FastOptions(const std::string& url, LogLines* log) {
  PostgresStoreOptions options;
  options.url = url;
  options.schema = test::NewPgTestSchema();
  options.pool_size = 4;
  options.round_trip_timeout = milliseconds(2000);
  options.probe_interval = milliseconds(100);
  options.probe_timeout = milliseconds(500);
  options.log = log->Sink();
  return options;
}

test::PgTestStore OpenWith(const PostgresStoreOptions& options) {
  auto store = PostgresStore::Open(options);
  REQUIRE_MESSAGE(store.ok(), store.status().ToString());
  return test::PgTestStore(store->release(),
                           test::PgTestStoreDeleter{test::PgTestUrl(), options.schema, true});
}

// Waits until pred() holds, up to `limit`; true iff it did.
bool WaitFor(const std::function<bool()>& pred, milliseconds limit) {
  const auto until = Clock::now() + limit;
  while (!pred()) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return true;
}

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The bound on how long anything may take while the database is frozen: the
// time to notice (probe interval + probe timeout) or a round trip's
// timeout, with room for a loaded machine. Never a hang.
constexpr double kBoundSeconds = 10;

TEST_CASE("postgres: a frozen database: calls end with kBusy, Healthy() turns false, then back") {
  if (test::PgTestUrl() == nullptr) return;
  const UrlParts url = SplitTestUrl(test::PgTestUrl());
  FreezableProxy proxy(url.port);
  LogLines log;
  const std::string via = url.head + "127.0.0.1:" + std::to_string(proxy.port()) + url.tail;
  test::PgTestStore store = OpenWith(FastOptions(via, &log));
  REQUIRE(store->Healthy());
  REQUIRE(store->CreateTable("acct", "t").ok());
  REQUIRE(store->Apply("acct", "t", {Insert("p", "r")}, nullptr, nullptr).ok());
  CHECK(log.Count("database at 127.0.0.1:" + std::to_string(proxy.port()) + " serves") == 1);

  proxy.Freeze();
  // Calls in flight when it froze, and calls after: each ends with kBusy.
  auto start = Clock::now();
  std::vector<std::future<Status>> calls;
  for (int i = 0; i < 6; ++i) {
    calls.push_back(std::async(std::launch::async, [&, i] {
      if (i % 2 == 0) return store->GetEntity("acct", "t", "p", "r").status();
      return store->Apply("acct", "t", {Insert("p", "frozen" + std::to_string(i))}, nullptr,
                          nullptr);
    }));
  }
  for (auto& call : calls) {
    REQUIRE(call.wait_for(std::chrono::duration<double>(kBoundSeconds)) ==
            std::future_status::ready);
    CHECK(call.get().code() == StatusCode::kBusy);
  }
  INFO("calls in flight ended after " << SecondsSince(start) << " s");
  REQUIRE(WaitFor([&] { return !store->Healthy(); }, milliseconds(10000)));
  // Once the verdict is in, a call does not even try.
  start = Clock::now();
  CHECK(store->GetEntity("acct", "t", "p", "r").status().code() == StatusCode::kBusy);
  CHECK(store->ScanTables("acct", "", [](const std::string&) { return true; }).code() ==
        StatusCode::kBusy);
  CHECK(SecondsSince(start) < 1);
  // Healthy() answers at once however long the outage lasts.
  for (int i = 0; i < 10; ++i) {
    start = Clock::now();
    CHECK_FALSE(store->Healthy());
    CHECK(SecondsSince(start) < 0.1);
    std::this_thread::sleep_for(milliseconds(50));
  }

  proxy.Thaw();
  REQUIRE(WaitFor([&] { return store->Healthy(); }, milliseconds(10000)));
  CHECK(store->GetEntity("acct", "t", "p", "r").ok());
  REQUIRE(store->Apply("acct", "t", {Insert("p", "after")}, nullptr, nullptr).ok());
  // One line each way, however many calls failed.
  CHECK_MESSAGE(log.Count("database unreachable") == 1, log.All());
  CHECK_MESSAGE(
      log.Count("database reachable again at 127.0.0.1:" + std::to_string(proxy.port())) == 1,
      log.All());
}

TEST_CASE("postgres: a store opened while its database does not answer serves once it does") {
  if (test::PgTestUrl() == nullptr) return;
  const UrlParts url = SplitTestUrl(test::PgTestUrl());
  FreezableProxy proxy(url.port);
  proxy.Freeze();
  LogLines log;
  const std::string via = url.head + "127.0.0.1:" + std::to_string(proxy.port()) + url.tail;
  PostgresStoreOptions options = FastOptions(via, &log);
  const auto start = Clock::now();
  test::PgTestStore store = OpenWith(options);
  CHECK(SecondsSince(start) < kBoundSeconds);
  CHECK_FALSE(store->Healthy());
  CHECK(store->CreateTable("acct", "t").code() == StatusCode::kBusy);
  CHECK_MESSAGE(log.Count("database unreachable") == 1, log.All());

  proxy.Thaw();
  // The prober creates the schema, then the store serves.
  REQUIRE(WaitFor([&] { return store->Healthy(); }, milliseconds(15000)));
  REQUIRE(store->CreateTable("acct", "t").ok());
  REQUIRE(store->Apply("acct", "t", {Insert("p", "r")}, nullptr, nullptr).ok());
  CHECK(store->GetEntity("acct", "t", "p", "r").ok());
  CHECK_MESSAGE(log.Count("database reachable at 127.0.0.1:" + std::to_string(proxy.port())) == 1,
                log.All());

  // A database that refuses connections outright: the same, at once.
  PostgresStoreOptions refused;
  refused.url = "postgresql://nobody@127.0.0.1:1/none";
  auto down = PostgresStore::Open(refused);
  REQUIRE(down.ok());
  CHECK_FALSE((*down)->Healthy());
  CHECK((*down)->GetTable("acct", "t").status().code() == StatusCode::kBusy);
  // A URL libpq cannot read is an error, not an outage.
  PostgresStoreOptions bad;
  bad.url = "postgresql://nobody@127.0.0.1:1/none?no_such_setting=1";
  CHECK(PostgresStore::Open(bad).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("postgres: a multi-host URL: a frozen host is left for the next, and the log says so") {
  if (test::PgTestUrl() == nullptr) return;
  const UrlParts url = SplitTestUrl(test::PgTestUrl());
  // Two "hosts" in front of the one test database.
  FreezableProxy first(url.port), second(url.port);
  LogLines log;
  const std::string first_host = "127.0.0.1:" + std::to_string(first.port());
  const std::string second_host = "127.0.0.1:" + std::to_string(second.port());
  const std::string via = url.head + first_host + "," + second_host + url.tail +
                          (url.tail.find('?') == std::string::npos ? "?" : "&") +
                          "target_session_attrs=read-write";
  test::PgTestStore store = OpenWith(FastOptions(via, &log));
  REQUIRE(store->CreateTable("acct", "t").ok());
  CHECK_MESSAGE(log.Count("database at " + first_host + " serves") == 1, log.All());

  first.Freeze();
  const auto start = Clock::now();
  // Writers keep trying, as clients retrying 503s do; every call ends.
  std::atomic<int> ok{0}, busy{0}, other{0};
  std::mutex acked_mu;
  std::vector<std::pair<std::string, std::string>> acked;
  std::vector<std::thread> writers;
  std::atomic<bool> done{false};
  for (int w = 0; w < 3; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; !done; ++i) {
        const auto t = Clock::now();
        const std::string pk = "w" + std::to_string(w), rk = std::to_string(i);
        Status s = store->Apply("acct", "t", {Insert(pk, rk)}, nullptr, nullptr);
        CHECK(SecondsSince(t) < kBoundSeconds);
        (s.ok() ? ok : s.code() == StatusCode::kBusy ? busy : other)++;
        if (s.ok()) {
          std::lock_guard<std::mutex> lock(acked_mu);
          acked.emplace_back(pk, rk);
        } else {
          std::this_thread::sleep_for(milliseconds(50));
        }
      }
    });
  }
  // The prober finds the second host: after a failed probe, or at once when
  // its own connection was opened only now (then the first host's
  // connections are dropped all the same).
  auto moved_lines = [&] {
    return log.Count("database reachable again at " + second_host) +
           log.Count("database now served by " + second_host);
  };
  const bool moved = WaitFor([&] { return moved_lines() == 1; }, milliseconds(20000));
  const int ok_at_failover = ok;
  const bool served =
      moved && WaitFor([&] { return ok >= ok_at_failover + 20; }, milliseconds(10000));
  done = true;
  for (auto& t : writers) t.join();
  INFO("served by the second host after " << SecondsSince(start) << " s");
  CHECK_MESSAGE(moved, log.All());
  CHECK(served);
  CHECK(other == 0);
  CHECK_MESSAGE(log.Count("database unreachable") <= 1, log.All());
  CHECK_MESSAGE(moved_lines() == 1, log.All());
  for (const auto& [pk, rk] : acked) CHECK(store->GetEntity("acct", "t", pk, rk).ok());
}

TEST_CASE("postgres: a statement that gets no answer in time ends with kBusy; the store stays up") {
  LogLines log;
  if (test::PgTestUrl() == nullptr) return;
  PostgresStoreOptions options = FastOptions(test::PgTestUrl(), &log);
  test::PgTestStore store = OpenWith(options);
  REQUIRE(store->CreateTable("acct", "t").ok());
  ApplyResult written;
  REQUIRE(store->Apply("acct", "t", {Insert("p", "r")}, &written, nullptr).ok());
  // Another session holds the row's lock (as a node frozen mid-transaction
  // would): the database answers everyone else, this write waits.
  std::unique_ptr<PgConnection> other;
  REQUIRE(PgConnection::Open(test::PgTestUrl(), options.schema, &other).ok());
  REQUIRE(other->Command("BEGIN").ok());
  REQUIRE(other->Command("SELECT * FROM cerulean_entities FOR UPDATE").ok());
  const auto start = Clock::now();
  WriteOp update = test::Op(WriteKind::kUpdate, "p", "r", {}, written.timestamps[0]);
  CHECK(store->Apply("acct", "t", {update}, nullptr, nullptr).code() == StatusCode::kBusy);
  CHECK(SecondsSince(start) < kBoundSeconds);
  CHECK(store->Healthy());
  CHECK(store->GetEntity("acct", "t", "p", "r").ok());
  REQUIRE(other->Command("ROLLBACK").ok());
  CHECK(store->Apply("acct", "t", {update}, nullptr, nullptr).ok());
  CHECK_MESSAGE(log.Count("unreachable") == 0, log.All());
}

TEST_CASE("postgres: a write whose COMMIT gets no answer in time is cancelled: kBusy, not done") {
  LogLines log;
  if (test::PgTestUrl() == nullptr) return;
  PostgresStoreOptions options = FastOptions(test::PgTestUrl(), &log);
  test::PgTestStore store = OpenWith(options);
  REQUIRE(store->CreateTable("acct", "t").ok());
  ApplyResult written;
  REQUIRE(store->Apply("acct", "t", {Insert("p", "r")}, &written, nullptr).ok());
  // SHARE on the entities table lets a write read and lock its rows but
  // holds its INSERT or UPDATE: the round trip holding the COMMIT waits.
  std::unique_ptr<PgConnection> other;
  REQUIRE(PgConnection::Open(test::PgTestUrl(), options.schema, &other).ok());
  REQUIRE(other->Command("BEGIN").ok());
  REQUIRE(other->Command("LOCK TABLE cerulean_entities IN SHARE MODE").ok());
  const WriteOp update =
      test::Op(WriteKind::kUpdate, "p", "r", {{"n", Value::Int32(1)}}, written.timestamps[0]);
  CHECK(store->Apply("acct", "t", {Insert("p", "new")}, nullptr, nullptr).code() ==
        StatusCode::kBusy);
  CHECK(store->Apply("acct", "t", {update}, nullptr, nullptr).code() == StatusCode::kBusy);
  REQUIRE(other->Command("COMMIT").ok());
  // Cancelled before the lock came free: neither took effect, and a retry
  // finds things as they were.
  CHECK(store->GetEntity("acct", "t", "p", "new").status().code() == StatusCode::kNotFound);
  auto row = store->GetEntity("acct", "t", "p", "r");
  REQUIRE(row.ok());
  CHECK(row->timestamp == written.timestamps[0]);
  CHECK(store->Apply("acct", "t", {update}, nullptr, nullptr).ok());
  const PostgresStoreStats stats = store->GetStats();
  CHECK(stats.lost_commits_aborted == 2);
  CHECK(stats.lost_commits_committed == 0);
  CHECK(stats.lost_commits_unknown == 0);
}

TEST_CASE("postgres: the URL's own libpq settings win over the store's defaults") {
  if (test::PgTestUrl() == nullptr) return;
  const std::string url = test::PgTestUrl();
  const std::string name = "cerulean_url_" + std::to_string(getpid());
  std::unique_ptr<PgConnection> own, plain;
  REQUIRE(PgConnection::Open(
              url + (url.find('?') == std::string::npos ? "?" : "&") + "application_name=" + name,
              "", &own)
              .ok());
  REQUIRE(PgConnection::Open(url, "", &plain).ok());
  PgResult r;
  REQUIRE(plain
              ->Exec("SELECT current_setting('application_name'), (SELECT count(*) FROM "
                     "pg_stat_activity WHERE application_name = $1)",
                     PgParams().Text(name), &r)
              .ok());
  // Without a setting of its own, the store's (as for the keep-alives and
  // timeouts); with one, the URL's.
  CHECK(r.View(0, 0) == "cerulean");
  CHECK(r.Int64(0, 1) == 1);
}

TEST_CASE("postgres: a pool whose connections are all in use answers kBusy after its deadline") {
  if (test::PgTestUrl() == nullptr) return;
  PgPoolOptions options;
  REQUIRE(PgConnInfo::Parse(test::PgTestUrl(), &options.info).ok());
  options.size = 1;
  options.acquire_timeout = milliseconds(300);
  PgPool pool(std::move(options));
  std::unique_ptr<PgConnection> held;
  REQUIRE(pool.Acquire(&held).ok());
  const auto start = Clock::now();
  std::unique_ptr<PgConnection> more;
  CHECK(pool.Acquire(&more).code() == StatusCode::kBusy);
  CHECK(SecondsSince(start) < kBoundSeconds);
  CHECK(pool.waits() == 1);
  pool.Release(std::move(held));
  CHECK(pool.Acquire(&more).ok());
  pool.Release(std::move(more));
}

}  // namespace
}  // namespace cerulean::storage
