// Tests of where work runs. The rule (server/README.md, "Threads"): no
// store method is called on an I/O thread, except those that never wait —
// Store::ApplyAsync (returns at once), Store::Healthy (a prober's last
// verdict) — and, on a store whose reads do not wait on the network
// (SQLite), the point reader: GetEntityRow and ScanRows with the
// point_reader hint (one row, or a short page of key ranges). Every route is
// driven through the production entry path (http/test_server.h) on
// both kinds of store, with cold and warm document caches, and each store
// call is recorded with whether it ran on the I/O thread.
#include "server/http/scheduler.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "server/devtools/faults.h"
#include "server/formats/url.h"
#include "server/http/test_server.h"
#include "server/protocol/routes.h"
#include "server/runtime/blocking_pool.h"
#include "storage/store_wrapper.h"

namespace cerulean::server {
namespace {

using storage::Status;

// Forwards to a SqliteStore and records each call made on the I/O thread.
// With `network`, it says its reads wait on the network (as PostgreSQL's do)
// and keeps no write epoch. Every call but Flush and the ones that only
// describe the store is recorded.
class RecordingStore final : public storage::StoreWrapper {
 public:
  explicit RecordingStore(bool network) : RecordingStore(network, testing::OpenMemoryStore()) {}

  // Tells whether the calling thread is the I/O thread.
  void Watch(std::function<bool()> on_io) { on_io_ = std::move(on_io); }
  // The calls made on the I/O thread since the last Take.
  std::vector<std::string> Take() {
    std::lock_guard lock(mu_);
    return std::exchange(io_calls_, {});
  }

  bool ReadsWaitOnNetwork() const override { return network_; }
  std::optional<uint64_t> WriteEpoch() const override {
    return network_ ? std::nullopt : StoreWrapper::WriteEpoch();
  }

  Status CreateTable(const std::string& a, const std::string& t) override {
    Note("CreateTable");
    return StoreWrapper::CreateTable(a, t);
  }
  Status DeleteTable(const std::string& a, const std::string& t) override {
    Note("DeleteTable");
    return StoreWrapper::DeleteTable(a, t);
  }
  storage::Result<std::string> GetTable(const std::string& a, const std::string& t) override {
    Note("GetTable");
    return StoreWrapper::GetTable(a, t);
  }
  Status ScanTables(const std::string& a, const std::string& s,
                    const std::function<bool(const std::string&)>& v) override {
    Note("ScanTables");
    return StoreWrapper::ScanTables(a, s, v);
  }
  storage::Result<std::string> GetTableAcl(const std::string& a, const std::string& t) override {
    Note("GetTableAcl");
    return StoreWrapper::GetTableAcl(a, t);
  }
  Status SetTableAcl(const std::string& a, const std::string& t, const std::string& x) override {
    Note("SetTableAcl");
    return StoreWrapper::SetTableAcl(a, t, x);
  }
  storage::Result<std::string> GetServiceProperties(const std::string& a) override {
    Note("GetServiceProperties");
    return StoreWrapper::GetServiceProperties(a);
  }
  Status SetServiceProperties(const std::string& a, const std::string& p) override {
    Note("SetServiceProperties");
    return StoreWrapper::SetServiceProperties(a, p);
  }
  Status GetEntityRow(const std::string& a, const std::string& t, const std::string& pk,
                      const std::string& rk, const storage::RowVisitor& v) override {
    Note("GetEntityRow");
    return StoreWrapper::GetEntityRow(a, t, pk, rk, v);
  }
  Status ScanRows(const std::string& a, const std::string& t, const storage::ScanRequest& r,
                  const storage::RowVisitor& v, std::optional<storage::EntityKey>* next) override {
    Note(r.point_reader ? "ScanRows(point reader)" : "ScanRows");
    return StoreWrapper::ScanRows(a, t, r, v, next);
  }
  Status Apply(const std::string& a, const std::string& t, const std::vector<storage::WriteOp>& o,
               storage::ApplyResult* r, storage::ApplyError* e) override {
    Note("Apply");
    return StoreWrapper::Apply(a, t, o, r, e);
  }
  void ApplyAsync(std::string a, std::string t, std::vector<storage::WriteOp> o,
                  storage::ApplyCallback done) override {
    Note("ApplyAsync");
    StoreWrapper::ApplyAsync(std::move(a), std::move(t), std::move(o), std::move(done));
  }
  Status ResetAccount(const std::string& a) override {
    Note("ResetAccount");
    return StoreWrapper::ResetAccount(a);
  }
  Status SaveSnapshot(const std::string& a, const std::string& n,
                      storage::SnapshotInfo* i) override {
    Note("SaveSnapshot");
    return StoreWrapper::SaveSnapshot(a, n, i);
  }
  Status RestoreSnapshot(const std::string& a, const std::string& n,
                         storage::RestoreStats* s) override {
    Note("RestoreSnapshot");
    return StoreWrapper::RestoreSnapshot(a, n, s);
  }
  Status ListSnapshots(const std::string& a, std::vector<storage::SnapshotInfo>* o) override {
    Note("ListSnapshots");
    return StoreWrapper::ListSnapshots(a, o);
  }
  Status DeleteSnapshot(const std::string& a, const std::string& n) override {
    Note("DeleteSnapshot");
    return StoreWrapper::DeleteSnapshot(a, n);
  }
  bool Healthy() override {
    Note("Healthy");
    return StoreWrapper::Healthy();
  }
  Status GetUsage(std::vector<storage::AccountUsage>* a, uint64_t* b) override {
    Note("GetUsage");
    return StoreWrapper::GetUsage(a, b);
  }

