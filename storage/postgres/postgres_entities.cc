// PostgresStore: entity reads (point reads, key-range scans) and writes
// (Apply). See postgres_store.h.
#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "storage/codec.h"
#include "storage/postgres/postgres_internal.h"
#include "storage/postgres/postgres_store.h"
#include "storage/row_visit.h"
#include "storage/store_ops.h"

namespace cerulean::storage {

namespace {

void AppendRangeSql(const std::optional<KeyBound>& lower, const std::optional<KeyBound>& upper,
                    std::string* sql) {
  if (SinglePartition(lower, upper)) {
    *sql += " AND pk = $2";
    if (lower->row_key) *sql += lower->inclusive ? " AND rk >= $3" : " AND rk > $3";
    if (upper->row_key) *sql += upper->inclusive ? " AND rk <= $5" : " AND rk < $5";
    return;
  }
  auto bound = [&](const KeyBound& b, bool is_lower, const char* pk, const char* rk) {
    std::string op = is_lower ? (b.inclusive ? ">=" : ">") : (b.inclusive ? "<=" : "<");
    if (!b.row_key) {
      *sql += " AND pk " + op + " " + pk;
    } else {
      *sql += " AND (pk, rk) " + op + " (" + pk + ", " + rk + ")";
    }
  };
  if (lower) bound(*lower, true, "$2", "$3");
  if (upper) bound(*upper, false, "$4", "$5");
}

void BindRange(const std::optional<KeyBound>& lower, const std::optional<KeyBound>& upper,
               std::vector<std::string>* keys, PgParams* params) {
  keys->clear();
  keys->reserve(4);
  auto add = [&](const std::optional<std::string>& key) {
    if (!key) {
      params->NullBytes();
      return;
    }
    keys->push_back(EncodeKey(*key));
    params->Bytes(keys->back());
  };
  auto pk = [](const std::optional<KeyBound>& b) {
    return b ? std::optional<std::string>(b->partition_key) : std::nullopt;
  };
  auto rk = [](const std::optional<KeyBound>& b) { return b ? b->row_key : std::nullopt; };
  add(pk(lower));
  add(rk(lower));
  add(pk(upper));
  add(rk(upper));
}

// The statement reading `chunk` rows of table `id` from `lower` to `upper`
// in key order, and its parameters (`keys` holds the bytes they view).
std::string ScanSql(int64_t id, const std::optional<KeyBound>& lower,
                    const std::optional<KeyBound>& upper, int64_t chunk,
                    std::vector<std::string>* keys, PgParams* params) {
  std::string sql = "SELECT pk, rk, ts, props FROM cerulean_entities WHERE table_id = $1";
  AppendRangeSql(lower, upper, &sql);
  sql += " ORDER BY pk, rk LIMIT $6";
  params->Int64(id);
  BindRange(lower, upper, keys, params);
  params->Int64(chunk);
  return sql;
}

// Statements of Apply (besides kLockTableSql).
constexpr std::string_view kLockEntitySql =
    "SELECT ts, props FROM cerulean_entities WHERE table_id = $1 AND pk = $2 AND rk = $3 "
    "FOR UPDATE";
constexpr std::string_view kDeleteEntitySql =
    "DELETE FROM cerulean_entities WHERE table_id = $1 AND pk = $2 AND rk = $3";
constexpr std::string_view kUpdateEntitySql =
    "UPDATE cerulean_entities SET ts = $4, props = $5 WHERE table_id = $1 AND pk = $2 AND rk = $3";
// No ON CONFLICT: a duplicate key must fail the statement, which stops the
// pipeline before its COMMIT.
constexpr std::string_view kInsertEntitySql =
    "INSERT INTO cerulean_entities(table_id, pk, rk, ts, props) VALUES ($1, $2, $3, $4, $5)";

// How often ResolveLostCommit asks whether a transaction still runs.
constexpr std::chrono::milliseconds kLostCommitPoll{20};

// Rows of one multi-row INSERT at most.
constexpr size_t kMaxInsertRows = 100;

// An INSERT of `rows` entities (1..kMaxInsertRows): $1 the table id, then
// the pk, rk, ts and props of each row. One statement for the inserts of a
// $batch instead of one each: the database's cost per statement (bind,
// execute, its result) is several times its cost per row.
std::string_view MultiInsertSql(size_t rows) {
  static const std::vector<std::string> kSql = [] {
    std::vector<std::string> sql(kMaxInsertRows + 1);
    std::string text = "INSERT INTO cerulean_entities(table_id, pk, rk, ts, props) VALUES ";
    for (size_t n = 1; n <= kMaxInsertRows; ++n) {
      const size_t p = 2 + 4 * (n - 1);
      if (n > 1) text += ", ";
      text += "($1, $" + std::to_string(p) + ", $" + std::to_string(p + 1) + ", $" +
              std::to_string(p + 2) + ", $" + std::to_string(p + 3) + ")";
      sql[n] = text;
    }
    return sql;
  }();
  return kSql[rows];
}

// True iff no two ops address the same entity.
bool DistinctKeys(const std::vector<WriteOp>& ops) {
  std::vector<std::pair<std::string_view, std::string_view>> keys;
  keys.reserve(ops.size());
  for (const WriteOp& op : ops) keys.emplace_back(op.entity.partition_key, op.entity.row_key);
  std::sort(keys.begin(), keys.end());
  return std::adjacent_find(keys.begin(), keys.end()) == keys.end();
}

// The key under which a connection memoises a table's id.
std::string TableMemoKey(const std::string& account, const std::string& lower) {
  std::string key = account;
  key += '\0';
  key += lower;
  return key;
}

}  // namespace

// ---------------------------------------------------------------------------
// Entities.

Status PostgresStore::GetEntityRow(const std::string& account, const std::string& table,
                                   const std::string& partition_key, const std::string& row_key,
                                   const RowVisitor& visit) {
  Timed timed(this);
  PgLease c(&pool_);
  if (!c.status().ok()) return c.status();
  if (!IsEncodableKey(partition_key) || !IsEncodableKey(row_key)) {
    // Such keys are never stored; their encodings would alias others.
    int64_t id = 0;
    Status s = PgLookupTable(c.get(), account, table, &id, /*lock=*/false);
    if (!s.ok()) return s;
    return Status::NotFound();
  }
  // One statement, so one snapshot for the table lookup and the row read:
  // no row means no table, a NULL ts means no entity (ts is NOT NULL).
  const std::string lower = LowerAscii(table);
  const std::string pk = EncodeKey(partition_key);
  const std::string rk = EncodeKey(row_key);
  PgResult r;
  Status s = c->Exec(
      "SELECT e.ts, e.props FROM cerulean_tables t LEFT JOIN cerulean_entities e "
      "ON e.table_id = t.id AND e.pk = $3 AND e.rk = $4 "
      "WHERE t.account = $1 AND t.name_lower = $2",
      PgParams().Text(account).Text(lower).Bytes(pk).Bytes(rk), &r);
  if (!s.ok()) return s;
  if (r.rows() == 0) return Status::TableNotFound(table);
  if (r.IsNull(0, 0)) return Status::NotFound();
  EntityRow row;
  row.partition_key = partition_key;
  row.row_key = row_key;
  row.timestamp = r.Int64(0, 0);
  row.properties = r.View(0, 1);
  return visit(row);
}

Status PostgresStore::ScanRows(const std::string& account, const std::string& table,
                               const ScanRequest& request, const RowVisitor& visit,
                               std::optional<EntityKey>* next) {
  next->reset();
  Timed timed(this);
  PgLease c(&pool_);
  if (!c.status().ok()) return c.status();
  // One snapshot for every range and chunk of the page. The transaction's
  // start, the table lookup and the first chunk (read under the table id
  // this connection saw last) go in one round trip.
  const std::string lower_name = LowerAscii(table);
  const std::string memo_key = TableMemoKey(account, lower_name);
  const int64_t* memo = c->Memo(memo_key);
  const int64_t memo_id = memo != nullptr ? *memo : -1;  // a reconnect forgets memos
  const size_t want = std::min(request.limit, request.max_examined);
  const int64_t chunk = static_cast<int64_t>(want >= 999 ? 1000 : std::max<size_t>(2, want + 1));
  std::vector<PgStatement> stmts(memo_id >= 0 && !request.ranges.empty() ? 3 : 2);
  stmts[0].sql = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
  stmts[1].sql = kLookupTableSql;
  stmts[1].params.Text(account).Text(lower_name);
  std::string first_sql;
  std::vector<std::string> first_keys;
  if (stmts.size() == 3) {
    first_sql = ScanSql(memo_id, EffectiveLower(request.ranges[0].lower, request.start),
                        request.ranges[0].upper, chunk, &first_keys, &stmts[2].params);
    stmts[2].sql = first_sql;
  }
  std::vector<PgResult> results;
  Status s = c->Pipeline(stmts, &results);
  if (!s.ok()) return s;
  if (results[1].rows() == 0) return Status::TableNotFound(table);
  const int64_t id = results[1].Int64(0, 0);
  // The first chunk's result, if it was read under the right id.
  bool prefetched = stmts.size() == 3 && memo_id == id;
  if (memo_id != id) c->SetMemo(memo_key, id);

  // Rows are read in chunks (keyset pages inside the snapshot), so a page
  // with a selective predicate does not pull the whole range at once.
  std::vector<std::string> keys;
  RowPage page(request, visit, next);
  for (const KeyRange& range : request.ranges) {
    std::optional<KeyBound> lower = EffectiveLower(range.lower, request.start);
    while (true) {
      PgResult r;
      if (prefetched) {
        r = std::move(results[2]);
        prefetched = false;
      } else {
        PgParams params;
        const std::string sql = ScanSql(id, lower, range.upper, chunk, &keys, &params);
        s = c->Exec(sql, params, &r);
        if (!s.ok()) return s;
      }
      const int rows = r.rows();
      for (int i = 0; i < rows; ++i) {
        s = page.Offer(r.View(i, 0), r.View(i, 1), r.Int64(i, 2), r.View(i, 3));
        if (!s.ok() || page.full()) return s;
      }
      if (rows < chunk) break;  // the range is done
      // Go on after the last row read.
      KeyBound after{"", std::string(), false};
      s = DecodeKeyInto(r.View(rows - 1, 0), &after.partition_key);
      if (s.ok()) s = DecodeKeyInto(r.View(rows - 1, 1), &*after.row_key);
      if (!s.ok()) return s;
      lower = std::move(after);
    }
  }
  return Status::Ok();
}

Status PostgresStore::ApplyOnce(PgConnection* c, const std::string& account,
                                const std::string& table, const std::vector<WriteOp>& ops,
                                ApplyResult* result, ApplyError* error, bool* group_inserts,
                                bool* retry) {
  *retry = false;
  std::string sqlstate;
  auto db_error = [&](Status s) {
    *retry = PgRetryable(sqlstate);
    if (error != nullptr) *error = ApplyError{s, 0};
    return s;
  };
  auto refuse = [&](size_t i, Status s) {
    if (error != nullptr) *error = ApplyError{s, i};
    return s;
  };
  struct Planned {
    std::string pk, rk;
    bool exists = false, remove = false;
    int64_t ts = 0;
    std::string props;
  };
  std::vector<Planned> planned(ops.size());
  // Ops before the first key that cannot be stored (such keys are refused
  // in op order, below).
  size_t encodable = ops.size();
  for (size_t i = 0; i < ops.size(); ++i) {
    const Entity& e = ops[i].entity;
    if (!IsEncodableKey(e.partition_key) || !IsEncodableKey(e.row_key)) {
      encodable = i;
      break;
    }
    planned[i].pk = EncodeKey(e.partition_key);
    planned[i].rk = EncodeKey(e.row_key);
  }

  // Round trip 1: begin, share-lock the table's catalog row (a concurrent
  // DeleteTable waits for this transaction), and lock and read every
  // addressed row but those of inserts. The rows are read under the table
  // id this connection saw last; if the catalog now says otherwise they are
  // read again under the right one. The row locks (FOR UPDATE) make the
  // If-Match check and the merge race-free against other nodes until the
  // commit.
  const std::string lower = LowerAscii(table);
  const std::string memo_key = TableMemoKey(account, lower);
  const int64_t* memo = c->Memo(memo_key);
  int64_t id = memo != nullptr ? *memo : -1;  // -1: none (ids are positive)
  std::vector<PgStatement> stmts;
  stmts.reserve(ops.size() + 2);
  std::vector<PgResult> results;
  auto add = [&](std::string_view sql) -> PgParams& {
    stmts.emplace_back();
    stmts.back().sql = sql;
    return stmts.back().params;
  };
  auto add_reads = [&] {
    for (size_t i = 0; i < encodable; ++i) {
      if (ops[i].kind == WriteKind::kInsert) continue;
      add(kLockEntitySql).Int64(id).Bytes(planned[i].pk).Bytes(planned[i].rk);
    }
  };
  add("BEGIN");
  add(kLockTableSql).Text(account).Text(lower);
  // The transaction's id and backend, by which a commit that gets no answer
  // is looked after (ResolveLostCommit).
  const bool track = txid_status_.load(std::memory_order_relaxed);
  if (track) add("SELECT txid_current(), pg_backend_pid()::int8");
  if (id >= 0) add_reads();
  Status s = c->Pipeline(stmts, &results, nullptr, &sqlstate);
  if (!s.ok()) return db_error(s);
  if (results[1].rows() == 0) return refuse(0, Status::TableNotFound(table));
  size_t next_read = track ? 3 : 2;
  SentCommit sent;
  if (track && results[2].rows() == 1) {
    sent.xid = results[2].Int64(0, 0);
    sent.pid = results[2].Int64(0, 1);
  }
  sent.host_port = c->HostPort();
  if (const int64_t actual = results[1].Int64(0, 0); actual != id) {
    c->SetMemo(memo_key, actual);
    id = actual;
    stmts.clear();
    add_reads();
    if (!stmts.empty()) {
      s = c->Pipeline(stmts, &results, nullptr, &sqlstate);
      if (!s.ok()) return db_error(s);
    }
    next_read = 0;
  }

  // Decide each op's outcome, so that a refused Apply writes nothing.
  // A refusal of op `i`: an insert before it whose row exists comes first,
  // as if every op had been checked in order.
  auto refuse_after_inserts = [&](size_t i, Status refusal) -> Status {
    for (size_t j = 0; j < i; ++j) {
      if (ops[j].kind != WriteKind::kInsert) continue;
      PgResult r;
      Status rs =
          c->Exec(kLockEntitySql, PgParams().Int64(id).Bytes(planned[j].pk).Bytes(planned[j].rk),
                  &r, &sqlstate);
      if (!rs.ok()) return db_error(rs);
      if (r.rows() > 0) return refuse(j, Status::AlreadyExists());
    }
    return refuse(i, refusal);
  };
  const int64_t base = NextTimestamp();
  std::vector<Property> props;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (i == encodable) return refuse_after_inserts(i, Status::InvalidArgument("InvalidKey"));
    const WriteOp& op = ops[i];
    Planned& plan = planned[i];
    int64_t prev_ts = 0;
    std::string_view blob;
    if (op.kind != WriteKind::kInsert) {
      const PgResult& r = results[next_read++];
      plan.exists = r.rows() > 0;
      if (plan.exists) {
        prev_ts = r.Int64(0, 0);
        blob = r.View(0, 1);
      }
    }
    // The row is locked: the new timestamp is above the one any node wrote.
    s = PlanWrite(op, plan.exists, prev_ts, blob, base, &props, &plan.remove, &plan.ts,
                  &plan.props);
    if (s.code() == StatusCode::kCorruption) return db_error(s);
    if (!s.ok()) return refuse_after_inserts(i, s);
  }

