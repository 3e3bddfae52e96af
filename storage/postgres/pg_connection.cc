#include "storage/postgres/pg_connection.h"

#include <algorithm>
#include <utility>

#include "storage/platform.h"
#include "storage/postgres/libpq_api.h"

namespace cerulean::storage {

namespace {

// A read-only transaction: the connection reached a standby (the host it
// opened on was demoted): it is dropped, and the next one finds the primary
// (target_session_attrs=read-write).
constexpr std::string_view kPgReadOnly = "25006";

// SQLSTATE classes and codes that mean the database is unreachable or going
// away rather than refusing this statement: 08 connection exceptions,
// 57P01-57P03 (admin shutdown, crash shutdown, cannot connect now), and a
// standby where the primary was.
bool Unavailable(std::string_view sqlstate) {
  return sqlstate.substr(0, 2) == "08" || sqlstate == "57P01" || sqlstate == "57P02" ||
         sqlstate == "57P03" || sqlstate == kPgReadOnly;
}

// How often a round trip in flight looks whether its pool gave the
// connection up (PgPool::Invalidate).
constexpr std::chrono::milliseconds kInvalidationCheck{100};
}  // namespace

bool PgRetryable(std::string_view sqlstate) { return sqlstate == "40001" || sqlstate == "40P01"; }

Status PgConnection::Open(const PgConnInfo& info, const PgConnectionOptions& options,
                          std::unique_ptr<PgConnection>* out) {
  std::unique_ptr<PgConnection> c(new PgConnection());
  c->info_ = &info;
  c->options_ = options;
  c->timeout_ = options.round_trip_timeout;
  Status s = c->Reconnect();
  if (!s.ok()) return s;
  *out = std::move(c);
  return Status::Ok();
}

Status PgConnection::Open(const std::string& url, const std::string& schema,
                          std::unique_ptr<PgConnection>* out) {
  auto info = std::make_unique<PgConnInfo>();
  Status s = PgConnInfo::Parse(url, info.get());
  if (!s.ok()) return s;
  PgConnectionOptions options;
  options.schema = schema;
  std::unique_ptr<PgConnection> c;
  s = Open(*info, options, &c);
  if (!s.ok()) return s;
  c->own_info_ = std::move(info);
  *out = std::move(c);
  return Status::Ok();
}

PgConnection::~PgConnection() {
  // Non-blocking: the goodbye message is sent if the socket takes it.
  if (conn_ != nullptr) Pq().PQfinish(conn_);
}

Status PgConnection::Reconnect() {
  if (!Pq().error.empty()) return Status::IOError(Pq().error);
  if (conn_ != nullptr) Pq().PQfinish(conn_);
  conn_ = nullptr;
  prepared_.clear();
  memo_.clear();
  rollback_sent_ = false;
  timed_out_ = false;
  last_error_.clear();
  if (options_.generation_source != nullptr) {
    options_.generation = options_.generation_source->load(std::memory_order_acquire);
  }
  std::vector<std::string> storage;
  std::vector<const char*> keys, values;
  info_->Arrays(options_.first_host_source != nullptr
                    ? options_.first_host_source->load(std::memory_order_relaxed)
                    : 0,
                &storage, &keys, &values);
  // Blocking, bounded by connect_timeout per host (libpq moves on to the
  // next host when one's time is up).
  PGconn* conn = Pq().PQconnectdbParams(keys.data(), values.data(), /*expand_dbname=*/0);
  if (conn == nullptr || Pq().PQstatus(conn) != CONNECTION_OK) {
    last_error_ = conn != nullptr ? PqMessage(Pq().PQerrorMessage(conn)) : "out of memory";
    if (conn != nullptr) Pq().PQfinish(conn);
    return Status::Busy("database unavailable: " + last_error_);
  }
  conn_ = conn;
  // From here on nothing waits in libpq: sends queue what the socket does not
  // take, and Await() waits with a deadline.
  if (Pq().PQsetnonblocking(conn_, 1) != 0) {
    Drop("cannot enter non-blocking mode", false);
    return Status::Busy("database unavailable: " + last_error_);
  }
  host_index_ = info_->IndexOf(Pq().PQhost(conn_), Pq().PQport(conn_));
  // NOTICEs (e.g. "relation already exists, skipping") are not errors.
  Pq().PQsetNoticeProcessor(
      conn_, [](void*, const char*) {}, nullptr);
  // Every scan reads a key range in key order, usually up to a LIMIT; a
  // bitmap scan would read and sort the whole range first, and PostgreSQL's
  // planner picks one when the range is about as large as the LIMIT. A
  // server without the setting (CockroachDB, YugabyteDB's own planner)
  // refuses it, which changes nothing.
  static_cast<void>(Command("SET enable_bitmapscan = off"));
  if (!options_.schema.empty() && conn_ != nullptr) {
    char* ident = Pq().PQescapeIdentifier(conn_, options_.schema.c_str(), options_.schema.size());
    if (ident == nullptr) return Status::InvalidArgument("bad schema name " + options_.schema);
    std::string sql = std::string("SET search_path TO ") + ident;
    Pq().PQfreemem(ident);
    Status s = Command(sql);
    if (!s.ok()) return s;
  }
  if (Broken()) return Status::Busy("database unavailable: " + last_error_);
  return Status::Ok();
}

bool PgConnection::Broken() const {
  return conn_ == nullptr || Pq().PQstatus(conn_) != CONNECTION_OK;
}

void PgConnection::StartLease(PgDeadline deadline) {
  fresh_ = true;
  timeout_ = deadline == PgDeadline::kLong ? options_.long_round_trip_timeout
                                           : options_.round_trip_timeout;
}

std::string PgConnection::HostPort() const {
  if (conn_ == nullptr) return "";
  return std::string(Pq().PQhost(conn_)) + ":" + Pq().PQport(conn_);
}

void PgConnection::Drop(std::string why, bool timed_out) {
  if (conn_ == nullptr) return;
  Pq().PQfinish(conn_);
  conn_ = nullptr;
  last_error_ = std::move(why);
  timed_out_ = timed_out;
}

std::chrono::steady_clock::time_point PgConnection::Deadline() const {
  return std::chrono::steady_clock::now() + timeout_;
}

bool PgConnection::Await(std::chrono::steady_clock::time_point deadline) {
  if (conn_ == nullptr) return false;
  for (;;) {
    const int flushed = Pq().PQflush(conn_);  // 0: all sent; 1: some still queued
    if (flushed < 0) {
      Drop(PqMessage(Pq().PQerrorMessage(conn_)), false);
      return false;
    }
    if (flushed == 0 && Pq().PQisBusy(conn_) == 0) return true;
    if (options_.generation_source != nullptr &&
        options_.generation_source->load(std::memory_order_acquire) != options_.generation) {
      Drop("the database stopped answering", true);
      return false;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      Drop("no answer within " + std::to_string(timeout_.count()) + " ms", true);
      return false;
    }
    auto wait = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
    if (options_.generation_source != nullptr) wait = std::min(wait, kInvalidationCheck);
    bool readable = false;
    std::string error;
    if (!WaitForSocket(Pq().PQsocket(conn_), flushed == 1, static_cast<int>(wait.count()),
                       &readable, &error)) {
      Drop(error, false);
      return false;
    }
    // Read what came (an answer, an error, the end of the connection); a
    // write that waits for room may also wait for the server to be read.
    if (readable && Pq().PQconsumeInput(conn_) == 0) {
      Drop(PqMessage(Pq().PQerrorMessage(conn_)), false);
      return false;
    }
  }
}

PGresult* PgConnection::Collect(std::chrono::steady_clock::time_point deadline) {
  PGresult* last = nullptr;
  for (;;) {
    if (!Await(deadline)) {
      if (last != nullptr) Pq().PQclear(last);
      return nullptr;
    }
    PGresult* r = Pq().PQgetResult(conn_);
    if (r == nullptr) return last;
    if (last != nullptr) Pq().PQclear(last);
    last = r;
  }
}

Status PgConnection::Fail(PGresult* res, std::string_view what, std::string* sqlstate) {
  const char* state = res != nullptr ? Pq().PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
  std::string code = state != nullptr ? state : "";
  std::string detail = res != nullptr     ? PqMessage(Pq().PQresultErrorMessage(res))
                       : conn_ != nullptr ? PqMessage(Pq().PQerrorMessage(conn_))
                                          : last_error_;
  std::string msg = std::string(what) + ": " + detail;
  if (res != nullptr) Pq().PQclear(res);
  if (sqlstate != nullptr) *sqlstate = code;
  if (code == kPgReadOnly) Drop(detail, false);
  if (Broken() || Unavailable(code)) return Status::Busy("database unavailable: " + msg);
  if (PgRetryable(code)) return Status::Busy(msg);
  return Status::IOError(msg);
}

bool PgConnection::ReopenForRetry(bool fresh, int attempt, PGresult** res) {
  if (!fresh || attempt != 0 || !Broken() || timed_out_) return false;
  if (*res != nullptr) {
    Pq().PQclear(*res);
    *res = nullptr;
  }
  return Reconnect().ok();
}

Status PgConnection::Exec(std::string_view sql, const PgParams& params, PgResult* out,
                          std::string* sqlstate) {
  Settle();
  for (int attempt = 0;; ++attempt) {
    const bool fresh = std::exchange(fresh_, false);
    PGresult* res = nullptr;
    if (conn_ == nullptr) {
      if (ReopenForRetry(fresh, attempt, &res)) continue;
      return Fail(nullptr, "statement", sqlstate);
    }
    auto it = prepared_.find(sql);
    if (it == prepared_.end()) {
      std::string name = "s" + std::to_string(next_statement_++);
      if (Pq().PQsendPrepare(conn_, name.c_str(), std::string(sql).c_str(),
                             static_cast<int>(params.size()), params.types_.data()) == 1) {
        res = Collect(Deadline());
      }
      if (res == nullptr || Pq().PQresultStatus(res) != PGRES_COMMAND_OK) {
        if (ReopenForRetry(fresh, attempt, &res)) continue;
        return Fail(res, "prepare", sqlstate);
      }
      Pq().PQclear(res);
      res = nullptr;
      it = prepared_.emplace(std::string(sql), std::move(name)).first;
    }
    if (Pq().PQsendQueryPrepared(conn_, it->second.c_str(), static_cast<int>(params.size()),
                                 params.values_.data(), params.lengths_.data(),
                                 params.formats_.data(), /*resultFormat=*/1) == 1) {
      res = Collect(Deadline());
    }
    ExecStatusType st = res != nullptr ? Pq().PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
      if (out != nullptr) {
        if (out->res_ != nullptr) Pq().PQclear(out->res_);
        out->res_ = res;
      } else {
        Pq().PQclear(res);
      }
      return Status::Ok();
    }
    if (ReopenForRetry(fresh, attempt, &res)) continue;
    return Fail(res, "statement", sqlstate);
  }
}