 private:
  // `inner` is handed to the wrapper before it is kept here.
  RecordingStore(bool network, std::unique_ptr<storage::SqliteStore> inner)
      : StoreWrapper(inner.get()), inner_(std::move(inner)), network_(network) {}

  void Note(const char* call) {
    if (!on_io_ || !on_io_()) return;
    std::lock_guard lock(mu_);
    io_calls_.emplace_back(call);
  }

  std::unique_ptr<storage::SqliteStore> inner_;
  const bool network_;
  std::function<bool()> on_io_;
  std::mutex mu_;
  std::vector<std::string> io_calls_;  // guarded by mu_
};

// The store calls allowed on an I/O thread.
std::set<std::string> AllowedOnIoThread(bool network) {
  std::set<std::string> allowed = {"ApplyAsync", "Healthy"};
  if (!network) allowed.insert({"GetEntityRow", "ScanRows(point reader)"});
  return allowed;
}

// A service SAS for table `table` that takes everything from stored policy
// `si`, as a query string.
std::string PolicySas(const ServerContext& ctx, const std::string& table, const std::string& si) {
  const std::string sv = "2019-02-02";
  const std::string sts =
      "\n\n\n/table/devstoreaccount1/" + table + "\n" + si + "\n\n\n" + sv + "\n\n\n\n";
  const std::string sig = Sign(ctx.accounts.Find("devstoreaccount1")->keys[0], sts);
  std::string encoded;
  for (char c : sig) {
    if (c == '+') {
      encoded += "%2B";
    } else if (c == '/') {
      encoded += "%2F";
    } else if (c == '=') {
      encoded += "%3D";
    } else {
      encoded += c;
    }
  }
  return "sv=" + sv + "&tn=" + table + "&si=" + si + "&sig=" + encoded;
}

// A change set of one insert into `table`.
std::string BatchBody(const std::string& table, const std::string& rk) {
  return "--batch_b\r\nContent-Type: multipart/mixed; boundary=changeset_c\r\n\r\n"
         "--changeset_c\r\nContent-Type: application/http\r\n"
         "Content-Transfer-Encoding: binary\r\nContent-ID: 1\r\n\r\n"
         "POST http://127.0.0.1:10002/devstoreaccount1/" +
         table +
         " HTTP/1.1\r\nAccept: application/json;odata=minimalmetadata\r\n"
         "Content-Type: application/json\r\n\r\n"
         R"({"PartitionKey":"b","RowKey":")" +
         rk + "\"}\r\n--changeset_c--\r\n--batch_b--\r\n";
}

constexpr std::string_view kAclXml =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?><SignedIdentifiers><SignedIdentifier><Id>all</Id>"
    "<AccessPolicy><Start>2000-01-01T00:00:00Z</Start><Expiry>2099-01-01T00:00:00Z</Expiry>"
    "<Permission>raud</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>";
constexpr std::string_view kCorsXml =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceProperties><Cors><CorsRule>"
    "<AllowedOrigins>https://app.example</AllowedOrigins><AllowedMethods>GET,POST,PUT,DELETE,"
    "MERGE</AllowedMethods><AllowedHeaders>*</AllowedHeaders><ExposedHeaders>*</ExposedHeaders>"
    "<MaxAgeInSeconds>5</MaxAgeInSeconds></CorsRule></Cors></StorageServiceProperties>";

// One request of the table below: what it reaches and how it is sent.
struct Case {
  std::optional<Operation> op;  // none: /_health, /_metrics, the explorer
  std::string name;
  http::verb verb;
  std::string target;
  std::string body = {};
  testing::Headers headers = {};
  bool sign = true;
};

// A request for every route (and the reserved paths), in an order in which
// each succeeds; `n` makes keys and table names unique per round.
std::vector<Case> Cases(const ServerContext& ctx, int n) {
  const std::string t = "sched" + std::to_string(n);
  const std::string entity = "/devstoreaccount1/" + t + "(PartitionKey='p',RowKey='r')";
  const testing::Headers any = {{"If-Match", "*"}};
  const testing::Headers xml = {{"Content-Type", "application/xml"}};
  const testing::Headers origin = {{"Origin", "https://app.example"}};
  const std::string sas = PolicySas(ctx, t, "all");
  using O = Operation;
  return {
      {O::kCreateTable, "Create Table", http::verb::post, "/devstoreaccount1/Tables",
       R"({"TableName":")" + t + R"("})"},
      {O::kCreateTable, "Create Table (to delete)", http::verb::post, "/devstoreaccount1/Tables",
       R"({"TableName":"d)" + t + R"("})"},
      {O::kSetServiceProperties, "Set Service Properties", http::verb::put,
       "/devstoreaccount1/?restype=service&comp=properties", std::string(kCorsXml), xml},
      {O::kSetTableAcl, "Set Table ACL", http::verb::put, "/devstoreaccount1/" + t + "?comp=acl",
       std::string(kAclXml), xml},
      {O::kInsertEntity, "Insert Entity", http::verb::post, "/devstoreaccount1/" + t,
       R"({"PartitionKey":"p","RowKey":"r","V":1})", origin},
      {O::kGetEntity, "Get Entity", http::verb::get, entity, "", origin},
      {O::kGetEntity,
       "Get Entity (SAS with si)",
       http::verb::get,
       entity + "?" + sas,
       "",
       {},
       false},
      {O::kQueryEntities, "Query Entities (short page)", http::verb::get,
       "/devstoreaccount1/" + t + "()?$filter=PartitionKey%20eq%20'p'&$top=10", "", origin},
      {O::kQueryEntities, "Query Entities (filter)", http::verb::get,
       "/devstoreaccount1/" + t + "()?$filter=V%20eq%201", ""},
      {O::kQueryEntities,
       "Query Entities (SAS with si)",
       http::verb::get,
       "/devstoreaccount1/" + t + "()?" + sas,
       "",
       {},
       false},
      {O::kUpdateEntity, "Update Entity", http::verb::put, entity, R"({"V":2})", any},
      {O::kMergeEntity, "Merge Entity", http::verb::merge, entity, R"({"W":3})", any},
      {O::kInsertOrReplace, "Insert Or Replace Entity", http::verb::put,
       "/devstoreaccount1/" + t + "(PartitionKey='p',RowKey='s')", R"({"V":4})"},
      {O::kInsertOrMerge, "Insert Or Merge Entity", http::verb::merge,
       "/devstoreaccount1/" + t + "(PartitionKey='p',RowKey='s')", R"({"W":5})"},
      {O::kInsertEntity,
       "Insert Entity (SAS with si)",
       http::verb::post,
       "/devstoreaccount1/" + t + "?" + sas,
       R"({"PartitionKey":"p","RowKey":"sas"})",
       {{"Content-Type", "application/json"}},
       false},
      {O::kBatch,
       "Batch",
       http::verb::post,
       "/devstoreaccount1/$batch",
       BatchBody(t, "b1"),
       {{"Content-Type", "multipart/mixed; boundary=batch_b"}}},
      {O::kDeleteEntity, "Delete Entity", http::verb::delete_, entity, "", any},
      {O::kQueryTables, "Query Tables", http::verb::get, "/devstoreaccount1/Tables", "", origin},
      {O::kGetTable, "Get Table", http::verb::get, "/devstoreaccount1/Tables('" + t + "')", ""},
      {O::kGetTableAcl, "Get Table ACL", http::verb::get, "/devstoreaccount1/" + t + "?comp=acl",
       ""},
      {O::kGetServiceProperties, "Get Service Properties", http::verb::get,
       "/devstoreaccount1/?restype=service&comp=properties", ""},
      {O::kGetServiceStats, "Get Service Stats", http::verb::get,
       "/devstoreaccount1-secondary/?restype=service&comp=stats", ""},
      {O::kPreflight,
       "Preflight",
       http::verb::options,
       "/devstoreaccount1/" + t,
       "",
       {{"Origin", "https://app.example"}, {"Access-Control-Request-Method", "GET"}},
       false},
      {O::kDeleteTable, "Delete Table", http::verb::delete_,
       "/devstoreaccount1/Tables('d" + t + "')", ""},
      {O::kFaults, "Faults", http::verb::get, "/_faults/devstoreaccount1", ""},
      {O::kSnapshots, "Snapshots", http::verb::get, "/_snapshots/devstoreaccount1", ""},
      {std::nullopt, "/_health", http::verb::get, "/_health", "", {}, false},
      {std::nullopt, "/_metrics", http::verb::get, "/_metrics", "", {}, false},
      {std::nullopt, "/_explorer", http::verb::get, "/_explorer/", "", {}, false},
      {O::kResetAccount, "Reset Account", http::verb::post, "/_reset/devstoreaccount1", ""},
  };
}

// Runs every case twice (cold caches, then warm) on a store of the kind
// given; returns the calls each case made on the I/O thread, by case.
std::map<std::string, std::set<std::string>> RunAll(bool network) {
  RecordingStore store(network);
  testing::TestServer server(&store);
  FaultInjector faults;
  server.ctx().faults = &faults;
  store.Watch([&server] { return server.OnIoThread(); });
  std::map<std::string, std::set<std::string>> io_calls;
  std::set<Operation> reached;
  for (int round = 0; round < 2; ++round) {
    for (const Case& c : Cases(server.ctx(), round)) {
      CAPTURE(c.name);
      CAPTURE(round);
      HttpResponse res = server.Send(c.verb, c.target, c.body, c.headers, c.sign);
      CHECK_MESSAGE(res.result_int() < 300, res.body());
      for (std::string& call : store.Take()) io_calls[c.name].insert(std::move(call));
      if (c.op) reached.insert(*c.op);
    }
  }
  // Every route of the table is exercised: a new one needs a case here.
  for (const Route& r : AllRoutes()) {
    CAPTURE(r.name);
    CHECK(reached.count(r.op) == 1);
  }
  return io_calls;
}

}  // namespace