  // Round trip 2: every write, then the commit. An insert (or an upsert
  // that found no row) meets a row another transaction committed since:
  // the unique violation skips the rest, the commit included. For an
  // insert that is its refusal; for an upsert the Apply is run again, and
  // then finds the row. With *group_inserts, and when no two ops share a
  // key (so the order of the writes is free), the rows to insert go in
  // multi-row INSERTs after the other writes; a unique violation there
  // names no op, so the Apply is then run again statement by statement.
  stmts.clear();
  constexpr size_t kGrouped = SIZE_MAX;
  std::vector<size_t> op_of;  // statement -> op, or kGrouped
  op_of.reserve(ops.size());
  std::vector<size_t> inserts;
  std::vector<int64_t> timestamps;
  timestamps.reserve(ops.size());
  if (*group_inserts) {
    for (size_t i = 0; i < planned.size(); ++i) {
      if (!planned[i].remove && !planned[i].exists) inserts.push_back(i);
    }
    if (inserts.size() < 2 || !DistinctKeys(ops)) inserts.clear();
  }
  size_t next_insert = 0;
  for (size_t i = 0; i < planned.size(); ++i) {
    const Planned& plan = planned[i];
    timestamps.push_back(plan.remove ? 0 : plan.ts);
    if (next_insert < inserts.size() && inserts[next_insert] == i) {
      ++next_insert;
      continue;
    }
    if (plan.remove) {
      add(kDeleteEntitySql).Int64(id).Bytes(plan.pk).Bytes(plan.rk);
    } else {
      add(plan.exists ? kUpdateEntitySql : kInsertEntitySql)
          .Int64(id)
          .Bytes(plan.pk)
          .Bytes(plan.rk)
          .Int64(plan.ts)
          .Bytes(plan.props);
    }
    op_of.push_back(i);
  }
  for (size_t from = 0; from < inserts.size(); from += kMaxInsertRows) {
    const size_t rows = std::min(kMaxInsertRows, inserts.size() - from);
    PgParams& params = add(MultiInsertSql(rows)).Int64(id);
    for (size_t k = from; k < from + rows; ++k) {
      const Planned& plan = planned[inserts[k]];
      params.Bytes(plan.pk).Bytes(plan.rk).Int64(plan.ts).Bytes(plan.props);
    }
    op_of.push_back(kGrouped);
  }
  add("COMMIT");
  size_t failed = 0;
  s = c->Pipeline(stmts, &results, &failed, &sqlstate);
  if (!s.ok()) {
    if (failed < op_of.size() && sqlstate == kPgUniqueViolation) {
      *retry = true;
      if (op_of[failed] == kGrouped) {
        *group_inserts = false;
        return refuse(0, Status::Busy("concurrent insert"));
      }
      const size_t op = op_of[failed];
      if (ops[op].kind == WriteKind::kInsert) {
        *retry = false;
        return refuse(op, Status::AlreadyExists());
      }
      return refuse(op, Status::Busy("concurrent insert"));
    }
    // Known not done: the connection still answers (the database reported
    // the failure, the COMMIT's included), or the database refused a write
    // before the COMMIT, which it then skipped.
    const bool refused = !c->Broken() || (failed + 1 < stmts.size() && !sqlstate.empty());
    if (!refused) {
      // The COMMIT was sent and no answer came: it may have taken effect.
      switch (ResolveLostCommit(sent)) {
        case CommitOutcome::kCommitted:
          s = Status::Ok();
          break;
        case CommitOutcome::kAborted:
          s = Status::Busy(s.message() + "; the transaction was rolled back");
          break;
        case CommitOutcome::kUnknown:
          s = Status::OutcomeUnknown(s.message() + "; whether it committed is not known");
          break;
      }
    }
    if (!s.ok()) return db_error(s);
  }
  if (result != nullptr) result->timestamps = std::move(timestamps);
  return Status::Ok();
}

