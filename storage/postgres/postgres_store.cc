#include "storage/postgres/postgres_store.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <utility>

#include "storage/codec.h"
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

// pg_advisory_lock keys (any constant; chosen to be unlikely elsewhere).
constexpr int64_t kSchemaLockKey = 0x6365727531;  // "ceru1"
constexpr int64_t kReaperLockKey = 0x6365727532;  // "ceru2"

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

// ---------------------------------------------------------------------------
// Tables and documents.

Status PostgresStore::CreateTable(const std::string& account, const std::string& table) {
  const std::string lower = LowerAscii(table);
  const std::string key = EncodeKey(table);
  return Transaction([&](PgConnection* c, std::string* sqlstate) {
    PgResult r;
    Status s = c->Exec(
        "INSERT INTO cerulean_tables(account, name_lower, id, name, name_key) "
        "VALUES ($1, $2, nextval('cerulean_table_ids'), $3, $4) ON CONFLICT DO NOTHING",
        PgParams().Text(account).Text(lower).Text(table).Bytes(key), &r, sqlstate);
    if (s.ok() && r.Affected() == 0) return Status::TableAlreadyExists(table);
    return s;
  });
}

Status PostgresStore::DeleteTable(const std::string& account, const std::string& table) {
  const std::string lower = LowerAscii(table);
  Status status = Transaction([&](PgConnection* c, std::string* sqlstate) {
    PgResult r;
    Status s =
        c->Exec("DELETE FROM cerulean_tables WHERE account = $1 AND name_lower = $2 RETURNING id",
                PgParams().Text(account).Text(lower), &r, sqlstate);
    if (!s.ok()) return s;
    if (r.rows() == 0) return Status::TableNotFound(table);
    return c->Exec("INSERT INTO cerulean_doomed_tables(table_id) VALUES ($1)",
                   PgParams().Int64(r.Int64(0, 0)), nullptr, sqlstate);
  });
  if (status.ok()) WakeReaper();
  return status;
}

Result<std::string> PostgresStore::GetTable(const std::string& account, const std::string& table) {
  Timed timed(this);
  PgLease c(&pool_);
  if (!c.status().ok()) return c.status();
  int64_t id = 0;
  std::string name;
  Status s = PgLookupTable(c.get(), account, table, &id, /*lock=*/false, &name);
  if (!s.ok()) return s;
  return name;
}

Status PostgresStore::ScanTables(const std::string& account, const std::string& start,
                                 const std::function<bool(const std::string&)>& visit) {
  // Pages of names are read with a connection held and visited without, so
  // `visit` may call back into the store.
  constexpr int64_t kPage = 256;
  std::string from = EncodeKey(start);
  bool inclusive = true;
  while (true) {
    std::vector<std::string> names;
    {
      Timed timed(this);
      PgLease c(&pool_);
      if (!c.status().ok()) return c.status();
      PgResult r;
      Status s = c->Exec(inclusive ? "SELECT name, name_key FROM cerulean_tables WHERE account = "
                                     "$1 AND name_key >= $2 ORDER BY name_key LIMIT $3"
                                   : "SELECT name, name_key FROM cerulean_tables WHERE account = "
                                     "$1 AND name_key > $2 ORDER BY name_key LIMIT $3",
                         PgParams().Text(account).Bytes(from).Int64(kPage), &r);
      if (!s.ok()) return s;
      for (int i = 0; i < r.rows(); ++i) {
        names.emplace_back(r.View(i, 0));
        from = std::string(r.View(i, 1));
      }
    }
    inclusive = false;
    for (const auto& name : names) {
      if (!visit(name)) return Status::Ok();
    }
    if (names.size() < static_cast<size_t>(kPage)) return Status::Ok();
  }
}

Result<std::string> PostgresStore::GetTableAcl(const std::string& account,
                                               const std::string& table) {
  Timed timed(this);
  PgLease c(&pool_);
  if (!c.status().ok()) return c.status();
  PgResult r;
  Status s = c->Exec("SELECT acl FROM cerulean_tables WHERE account = $1 AND name_lower = $2",
                     PgParams().Text(account).Text(LowerAscii(table)), &r);
  if (!s.ok()) return s;
  if (r.rows() == 0) return Status::TableNotFound(table);
  return std::string(r.View(0, 0));
}

Status PostgresStore::SetTableAcl(const std::string& account, const std::string& table,
                                  const std::string& acl) {
  const std::string lower = LowerAscii(table);
  return Transaction([&](PgConnection* c, std::string* sqlstate) {
    PgResult r;
    Status s = c->Exec("UPDATE cerulean_tables SET acl = $3 WHERE account = $1 AND name_lower = $2",
                       PgParams().Text(account).Text(lower).Text(acl), &r, sqlstate);
    if (s.ok() && r.Affected() == 0) return Status::TableNotFound(table);
    return s;
  });
}