TEST_CASE("no route calls a store that may wait on an I/O thread: SQLite") {
  const auto io_calls = RunAll(false);
  const auto allowed = AllowedOnIoThread(false);
  for (const auto& [route, calls] : io_calls) {
    const std::string& name = route;  // doctest's lambdas take no structured binding (clang 14)
    CAPTURE(name);
    for (const std::string& call : calls) {
      CAPTURE(call);
      CHECK(allowed.count(call) == 1);
    }
  }
  // The point reader serves point reads and short pages where they arrive,
  // and the health check answers there: the recording sees the I/O thread.
  CHECK(io_calls.at("Get Entity").count("GetEntityRow") == 1);
  CHECK(io_calls.at("Query Entities (short page)").count("ScanRows(point reader)") == 1);
  CHECK(io_calls.at("/_health").count("Healthy") == 1);
  CHECK(io_calls.at("Insert Entity").count("ApplyAsync") == 1);
}

TEST_CASE("no route calls a store that may wait on an I/O thread: a network store") {
  const auto io_calls = RunAll(true);
  const auto allowed = AllowedOnIoThread(true);
  for (const auto& [route, calls] : io_calls) {
    const std::string& name = route;  // doctest's lambdas take no structured binding (clang 14)
    CAPTURE(name);
    for (const std::string& call : calls) {
      CAPTURE(call);
      CHECK(allowed.count(call) == 1);
    }
  }
  // Reads and writes alike are prepared and run on the pool.
  CHECK(io_calls.count("Get Entity") == 0);
  CHECK(io_calls.count("Insert Entity") == 0);
  CHECK(io_calls.at("/_health").count("Healthy") == 1);
}