PostgresStore::CommitOutcome PostgresStore::ResolveLostCommit(const SentCommit& sent) {
  const CommitOutcome outcome = [&] {
    if (sent.xid < 0) return CommitOutcome::kUnknown;
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + options_.outcome_timeout;
    std::unique_ptr<PgConnection> c;
    Status s = pool_.OpenUnpooled("", options_.outcome_timeout, &c);
    // Another host (a promoted standby) cannot speak for this transaction.
    if (!s.ok() || c->HostPort() != sent.host_port) return CommitOutcome::kUnknown;
    // Signals the backend only while it still runs this transaction (a pid
    // may be reused); backend_xid is the id without its epoch.
    auto signal_backend = [&](std::string_view function) {
      const std::string sql = std::string("SELECT ") + std::string(function) +
                              "(pid) FROM pg_stat_activity WHERE pid = $1 AND "
                              "backend_xid::text::int8 = $2";
      return c->Exec(sql, PgParams().Int64(sent.pid).Int64(sent.xid & 0xffffffff));
    };
    // A statement waiting for a lock or for a synchronous standby's
    // acknowledgement ends: the transaction aborts, or (waiting for the
    // standby) stays committed locally.
    s = signal_backend("pg_cancel_backend");
    bool terminated = false;
    while (s.ok()) {
      PgResult r;
      s = c->Exec("SELECT txid_status($1)", PgParams().Int64(sent.xid), &r);
      if (!s.ok() || r.rows() != 1 || r.IsNull(0, 0)) break;
      const std::string_view status = r.View(0, 0);
      if (status == "committed") return CommitOutcome::kCommitted;
      if (status == "aborted") return CommitOutcome::kAborted;
      // In progress: the backend has not acted on the cancel yet (or is in
      // a step that defers it). Past half the time it is terminated.
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) break;
      if (!terminated && now >= start + options_.outcome_timeout / 2) {
        terminated = true;
        s = signal_backend("pg_terminate_backend");
      }
      std::this_thread::sleep_for(kLostCommitPoll);
    }
    return CommitOutcome::kUnknown;
  }();
  switch (outcome) {
    case CommitOutcome::kCommitted:
      lost_committed_.fetch_add(1, std::memory_order_relaxed);
      break;
    case CommitOutcome::kAborted:
      lost_aborted_.fetch_add(1, std::memory_order_relaxed);
      break;
    case CommitOutcome::kUnknown:
      lost_unknown_.fetch_add(1, std::memory_order_relaxed);
      break;
  }
  return outcome;
}