Result<std::string> PostgresStore::GetServiceProperties(const std::string& account) {
  Timed timed(this);
  PgLease c(&pool_);
  if (!c.status().ok()) return c.status();
  PgResult r;
  Status s = c->Exec("SELECT service_properties FROM cerulean_accounts WHERE account = $1",
                     PgParams().Text(account), &r);
  if (!s.ok()) return s;
  if (r.rows() == 0) return std::string();
  return std::string(r.View(0, 0));
}

Status PostgresStore::SetServiceProperties(const std::string& account, const std::string& props) {
  return Transaction([&](PgConnection* c, std::string* sqlstate) {
    return c->Exec(
        "INSERT INTO cerulean_accounts(account, service_properties) VALUES ($1, $2) "
        "ON CONFLICT (account) DO UPDATE SET service_properties = excluded.service_properties",
        PgParams().Text(account).Text(props), nullptr, sqlstate);
  });
}

Status PostgresStore::ResetAccount(const std::string& account) {
  Status status = Transaction([&](PgConnection* c, std::string* sqlstate) {
    const char* kSteps[] = {
        "INSERT INTO cerulean_doomed_tables(table_id) SELECT id FROM cerulean_tables WHERE "
        "account = $1",
        "DELETE FROM cerulean_tables WHERE account = $1",
        "DELETE FROM cerulean_accounts WHERE account = $1",
    };
    for (const char* sql : kSteps) {
      Status s = c->Exec(sql, PgParams().Text(account), nullptr, sqlstate);
      if (!s.ok()) return s;
    }
    return Status::Ok();
  });
  if (status.ok()) WakeReaper();
  return status;
}

bool PostgresStore::Healthy() { return healthy_.load(std::memory_order_acquire); }

// ---------------------------------------------------------------------------
// The prober.

void PostgresStore::ProbeLoop() {
  NameThisThread("cerulean-pgprobe");
  std::unique_ptr<PgConnection> conn;
  std::unique_lock<std::mutex> lock(probe_mu_);
  while (!probe_stopping_) {
    probe_cv_.wait_for(lock, options_.probe_interval, [this] { return probe_stopping_; });
    if (probe_stopping_) return;
    lock.unlock();
    std::string host;
    Status s;
    if (!ready_.load(std::memory_order_acquire)) {
      // Started without the database: the schema first.
      s = Init(&host);
      if (s.ok()) ready_.store(true, std::memory_order_release);
    }
    if (s.ok()) {
      s = ProbeOnce(&conn);
      if (s.ok()) host = conn->HostPort();
    }
    Verdict(s, host);
    lock.lock();
  }
}

Status PostgresStore::ProbeOnce(std::unique_ptr<PgConnection>* conn) {
  Status s;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (*conn == nullptr || (*conn)->Broken()) {
      conn->reset();
      s = pool_.OpenUnpooled("", options_.probe_timeout, conn);
      if (!s.ok()) return s;
    }
    const size_t host = (*conn)->host_index();
    s = (*conn)->Command("SELECT 1");
    if (s.ok()) return s;
    // A connection found dropped (a restarted server, a terminated backend)
    // is opened again at once; one that got no answer is not: the database
    // does not answer, and the next connections start at the next host.
    if ((*conn)->timed_out()) {
      pool_.NoteSilentHost(host);
      return s;
    }
  }
  return s;
}

void PostgresStore::Verdict(const Status& probe, const std::string& host) {
  const bool was = healthy_.load(std::memory_order_acquire);
  const bool first = !verdict_given_;
  verdict_given_ = true;
  if (probe.ok()) {
    if (!was) {
      pool_.SetReachable(true);
      healthy_.store(true, std::memory_order_release);
      if (first) {
        Log("database at " + host + " serves");
      } else {
        char took[32];
        std::snprintf(
            took, sizeof(took), "%.1f",
            std::chrono::duration<double>(std::chrono::steady_clock::now() - unreachable_since_)
                .count());
        Log(std::string(ever_reached_ ? "database reachable again at " : "database reachable at ") +
            host + " after " + took + " s");
      }
    } else if (host != serving_host_) {
      // Another host answers (the prober's connection broke and found the
      // new primary before a probe failed): connections to the old one go.
      pool_.Invalidate();
      Log("database now served by " + host + " (was " + serving_host_ + ")");
    }
    ever_reached_ = true;
    serving_host_ = host;
    return;
  }
  if (was || first) {
    healthy_.store(false, std::memory_order_release);
    pool_.SetReachable(false);
    pool_.Invalidate();
    unreachable_since_ = std::chrono::steady_clock::now();
    std::string why = probe.message();
    constexpr std::string_view kPrefix = "database unavailable: ";
    if (std::string_view(why).starts_with(kPrefix)) why.erase(0, kPrefix.size());
    Log("database unreachable: " + why);
  }
}

void PostgresStore::Log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