Status PgConnection::Pipeline(const std::vector<PgStatement>& stmts, std::vector<PgResult>* results,
                              size_t* failed, std::string* sqlstate) {
  Settle();
  size_t failed_at = stmts.size();
  for (int attempt = 0;; ++attempt) {
    const bool fresh = std::exchange(fresh_, false);
    Status s = PipelineOnce(stmts, results, &failed_at, sqlstate);
    PGresult* none = nullptr;
    if (!s.ok() && ReopenForRetry(fresh, attempt, &none)) continue;
    if (failed != nullptr) *failed = failed_at;
    return s;
  }
}

Status PgConnection::PipelineOnce(const std::vector<PgStatement>& stmts,
                                  std::vector<PgResult>* results, size_t* failed,
                                  std::string* sqlstate) {
  results->clear();
  results->resize(stmts.size());
  *failed = stmts.size();
  if (Broken()) return Fail(nullptr, "pipeline", sqlstate);
  // Statements prepared by this pipeline, in order; forgotten again unless
  // their preparation is confirmed.
  std::vector<std::string> new_prepares;
  std::vector<bool> prepared_here(stmts.size(), false);
  bool sent = Pq().PQenterPipelineMode(conn_) == 1;
  for (size_t i = 0; sent && i < stmts.size(); ++i) {
    const PgParams& p = stmts[i].params;
    const int n = static_cast<int>(p.size());
    if (n == 0) {
      sent = Pq().PQsendQueryParams(conn_, std::string(stmts[i].sql).c_str(), 0, nullptr, nullptr,
                                    nullptr, nullptr, /*resultFormat=*/1) == 1;
      continue;
    }
    auto it = prepared_.find(stmts[i].sql);
    if (it == prepared_.end()) {
      std::string name = "s" + std::to_string(next_statement_++);
      sent = Pq().PQsendPrepare(conn_, name.c_str(), std::string(stmts[i].sql).c_str(), n,
                                p.types_.data()) == 1;
      it = prepared_.emplace(std::string(stmts[i].sql), std::move(name)).first;
      new_prepares.push_back(it->first);
      prepared_here[i] = true;
    }
    if (sent) {
      sent = Pq().PQsendQueryPrepared(conn_, it->second.c_str(), n, p.values_.data(),
                                      p.lengths_.data(), p.formats_.data(),
                                      /*resultFormat=*/1) == 1;
    }
  }
  if (sent) sent = Pq().PQpipelineSync(conn_) == 1;
  // One deadline for the whole round trip.
  const auto deadline = Deadline();
  // Each command's result is followed by a null; the sync by none.
  auto next = [&]() -> PGresult* {
    if (!Await(deadline)) return nullptr;
    PGresult* r = Pq().PQgetResult(conn_);
    if (r != nullptr && Pq().PQresultStatus(r) != PGRES_PIPELINE_SYNC && Await(deadline)) {
      PGresult* end = Pq().PQgetResult(conn_);
      if (end != nullptr) Pq().PQclear(end);
    }
    return r;
  };
  PGresult* error = nullptr;  // the first failure's result
  bool lost = !sent;          // the connection's state is unknown
  size_t confirmed = 0;       // of new_prepares
  for (size_t i = 0; !lost && i < stmts.size(); ++i) {
    for (int step = prepared_here[i] ? 0 : 1; step < 2; ++step) {
      PGresult* r = next();
      ExecStatusType st = r != nullptr ? Pq().PQresultStatus(r) : PGRES_FATAL_ERROR;
      if (r == nullptr || st == PGRES_PIPELINE_SYNC) {
        lost = true;
        if (r != nullptr) Pq().PQclear(r);
        break;
      }
      if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
        if (step == 0) {
          ++confirmed;
          Pq().PQclear(r);
        } else {
          (*results)[i].res_ = r;
        }
      } else if (st == PGRES_PIPELINE_ABORTED || error != nullptr) {
        Pq().PQclear(r);
      } else {
        error = r;
        *failed = i;
      }
    }
  }
  if (!lost) {
    PGresult* r = Await(deadline) ? Pq().PQgetResult(conn_) : nullptr;
    lost = r == nullptr || Pq().PQresultStatus(r) != PGRES_PIPELINE_SYNC;
    if (r != nullptr) Pq().PQclear(r);
  }
  for (size_t i = confirmed; i < new_prepares.size(); ++i) prepared_.erase(new_prepares[i]);
  if (lost || conn_ == nullptr || Pq().PQexitPipelineMode(conn_) != 1) {
    // Out of step with the server: drop the connection (Broken() is then
    // true and the pool opens a fresh one).
    if (error != nullptr) Pq().PQclear(error);
    Status s = Fail(nullptr, "pipeline", sqlstate);
    Drop(last_error_.empty() && conn_ != nullptr ? PqMessage(Pq().PQerrorMessage(conn_))
                                                 : last_error_,
         false);
    if (s.code() == StatusCode::kBusy) return s;
    return Status::Busy("database unavailable: " + s.message());
  }
  if (error != nullptr) return Fail(error, "statement", sqlstate);
  return Status::Ok();
}