Status PostgresStore::Apply(const std::string& account, const std::string& table,
                            const std::vector<WriteOp>& ops, ApplyResult* result,
                            ApplyError* error) {
  Timed timed(this);
  bool group_inserts = true;
  for (int attempt = 0;;) {
    PgLease c(&pool_);
    if (!c.status().ok()) {
      if (error != nullptr) *error = ApplyError{c.status(), 0};
      return c.status();
    }
    bool retry = false;
    const bool grouped = group_inserts;
    Status s = ApplyOnce(c.get(), account, table, ops, result, error, &group_inserts, &retry);
    if (s.ok() || !retry) return s;
    c->RollbackIfActive();
    // Statement by statement, to name the insert that met a row: not a retry.
    if (grouped && !group_inserts) continue;
    if (attempt++ >= options_.max_retries) return s;
    retries_.fetch_add(1, std::memory_order_relaxed);
  }
}

Result<std::vector<std::string>> PostgresStore::ExplainScanForTesting(const std::string& account,
                                                                      const std::string& table,
                                                                      const KeyRange& range) {
  PgLease c(&pool_);
  if (!c.status().ok()) return c.status();
  int64_t id = 0;
  Status s = PgLookupTable(c.get(), account, table, &id, /*lock=*/false);
  if (!s.ok()) return s;
  std::vector<std::string> keys;
  PgParams params;
  const std::string sql = ScanSql(id, range.lower, range.upper, 100, &keys, &params);
  PgResult r;
  s = c->Exec("EXPLAIN " + sql, params, &r);
  if (!s.ok()) return s;
  std::vector<std::string> plan;
  for (int i = 0; i < r.rows(); ++i) plan.emplace_back(r.View(i, 0));
  return plan;
}

}  // namespace cerulean::storage