TEST_CASE("injected faults are carried out on the production path, before and after parsing") {
  testing::TestServer s;
  FaultInjector faults;
  s.ctx().faults = &faults;
  REQUIRE(s.Send(http::verb::post, "/devstoreaccount1/Tables", R"({"TableName":"faulty"})")
              .result_int() == 201);
  const std::string rules =
      R"({"rules":[{"operation":"QueryTables","status":503,"code":"ServerBusy","count":1},)"
      R"({"operation":"InsertEntity","delayMs":20,"drop":"after","count":1},)"
      R"({"operation":"GetEntity","drop":"before","count":1}]})";
  REQUIRE(s.Send(http::verb::put, "/_faults/devstoreaccount1", rules).result_int() == 200);
  // An error before the operation runs, once.
  HttpResponse busy = s.Send(http::verb::get, "/devstoreaccount1/Tables");
  CHECK(busy.result_int() == 503);
  CHECK(testing::HeaderOf(busy, "x-ms-error-code") == "ServerBusy");
  CHECK(s.Send(http::verb::get, "/devstoreaccount1/Tables").result_int() == 200);
  // A write meets its fault once parsed: delayed, applied, and its answer
  // dropped (the session resets the connection).
  const std::string entity = "/devstoreaccount1/faulty(PartitionKey='p',RowKey='r')";
  HttpResponse dropped =
      s.Send(http::verb::post, "/devstoreaccount1/faulty", R"({"PartitionKey":"p","RowKey":"r"})");
  CHECK(IsConnectionDrop(dropped));
  CHECK_FALSE(s.answered_inline());
  // The read after it is dropped before it runs; the next one sees the write.
  CHECK(IsConnectionDrop(s.Send(http::verb::get, entity)));
  CHECK(s.Send(http::verb::get, entity).result_int() == 200);
}