Status PostgresStore::GetUsage(std::vector<AccountUsage>* accounts, uint64_t* bytes) {
  accounts->clear();
  *bytes = 0;
  Timed timed(this);
  PgLease c(&pool_, PgDeadline::kLong);
  if (!c.status().ok()) return c.status();
  // One snapshot for both counts.
  Status s = c->Command("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  std::map<std::string, AccountUsage> by_account;
  PgResult r;
  if (s.ok()) {
    s = c->Exec("SELECT account, count(*) FROM cerulean_tables GROUP BY account", PgParams(), &r);
  }
  for (int i = 0; s.ok() && i < r.rows(); ++i) {
    std::string account(r.View(i, 0));
    AccountUsage& u = by_account[account];
    u.account = account;
    u.tables = static_cast<uint64_t>(r.Int64(i, 1));
  }
  if (s.ok()) {
    s = c->Exec(
        "SELECT t.account, count(*) FROM cerulean_tables t JOIN cerulean_entities e ON "
        "e.table_id = t.id GROUP BY t.account",
        PgParams(), &r);
  }
  for (int i = 0; s.ok() && i < r.rows(); ++i) {
    by_account[std::string(r.View(i, 0))].entities = static_cast<uint64_t>(r.Int64(i, 1));
  }
  c->RollbackIfActive();
  if (!s.ok()) return s;
  for (auto& [name, usage] : by_account) accounts->push_back(std::move(usage));
  // PostgreSQL and YugabyteDB; elsewhere the size stays 0.
  if (c->Exec("SELECT (pg_total_relation_size('cerulean_entities') + "
              "pg_total_relation_size('cerulean_tables'))::bigint",
              PgParams(), &r)
          .ok() &&
      r.rows() == 1) {
    *bytes = static_cast<uint64_t>(r.Int64(0, 0));
  }
  return Status::Ok();
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

// ---------------------------------------------------------------------------
// Reaping.

void PostgresStore::WakeReaper() {
  {
    std::lock_guard<std::mutex> lock(reap_mu_);
    reap_pending_ = true;
  }
  reap_cv_.notify_all();
}

void PostgresStore::ReaperLoop() {
  NameThisThread("cerulean-reap");
  std::unique_lock<std::mutex> lock(reap_mu_);
  while (true) {
    // Woken by this node's drops, and now and then for other nodes' (or
    // for work a failed pass left).
    reap_cv_.wait_for(lock, options_.reap_poll, [this] { return stopping_ || reap_pending_; });
    if (stopping_) return;
    reap_pending_ = false;
    lock.unlock();
    static_cast<void>(ReapAll());
    lock.lock();
  }
}

Status PostgresStore::ReapAll() {
  PgLease c(&pool_, PgDeadline::kLong);
  if (!c.status().ok()) return c.status();
  PgResult r;
  if (advisory_locks_) {
    // A session lock: held across the chunks' own transactions, and freed
    // by the database if this node dies.
    Status s = c->Exec("SELECT pg_try_advisory_lock($1)", PgParams().Int64(kReaperLockKey), &r);
    if (!s.ok()) return s;
    if (!r.Bool(0, 0)) return Status::Ok();  // another node is reaping
  }
  Status s;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(reap_mu_);
      if (stopping_) break;
    }
    s = c->Exec("SELECT table_id FROM cerulean_doomed_tables LIMIT 1", PgParams(), &r);
    if (!s.ok() || r.rows() == 0) break;
    const int64_t id = r.Int64(0, 0);
    // One short statement (its own transaction) per chunk, so request
    // writers never wait long behind the reaper.
    s = c->Exec(
        "DELETE FROM cerulean_entities WHERE (table_id, pk, rk) IN (SELECT table_id, pk, rk FROM "
        "cerulean_entities WHERE table_id = $1 LIMIT $2)",
        PgParams().Int64(id).Int64(static_cast<int64_t>(options_.reap_chunk_rows)), &r);
    if (!s.ok()) break;
    if (static_cast<size_t>(r.Affected()) < options_.reap_chunk_rows) {
      s = c->Exec("DELETE FROM cerulean_doomed_tables WHERE table_id = $1", PgParams().Int64(id));
      if (!s.ok()) break;
    }
  }
  if (advisory_locks_ && !c->Broken()) {
    static_cast<void>(
        c->Exec("SELECT pg_advisory_unlock($1)", PgParams().Int64(kReaperLockKey), &r));
  }
  return s;
}

Status PostgresStore::ReapNowForTesting() { return ReapAll(); }

Result<uint64_t> PostgresStore::CountEntityRowsForTesting() {
  PgLease c(&pool_);
  if (!c.status().ok()) return c.status();
  PgResult r;
  Status s = c->Exec("SELECT count(*) FROM cerulean_entities", PgParams(), &r);
  if (!s.ok()) return s;
  return static_cast<uint64_t>(r.Int64(0, 0));
}

Result<uint64_t> PostgresStore::CountPendingReapsForTesting() {
  PgLease c(&pool_);
  if (!c.status().ok()) return c.status();
  PgResult r;
  Status s = c->Exec("SELECT count(*) FROM cerulean_doomed_tables", PgParams(), &r);
  if (!s.ok()) return s;
  return static_cast<uint64_t>(r.Int64(0, 0));
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
