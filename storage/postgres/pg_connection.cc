#include "storage/postgres/pg_connection.h"

#include <dlfcn.h>
#include <libpq-fe.h>

#include <cstring>
#include <utility>

namespace cerulean::storage {

namespace {

// libpq is loaded when the first connection opens (dlopen), not linked: it
// and the ~25 libraries it needs (GnuTLS, Kerberos, LDAP, ...) cost the
// dynamic loader ~18M cycles at every start (LD_DEBUG=statistics), which a
// server on the default SQLite store would pay for nothing.
// clang-format off
#define CERULEAN_LIBPQ_FUNCTIONS(X)                                                         \
  X(PQclear) X(PQcmdTuples) X(PQconnectdbParams) X(PQerrorMessage) X(PQescapeIdentifier) \
  X(PQexec) X(PQexecPrepared) X(PQfinish) X(PQfreemem) X(PQgetisnull) X(PQgetlength)     \
  X(PQgetvalue) X(PQntuples) X(PQprepare) X(PQresultErrorField) X(PQresultErrorMessage)  \
  X(PQresultStatus) X(PQsetNoticeProcessor) X(PQstatus) X(PQtransactionStatus)          \
  X(PQenterPipelineMode) X(PQexitPipelineMode) X(PQpipelineSync) X(PQgetResult)         \
  X(PQsendPrepare) X(PQsendQueryPrepared) X(PQsendQueryParams) X(PQsendQuery)
// clang-format on

struct LibPq {
#define CERULEAN_DECLARE(f) decltype(&::f) f = nullptr;
  CERULEAN_LIBPQ_FUNCTIONS(CERULEAN_DECLARE)
#undef CERULEAN_DECLARE
  std::string error;  // why it could not be loaded; empty when loaded
};

const LibPq& Pq() {
  static const LibPq lib = [] {
    LibPq l;
    void* handle = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      l.error = std::string("cannot load libpq.so.5 (Debian package libpq5): ") +
                (why != nullptr ? why : "");
      return l;
    }
#define CERULEAN_LOAD(f)                                     \
  l.f = reinterpret_cast<decltype(&::f)>(dlsym(handle, #f)); \
  if (l.f == nullptr && l.error.empty()) l.error = "libpq.so.5 has no " #f;
    CERULEAN_LIBPQ_FUNCTIONS(CERULEAN_LOAD)
#undef CERULEAN_LOAD
    return l;
  }();
  return lib;
}

// Type OIDs (pg_type.h): persistent in every PostgreSQL-protocol server.
constexpr unsigned kByteaOid = 17;
constexpr unsigned kInt8Oid = 20;
constexpr unsigned kTextOid = 25;

// SQLSTATE classes and codes that mean the database is unreachable or going
// away rather than refusing this statement: 08 connection exceptions,
// 57P01-57P03 (admin shutdown, crash shutdown, cannot connect now).
bool Unavailable(std::string_view sqlstate) {
  return sqlstate.substr(0, 2) == "08" || sqlstate == "57P01" || sqlstate == "57P02" ||
         sqlstate == "57P03";
}

std::string Trim(const char* msg) {
  std::string s = msg != nullptr ? msg : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}
}  // namespace

bool PgRetryable(std::string_view sqlstate) { return sqlstate == "40001" || sqlstate == "40P01"; }

void PgParams::Add(const char* data, size_t len, int format, unsigned oid) {
  values_.push_back(data);
  lengths_.push_back(static_cast<int>(len));
  formats_.push_back(format);
  types_.push_back(oid);
}

PgParams& PgParams::Text(std::string_view v) {
  static const char kEmpty = 0;
  Add(v.empty() ? &kEmpty : v.data(), v.size(), 1, kTextOid);
  return *this;
}

PgParams& PgParams::Bytes(std::string_view v) {
  static const char kEmpty = 0;
  Add(v.empty() ? &kEmpty : v.data(), v.size(), 1, kByteaOid);
  return *this;
}

PgParams& PgParams::Int64(int64_t v) {
  owned_.push_back(std::to_string(v));
  Add(owned_.back().c_str(), owned_.back().size(), 0, kInt8Oid);
  return *this;
}

PgParams& PgParams::NullBytes() {
  Add(nullptr, 0, 1, kByteaOid);
  return *this;
}

PgResult::~PgResult() {
  if (res_ != nullptr) Pq().PQclear(res_);
}
PgResult::PgResult(PgResult&& other) noexcept : res_(std::exchange(other.res_, nullptr)) {}
PgResult& PgResult::operator=(PgResult&& other) noexcept {
  if (this != &other) {
    if (res_ != nullptr) Pq().PQclear(res_);
    res_ = std::exchange(other.res_, nullptr);
  }
  return *this;
}

int PgResult::rows() const { return res_ != nullptr ? Pq().PQntuples(res_) : 0; }
bool PgResult::IsNull(int row, int col) const { return Pq().PQgetisnull(res_, row, col) != 0; }
std::string_view PgResult::View(int row, int col) const {
  return std::string_view(Pq().PQgetvalue(res_, row, col),
                          static_cast<size_t>(Pq().PQgetlength(res_, row, col)));
}
int64_t PgResult::Int64(int row, int col) const {
  const auto* p = reinterpret_cast<const unsigned char*>(Pq().PQgetvalue(res_, row, col));
  if (Pq().PQgetlength(res_, row, col) != 8) return 0;
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return static_cast<int64_t>(v);
}
bool PgResult::Bool(int row, int col) const {
  return Pq().PQgetlength(res_, row, col) == 1 && Pq().PQgetvalue(res_, row, col)[0] != 0;
}
int64_t PgResult::Affected() const {
  const char* n = res_ != nullptr ? Pq().PQcmdTuples(res_) : "";
  return *n != '\0' ? std::strtoll(n, nullptr, 10) : 0;
}

Status PgConnection::Open(const std::string& url, const std::string& schema,
                          std::unique_ptr<PgConnection>* out) {
  std::unique_ptr<PgConnection> c(new PgConnection());
  c->url_ = url;
  c->schema_ = schema;
  Status s = c->Reconnect();
  if (!s.ok()) return s;
  *out = std::move(c);
  return Status::Ok();
}

PgConnection::~PgConnection() {
  if (conn_ != nullptr) Pq().PQfinish(conn_);
}

Status PgConnection::Reconnect() {
  if (!Pq().error.empty()) return Status::IOError(Pq().error);
  if (conn_ != nullptr) Pq().PQfinish(conn_);
  prepared_.clear();
  memo_.clear();
  rollback_sent_ = false;
  // connect_timeout bounds a connection attempt to an unreachable host (the
  // default waits as long as TCP does); a URL's own setting wins.
  const char* keys[] = {"dbname", "connect_timeout", "application_name", nullptr};
  const char* values[] = {url_.c_str(), "5", "cerulean", nullptr};
  conn_ = Pq().PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (conn_ == nullptr || Pq().PQstatus(conn_) != CONNECTION_OK) {
    std::string msg = conn_ != nullptr ? Trim(Pq().PQerrorMessage(conn_)) : "out of memory";
    return Status::Busy("database unavailable: " + msg);
  }
  // NOTICEs (e.g. "relation already exists, skipping") are not errors.
  Pq().PQsetNoticeProcessor(
      conn_, [](void*, const char*) {}, nullptr);
  // Every scan reads a key range in key order, usually up to a LIMIT; a
  // bitmap scan would read and sort the whole range first, and PostgreSQL's
  // planner picks one when the range is about as large as the LIMIT. A
  // server without the setting (CockroachDB, YugabyteDB's own planner)
  // refuses it, which changes nothing.
  static_cast<void>(Command("SET enable_bitmapscan = off"));
  if (!schema_.empty()) {
    char* ident = Pq().PQescapeIdentifier(conn_, schema_.c_str(), schema_.size());
    if (ident == nullptr) return Status::InvalidArgument("bad schema name " + schema_);
    std::string sql = std::string("SET search_path TO ") + ident;
    Pq().PQfreemem(ident);
    Status s = Command(sql);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

bool PgConnection::Broken() const {
  return conn_ == nullptr || Pq().PQstatus(conn_) != CONNECTION_OK;
}

Status PgConnection::Fail(PGresult* res, std::string_view what, std::string* sqlstate) {
  const char* state = res != nullptr ? Pq().PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
  std::string code = state != nullptr ? state : "";
  std::string msg =
      std::string(what) + ": " +
      (res != nullptr ? Trim(Pq().PQresultErrorMessage(res)) : Trim(Pq().PQerrorMessage(conn_)));
  if (res != nullptr) Pq().PQclear(res);
  if (sqlstate != nullptr) *sqlstate = code;
  if (Broken() || Unavailable(code)) return Status::Busy("database unavailable: " + msg);
  if (PgRetryable(code)) return Status::Busy(msg);
  return Status::IOError(msg);
}

bool PgConnection::ReopenForRetry(bool fresh, int attempt, PGresult** res) {
  if (!fresh || attempt != 0 || !Broken()) return false;
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
    auto it = prepared_.find(sql);
    PGresult* res = nullptr;
    if (it == prepared_.end()) {
      std::string name = "s" + std::to_string(next_statement_++);
      res = Pq().PQprepare(conn_, name.c_str(), std::string(sql).c_str(),
                           static_cast<int>(params.size()), params.types_.data());
      if (res == nullptr || Pq().PQresultStatus(res) != PGRES_COMMAND_OK) {
        if (ReopenForRetry(fresh, attempt, &res)) continue;
        return Fail(res, "prepare", sqlstate);
      }
      Pq().PQclear(res);
      it = prepared_.emplace(std::string(sql), std::move(name)).first;
    }
    res = Pq().PQexecPrepared(conn_, it->second.c_str(), static_cast<int>(params.size()),
                              params.values_.data(), params.lengths_.data(), params.formats_.data(),
                              /*resultFormat=*/1);
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
  // Each command's result is followed by a null; the sync by none.
  auto next = [&]() -> PGresult* {
    PGresult* r = Pq().PQgetResult(conn_);
    if (r != nullptr && Pq().PQresultStatus(r) != PGRES_PIPELINE_SYNC) {
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
    PGresult* r = Pq().PQgetResult(conn_);
    lost = r == nullptr || Pq().PQresultStatus(r) != PGRES_PIPELINE_SYNC;
    if (r != nullptr) Pq().PQclear(r);
  }
  for (size_t i = confirmed; i < new_prepares.size(); ++i) prepared_.erase(new_prepares[i]);
  if (lost || Pq().PQexitPipelineMode(conn_) != 1) {
    // Out of step with the server: drop the connection (Broken() is then
    // true and the pool opens a fresh one).
    if (error != nullptr) Pq().PQclear(error);
    Status s = Fail(nullptr, "pipeline", sqlstate);
    Pq().PQfinish(conn_);
    conn_ = nullptr;
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
    memo_.emplace(std::string(key), value);
  }
}

Status PgConnection::Command(const std::string& sql, std::string* sqlstate) {
  Settle();
  for (int attempt = 0;; ++attempt) {
    const bool fresh = std::exchange(fresh_, false);
    PGresult* res = Pq().PQexec(conn_, sql.c_str());
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
    // its request no round trip.
    if (Pq().PQsendQuery(conn_, "ROLLBACK") == 1) {
      rollback_sent_ = true;
    } else {
      Pq().PQfinish(conn_);
      conn_ = nullptr;
    }
  }
}

void PgConnection::Settle() {
  if (!rollback_sent_) return;
  rollback_sent_ = false;
  if (conn_ == nullptr) return;
  bool ok = true;
  while (PGresult* r = Pq().PQgetResult(conn_)) {
    ok = ok && Pq().PQresultStatus(r) == PGRES_COMMAND_OK;
    Pq().PQclear(r);
  }
  if (!ok || Pq().PQtransactionStatus(conn_) != PQTRANS_IDLE) {
    // A transaction that may still be open must not reach the next user.
    Pq().PQfinish(conn_);
    conn_ = nullptr;
  }
}

PgPool::PgPool(std::string url, std::string schema, size_t size)
    : url_(std::move(url)), schema_(std::move(schema)), size_(size < 1 ? 1 : size) {}

PgPool::~PgPool() = default;

Status PgPool::Acquire(std::unique_ptr<PgConnection>* out) {
  std::unique_lock<std::mutex> lock(mu_);
  bool waited = false;
  while (idle_.empty() && open_ >= size_) {
    waited = true;
    cv_.wait(lock);
  }
  if (waited) ++waits_;
  if (!idle_.empty()) {
    *out = std::move(idle_.back());
    idle_.pop_back();
    ++in_use_;
    return Status::Ok();
  }
  ++open_;
  lock.unlock();
  std::unique_ptr<PgConnection> conn;
  Status s = PgConnection::Open(url_, schema_, &conn);
  lock.lock();
  if (!s.ok()) {
    --open_;
    cv_.notify_one();
    return s;
  }
  ++in_use_;
  *out = std::move(conn);
  return Status::Ok();
}

void PgPool::Release(std::unique_ptr<PgConnection> conn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --in_use_;
    if (conn->Broken()) {
      --open_;
    } else {
      idle_.push_back(std::move(conn));
    }
  }
  cv_.notify_one();
}

size_t PgPool::open() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_;
}
size_t PgPool::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}
uint64_t PgPool::waits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waits_;
}

}  // namespace cerulean::storage