TEST_CASE("where a prepared request runs: the route's Runs, the store's hint, the pool") {
  BlockingPool pool(1, 1);
  ServerContext with_pool;
  with_pool.blocking_pool = &pool;
  const ServerContext without_pool;
  HttpRequest http;
  Request req(http);
  for (const Route& r : AllRoutes()) {
    CAPTURE(r.name);
    req.op = r.op;
    CHECK(AnswersNow(with_pool, req, false) == (r.runs == Runs::kInline));
    // Without a pool everything waits on this thread; with faults armed
    // nothing does (a delay must not block an I/O thread), nor when a
    // document it needs was missing from the caches.
    CHECK(AnswersNow(without_pool, req, false));
    CHECK_FALSE(AnswersNow(with_pool, req, true));
    CHECK_FALSE(AnswersNow(without_pool, req, true));
    req.missing_documents = kMissingCors;
    CHECK_FALSE(AnswersNow(with_pool, req, false));
    req.missing_documents = 0;
  }
  // A short entity write or batch body is parsed where it arrives; one well
  // past the inline-parse size, on the pool.
  for (const Route& r : AllRoutes()) {
    if (r.runs != Runs::kCommit) continue;
    CAPTURE(r.name);
    req.op = r.op;
    http.body() = "{}";
    CHECK(WhereRuns(with_pool, req) == Runs::kCommit);
    http.body() = std::string(2 * kInlineParseBytes, 'x');
    CHECK(WhereRuns(with_pool, req) == Runs::kPool);
    http.body().clear();
  }
  req.admin = true;
  req.raw_path = "/_health";
  CHECK(AnswersNow(with_pool, req, false));
  req.raw_path = "/_metrics";
  CHECK_FALSE(AnswersNow(with_pool, req, false));
  CHECK(AnswersNow(without_pool, req, false));
}