const int64_t* PgConnection::Memo(std::string_view key) const {
  auto it = memo_.find(key);
  return it != memo_.end() ? &it->second : nullptr;
}

void PgConnection::SetMemo(std::string_view key, int64_t value) {
  auto it = memo_.find(key);
  if (it != memo_.end()) {
    it->second = value;
  } else {
    if (memo_.size() >= kMaxMemos) memo_.clear();
    memo_.emplace(std::string(key), value);
  }
}

Status PgConnection::Command(const std::string& sql, std::string* sqlstate) {
  Settle();
  for (int attempt = 0;; ++attempt) {
    const bool fresh = std::exchange(fresh_, false);
    PGresult* res = nullptr;
    if (conn_ != nullptr && Pq().PQsendQuery(conn_, sql.c_str()) == 1) res = Collect(Deadline());
    ExecStatusType st = res != nullptr ? Pq().PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
      Pq().PQclear(res);
      return Status::Ok();
    }
    if (ReopenForRetry(fresh, attempt, &res)) continue;
    return Fail(res, sql, sqlstate);
  }
}

void PgConnection::RollbackIfActive() {
  Settle();
  if (conn_ == nullptr) return;
  PGTransactionStatusType t = Pq().PQtransactionStatus(conn_);
  if (t == PQTRANS_INTRANS || t == PQTRANS_INERROR) {
    // Sent, not awaited: the next statement on this connection collects
    // the answer (long there by then), so ending a read-only scan costs
    // its request no round trip. It must have left, though: a transaction
    // held open in the pool would keep its locks.
    if (Pq().PQsendQuery(conn_, "ROLLBACK") == 1 && Pq().PQflush(conn_) == 0) {
      rollback_sent_ = true;
    } else {
      Drop("could not send ROLLBACK", false);
    }
  }
}

void PgConnection::Settle() {
  if (!rollback_sent_) return;
  rollback_sent_ = false;
  if (conn_ == nullptr) return;
  PGresult* r = Collect(Deadline());
  const bool ok = r != nullptr && Pq().PQresultStatus(r) == PGRES_COMMAND_OK;
  if (r != nullptr) Pq().PQclear(r);
  if (conn_ != nullptr && (!ok || Pq().PQtransactionStatus(conn_) != PQTRANS_IDLE)) {
    // A transaction that may still be open must not reach the next user.
    Drop("ROLLBACK failed", false);
  }
}

}  // namespace cerulean::storage
