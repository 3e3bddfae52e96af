// PostgresStore: the schema and opening (Init creates it, idempotently, on
// every start), closing, the ApplyAsync lanes, the write clock and the
// stats. Tables and documents: postgres_tables.cc; entities:
// postgres_entities.cc; snapshots: snapshots.cc; the prober:
// postgres_prober.cc; the reaper: postgres_reaper.cc.
#include "storage/postgres/postgres_store.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "storage/edm_text.h"
#include "storage/platform.h"
#include "storage/postgres/postgres_internal.h"
#include "storage/store_ops.h"

namespace cerulean::storage {

namespace {

// persistent: the schema (storage/README.md, "PostgreSQL backend"). Only
// statements that PostgreSQL, Citus, YugabyteDB and CockroachDB all accept;
// every one is idempotent, so nodes starting together may all run them.
// Keys are EncodeKey() bytea: bytea compares bytewise, which for these
// encodings is UTF-16 code-unit order whatever the database's collation.
constexpr const char* kSchema[] = {
    "CREATE SEQUENCE IF NOT EXISTS cerulean_table_ids",
    // The catalog of live tables. id comes from the sequence and is never
    // reused: rows of a dropped table awaiting reaping never show through a
    // table created again under its name.
    "CREATE TABLE IF NOT EXISTS cerulean_tables("
    "  account text NOT NULL,"
    "  name_lower text NOT NULL,"  // ASCII lower case, for lookup
    "  id bigint NOT NULL,"
    "  name text NOT NULL,"       // as created
    "  name_key bytea NOT NULL,"  // EncodeKey(name), for ordinal order
    "  acl text NOT NULL DEFAULT '',"
    "  PRIMARY KEY(account, name_lower))",
    "CREATE INDEX IF NOT EXISTS cerulean_tables_by_name_key ON cerulean_tables(account, name_key)",
    // Entities, clustered by (table, PartitionKey, RowKey): a partition is
    // contiguous (one shard under hash distribution on (table_id, pk)), and
    // a key range is one index range scan.
    "CREATE TABLE IF NOT EXISTS cerulean_entities("
    "  table_id bigint NOT NULL,"
    "  pk bytea NOT NULL,"
    "  rk bytea NOT NULL,"
    "  ts bigint NOT NULL,"  // Timestamp, DateTime ticks (= ETag)
    "  props bytea NOT NULL,"
    "  PRIMARY KEY(table_id, pk, rk))",
    "CREATE TABLE IF NOT EXISTS cerulean_accounts("
    "  account text PRIMARY KEY,"
    "  service_properties text NOT NULL)",
    // Ids of dropped tables whose rows are not yet all deleted.
    "CREATE TABLE IF NOT EXISTS cerulean_doomed_tables(table_id bigint PRIMARY KEY)",
    // Snapshots. A saved table's rows are cerulean_entities rows under a
    // table id of its own (data_id, from cerulean_table_ids) that no catalog
    // row names: they shard like the live rows, copies between the two keep
    // each PartitionKey where it is, and a deleted snapshot's rows are
    // reclaimed by the reaper like a dropped table's.
    "CREATE SEQUENCE IF NOT EXISTS cerulean_snapshot_ids",
    "CREATE TABLE IF NOT EXISTS cerulean_snapshots("
    "  account text NOT NULL,"
    "  name text NOT NULL,"
    "  id bigint NOT NULL,"
    "  created bigint NOT NULL,"  // DateTime ticks
    "  service_properties text,"  // NULL: the account had none
    "  PRIMARY KEY(account, name))",
    "CREATE TABLE IF NOT EXISTS cerulean_snapshot_tables("
    "  snapshot_id bigint NOT NULL,"
    "  ord bigint NOT NULL,"  // numbers a snapshot's tables
    "  name text NOT NULL,"   // as created
    "  acl text NOT NULL,"
    "  entities bigint NOT NULL,"
    "  data_id bigint NOT NULL,"  // the saved rows' table_id
    // The live table the rows were saved from or last restored into: a
    // restore compares it with the saved rows instead of copying them.
    "  live_id bigint NOT NULL,"
    "  PRIMARY KEY(snapshot_id, ord))",
};

}  // namespace

Status PgLookupTable(PgConnection* c, const std::string& account, const std::string& table,
                     int64_t* id, bool lock, std::string* name) {
  const std::string lower = LowerAscii(table);
  PgResult r;
  Status s =
      c->Exec(lock ? kLockTableSql : kLookupTableSql, PgParams().Text(account).Text(lower), &r);
  if (!s.ok()) return s;
  if (r.rows() == 0) return Status::TableNotFound(table);
  *id = r.Int64(0, 0);
  if (name != nullptr) *name = std::string(r.View(0, 1));
  return Status::Ok();
}

// The key conditions of a scan from `lower` to `upper` ($2/$3 the lower
// bound's keys, $4/$5 the upper's; every slot is bound, unused ones NULL).
// Bounds within one partition are written "pk = $2 AND rk ..." (an index
// seek to the lower RowKey, stopping at the upper); others as row values,
// which PostgreSQL and CockroachDB also turn into index bounds.

// One ApplyAsync waiting in a lane (or a Flush barrier: no ops).
struct PostgresStore::Pending {
  std::string account, table;
  std::vector<WriteOp> ops;
  ApplyCallback done;
  bool barrier = false;
};

struct PostgresStore::Lane {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::unique_ptr<Pending>> queue;  // guarded by mu
  bool stopping = false;                       // guarded by mu
  std::thread thread;
};

namespace {

PgPoolOptions PoolOptions(const PostgresStoreOptions& options, PgConnInfo info) {
  PgPoolOptions o;
  o.info = std::move(info);
  o.schema = options.schema;
  o.size = options.pool_size;
  o.acquire_timeout = options.acquire_timeout;
  o.round_trip_timeout = options.round_trip_timeout;
  o.long_round_trip_timeout = options.long_round_trip_timeout;
  return o;
}

}  // namespace

PostgresStore::PostgresStore(const PostgresStoreOptions& options, PgConnInfo info)
    : options_(options), pool_(PoolOptions(options, std::move(info))) {}

Result<std::unique_ptr<PostgresStore>> PostgresStore::Open(const PostgresStoreOptions& options) {
  if (options.url.empty()) return Status::InvalidArgument("PostgresStore: no database URL");
  PgConnInfo info;
  Status s = PgConnInfo::Parse(options.url, &info);
  if (!s.ok()) return s;
  std::unique_ptr<PostgresStore> store(new PostgresStore(options, std::move(info)));
  // One attempt now, so that a reachable database serves from the first
  // request; an unreachable one is the prober's to retry.
  std::string host;
  s = store->Init(&host);
  if (s.ok()) {
    store->ready_ = true;
  } else if (s.code() != StatusCode::kBusy) {
    return s;
  }
  store->pool_.SetReachable(s.ok());
  store->Verdict(s, host);
  store->Start();
  return store;
}

void PostgresStore::Start() {
  for (size_t i = 0; i < std::max<size_t>(1, options_.async_lanes); ++i) {
    auto lane = std::make_unique<Lane>();
    Lane* l = lane.get();
    lane->thread = std::thread([this, l] { LaneLoop(l); });
    lanes_.push_back(std::move(lane));
  }
  if (options_.background_reaping) {
    reap_pending_ = true;  // resume work left by any node
    reaper_ = std::thread([this] { ReaperLoop(); });
  }
  prober_ = std::thread([this] { ProbeLoop(); });
}

Status PostgresStore::Init(std::string* host) {
  {
    std::unique_ptr<PgConnection> c;
    // The schema is created on a connection of its own, before the pool's
    // (whose search_path names it). Its statements are short (CREATE ... IF
    // NOT EXISTS, a lock other nodes hold as briefly): a request's deadline,
    // so that a database freezing meanwhile holds the prober up no longer.
    Status s = pool_.OpenUnpooled("", options_.round_trip_timeout, &c);
    if (!s.ok()) return s;
    *host = c->HostPort();
    PgResult version;
    s = c->Exec("SELECT version()", PgParams(), &version);
    if (!s.ok()) return s;
    // CockroachDB has no advisory locks.
    advisory_locks_ = options_.advisory_locks && version.rows() == 1 &&
                      version.View(0, 0).find("CockroachDB") == std::string_view::npos;
    // A write whose commit got no answer is looked up by its transaction id
    // (ResolveLostCommit); a database without these functions gets
    // kOutcomeUnknown then.
    txid_status_ = c->Exec("SELECT txid_status(txid_current())", PgParams()).ok();
    if (c->Broken()) return Status::Busy("database unavailable: it stopped answering");
    s = c->Command("BEGIN");
    if (s.ok() && advisory_locks_) {
      // Nodes starting together would otherwise race on CREATE ... IF NOT
      // EXISTS (which is not atomic in PostgreSQL).
      s = c->Exec("SELECT pg_advisory_xact_lock($1)", PgParams().Int64(kSchemaLockKey));
    }
    if (s.ok() && !options_.schema.empty()) {
      std::string q = options_.schema;
      // A quoted identifier: double the quotes.
      for (size_t i = q.find('"'); i != std::string::npos; i = q.find('"', i + 2))
        q.insert(i, "\"");
      s = c->Command("CREATE SCHEMA IF NOT EXISTS \"" + q + "\"");
      if (s.ok()) s = c->Command("SET LOCAL search_path TO \"" + q + "\"");
    }
    for (const char* sql : kSchema) {
      if (s.ok()) s = c->Command(sql);
    }
    if (s.ok()) s = c->Command("COMMIT");
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

PostgresStore::~PostgresStore() {
  for (auto& lane : lanes_) {
    {
      std::lock_guard<std::mutex> lock(lane->mu);
      lane->stopping = true;
    }
    lane->cv.notify_all();
    lane->thread.join();
  }
  {
    std::lock_guard<std::mutex> lock(reap_mu_);
    stopping_ = true;
  }
  reap_cv_.notify_all();
  if (reaper_.joinable()) reaper_.join();
  {
    std::lock_guard<std::mutex> lock(probe_mu_);
    probe_stopping_ = true;
  }
  probe_cv_.notify_all();
  if (prober_.joinable()) prober_.join();
}

int64_t PostgresStore::NextTimestamp() {
  int64_t last = last_timestamp_.load(std::memory_order_relaxed);
  int64_t next;
  do {
    next = std::max(NowTicks(), last + 1);
  } while (!last_timestamp_.compare_exchange_weak(last, next, std::memory_order_relaxed));
  return next;
}

void PostgresStore::ApplyAsync(std::string account, std::string table, std::vector<WriteOp> ops,
                               ApplyCallback done) {
  // Writes to one partition share a lane, so they commit (and call back)
  // in the order they came; others run beside them.
  size_t h = std::hash<std::string>{}(account)*31 + std::hash<std::string>{}(LowerAscii(table));
  if (!ops.empty()) h = h * 31 + std::hash<std::string>{}(ops.front().entity.partition_key);
  Lane* lane = lanes_[h % lanes_.size()].get();
  auto p = std::make_unique<Pending>();
  p->account = std::move(account);
  p->table = std::move(table);
  p->ops = std::move(ops);
  p->done = std::move(done);
  {
    std::lock_guard<std::mutex> lock(lane->mu);
    lane->queue.push_back(std::move(p));
  }
  lane->cv.notify_one();
}

void PostgresStore::Flush() {
  // A barrier in every lane; each runs after everything queued before it.
  std::mutex mu;
  std::condition_variable cv;
  size_t left = lanes_.size();
  for (auto& lane : lanes_) {
    auto p = std::make_unique<Pending>();
    p->barrier = true;
    p->done = [&](ApplyOutcome) {
      std::lock_guard<std::mutex> lock(mu);
      if (--left == 0) cv.notify_one();
    };
    {
      std::lock_guard<std::mutex> lock(lane->mu);
      lane->queue.push_back(std::move(p));
    }
    lane->cv.notify_one();
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return left == 0; });
}

void PostgresStore::LaneLoop(Lane* lane) {
  NameThisThread("cerulean-pglane");
  std::unique_lock<std::mutex> lock(lane->mu);
  while (true) {
    lane->cv.wait(lock, [&] { return lane->stopping || !lane->queue.empty(); });
    if (lane->queue.empty()) return;  // stopping, and everything queued is done
    std::unique_ptr<Pending> p = std::move(lane->queue.front());
    lane->queue.pop_front();
    lock.unlock();
    ApplyOutcome out;
    if (!p->barrier) {
      out.status = Apply(p->account, p->table, p->ops, &out.result, &out.error);
      out.ops = std::move(p->ops);
    }
    p->done(std::move(out));
    lock.lock();
  }
}

PostgresStoreStats PostgresStore::GetStats() const {
  PostgresStoreStats stats;
  stats.connections_open = pool_.open();
  stats.connections_in_use = pool_.in_use();
  stats.pool_waits = pool_.waits();
  stats.operations = operations_.load(std::memory_order_relaxed);
  stats.operation_micros = operation_micros_.load(std::memory_order_relaxed);
  stats.retries = retries_.load(std::memory_order_relaxed);
  stats.lost_commits_committed = lost_committed_.load(std::memory_order_relaxed);
  stats.lost_commits_aborted = lost_aborted_.load(std::memory_order_relaxed);
  stats.lost_commits_unknown = lost_unknown_.load(std::memory_order_relaxed);
  stats.reachable = healthy_.load(std::memory_order_acquire);
  return stats;
}

std::vector<StoreGauge> PostgresStore::Gauges() const {
  const PostgresStoreStats st = GetStats();
  return {
      {"pg_connections_open", "Database connections open (the pool's).", false,
       st.connections_open},
      {"pg_connections_in_use", "Database connections in use.", false, st.connections_in_use},
      {"pg_pool_waits", "Times a store call waited for a free connection.", true, st.pool_waits},
      {"pg_operations", "Store calls that reached the database.", true, st.operations},
      {"pg_operation_microseconds", "Total latency of those calls, in microseconds.", true,
       st.operation_micros},
      {"pg_retries", "Transactions run again (serialization failure, deadlock, a racing insert).",
       true, st.retries},
      {"pg_lost_commits_committed",
       "Writes whose commit got no answer in time and had committed: answered as done.", true,
       st.lost_commits_committed},
      {"pg_lost_commits_aborted",
       "Writes whose commit got no answer in time and were cancelled: answered 503 ServerBusy.",
       true, st.lost_commits_aborted},
      {"pg_lost_commits_unknown",
       "Writes whose commit got no answer in time and whose outcome could not be learnt: "
       "answered 500 OperationTimedOut.",
       true, st.lost_commits_unknown},
      {"pg_reachable", "1 while the database answers the prober, else 0 (/_health).", false,
       st.reachable ? 1u : 0u},
  };
}

}  // namespace cerulean::storage