TEST_CASE("an entity write is answered alike on either side of the inline-parse size") {
  // A body longer than kInlineParseBytes is parsed, and committed, on the
  // pool instead of the I/O thread; what the client sees is the same.
  RecordingStore store(false);
  testing::TestServer server(&store);
  store.Watch([&server] { return server.OnIoThread(); });
  REQUIRE(server.Send(http::verb::post, "/devstoreaccount1/Tables", R"({"TableName":"sizes"})")
              .result_int() == 201);
  // String properties under Azure's 32 Ki-character limit, as many as make
  // the long body longer than the inline-parse size.
  const std::string value(30000, 'v');
  const size_t long_properties = kInlineParseBytes / value.size() + 1;
  struct Write {
    std::string row_key;
    size_t properties;
    bool parsed_inline;
  };
  for (const Write& w : {Write{"short", 1, true}, Write{"long", long_properties, false}}) {
    CAPTURE(w.row_key);
    std::string body = R"({"PartitionKey":"p","RowKey":")" + w.row_key + "\"";
    for (size_t i = 0; i < w.properties; ++i) {
      body += ",\"P" + std::to_string(i) + "\":\"" + value + "\"";
    }
    body += "}";
    REQUIRE((body.size() <= kInlineParseBytes) == w.parsed_inline);
    store.Take();
    HttpResponse inserted = server.Send(http::verb::post, "/devstoreaccount1/sizes", body);
    CHECK(inserted.result_int() == 201);
    const std::vector<std::string> io_calls = store.Take();
    const bool committed_on_io =
        std::find(io_calls.begin(), io_calls.end(), "ApplyAsync") != io_calls.end();
    CHECK(committed_on_io == w.parsed_inline);
    HttpResponse read = server.Send(
        http::verb::get, "/devstoreaccount1/sizes(PartitionKey='p',RowKey='" + w.row_key + "')");
    CHECK(read.result_int() == 200);
    const std::string last = "\"P" + std::to_string(w.properties - 1) + "\":\"" + value + "\"";
    CHECK(inserted.body().find(last) != std::string::npos);
    CHECK(read.body().find(last) != std::string::npos);
  }
}

TEST_CASE("every routed operation has a handler; the ones answered outside the table have none") {
  for (const Route& r : AllRoutes()) {
    CAPTURE(r.name);
    CHECK((HandlerOf(r.op) == nullptr) == (r.verbs == kNoVerb));
  }
}

}  // namespace cerulean::server
