// PgConnection: one libpq connection with its prepared statements, and
// PgPool, the connections a PostgresStore shares between threads. Values are
// always bound (PQexecPrepared), never spliced into SQL text; results come
// in binary format.
// Thread-safety: a PgConnection is used by one thread at a time (a PgLease
// hands it out); PgPool is thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "storage/status.h"

struct pg_conn;
struct pg_result;

namespace cerulean::storage {

// Bound parameters of one statement, with their types (which also make the
// statement's text valid where a parameter is not referenced).
class PgParams {
 public:
  PgParams() = default;
  // Movable, not copyable: values_ point into owned_ (whose elements a
  // move does not relocate).
  PgParams(PgParams&&) = default;
  PgParams& operator=(PgParams&&) = default;
  PgParams(const PgParams&) = delete;
  PgParams& operator=(const PgParams&) = delete;

  // A text value (viewed: must outlive the statement's execution).
  PgParams& Text(std::string_view v);
  // A bytea value (viewed likewise).
  PgParams& Bytes(std::string_view v);
  PgParams& Int64(int64_t v);
  // An unused slot of bytea type (SQL NULL).
  PgParams& NullBytes();

  size_t size() const { return values_.size(); }

 private:
  friend class PgConnection;
  void Add(const char* data, size_t len, int format, unsigned oid);
  std::vector<const char*> values_;
  std::vector<int> lengths_;
  std::vector<int> formats_;
  std::vector<unsigned> types_;
  std::deque<std::string> owned_;  // int64 texts; a deque keeps their addresses
};

// The result of one statement; rows in binary format.
class PgResult {
 public:
  PgResult() = default;
  ~PgResult();
  PgResult(const PgResult&) = delete;
  PgResult& operator=(const PgResult&) = delete;
  PgResult(PgResult&& other) noexcept;
  PgResult& operator=(PgResult&& other) noexcept;

  int rows() const;
  bool IsNull(int row, int col) const;
  // Raw bytes of a text or bytea column, valid while this result lives.
  std::string_view View(int row, int col) const;
  // An int8 column (binary: 8 bytes big-endian).
  int64_t Int64(int row, int col) const;
  // A bool column (binary: 1 byte).
  bool Bool(int row, int col) const;
  // Rows changed by INSERT/UPDATE/DELETE.
  int64_t Affected() const;

 private:
  friend class PgConnection;
  pg_result* res_ = nullptr;
};

// One statement of a pipeline (PgConnection::Pipeline).
struct PgStatement {
  std::string_view sql;  // viewed: must outlive the pipeline
  PgParams params;       // prepared on first use, like Exec; none: sent unprepared
};

class PgConnection {
 public:
  // Connects to `url` (a libpq connection string or postgresql:// URL) and,
  // if `schema` is not empty, sets the search_path to it.
  static Status Open(const std::string& url, const std::string& schema,
                     std::unique_ptr<PgConnection>* out);
  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // Runs `sql` as a prepared statement (prepared on first use on this
  // connection) with `params`. On failure *sqlstate (if given) holds the
  // SQLSTATE ("" when the connection itself failed).
  Status Exec(std::string_view sql, const PgParams& params, PgResult* out = nullptr,
              std::string* sqlstate = nullptr);
  // Runs `stmts` in order in one round trip (libpq pipeline mode):
  // `results` gets one result per statement. A statement that fails makes
  // the database skip the rest (an open transaction is then aborted and
  // rolled back when the lease ends); *failed is its index, *sqlstate its
  // SQLSTATE. Like Exec, retried once on a fresh connection if the first
  // use of a lease finds the connection dropped.
  Status Pipeline(const std::vector<PgStatement>& stmts, std::vector<PgResult>* results,
                  size_t* failed = nullptr, std::string* sqlstate = nullptr);
  // A value the caller memoised on this connection (a table's id), to be
  // re-validated inside the transaction that uses it; null if none.
  const int64_t* Memo(std::string_view key) const;
  void SetMemo(std::string_view key, int64_t value);
  // Runs a parameterless command (BEGIN, COMMIT, DDL) as plain text.
  Status Command(const std::string& sql, std::string* sqlstate = nullptr);
  // Ends the open transaction, if any, discarding its changes (sent
  // without waiting; the next statement settles it first).
  void RollbackIfActive();

  // The connection is gone (server restart, network): the pool drops it.
  bool Broken() const;
  // True until this lease's first statement ran: a statement that fails on
  // a broken connection then is retried once on a fresh one (nothing of
  // the lease's work can have been lost).
  void StartLease() { fresh_ = true; }

 private:
  PgConnection() = default;
  Status Reconnect();
  // Collects the answer to a ROLLBACK that RollbackIfActive sent; drops the
  // connection (Broken()) if the transaction did not end.
  void Settle();
  Status Fail(pg_result* res, std::string_view what, std::string* sqlstate);
  // The first statement of a lease finds out that the database dropped the
  // connection while it sat in the pool: then the connection is re-opened and
  // the statement tried once more. True iff the caller should retry; frees
  // *res and sets it to null whenever it reconnects (Fail then reports the
  // connection's own error).
  bool ReopenForRetry(bool fresh, int attempt, pg_result** res);
  // One attempt of Pipeline; a connection found out of step with the server
  // is dropped (Broken() is then true).
  Status PipelineOnce(const std::vector<PgStatement>& stmts, std::vector<PgResult>* results,
                      size_t* failed, std::string* sqlstate);
  pg_conn* conn_ = nullptr;
  uint64_t next_statement_ = 0;  // names s0, s1, ... of prepared statements
  std::string url_, schema_;
  bool fresh_ = false;
  bool rollback_sent_ = false;  // its answer not yet read
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // SQL text -> statement name.
  std::unordered_map<std::string, std::string, Hash, std::equal_to<>> prepared_;
  std::unordered_map<std::string, int64_t, Hash, std::equal_to<>> memo_;
};

// Up to `size` connections, opened as threads need them; a broken one is
// dropped when returned, so the next lease opens a fresh one.
class PgPool {
 public:
  PgPool(std::string url, std::string schema, size_t size);
  ~PgPool();
  // A connection, waiting while all `size` are in use. kBusy if none is
  // idle and opening one fails (the database is down).
  Status Acquire(std::unique_ptr<PgConnection>* out);
  void Release(std::unique_ptr<PgConnection> conn);

  // Metrics: connections open and in use, and acquisitions that waited.
  size_t open() const;
  size_t in_use() const;
  uint64_t waits() const;

 private:
  const std::string url_, schema_;
  const size_t size_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<PgConnection>> idle_;  // guarded by mu_
  size_t open_ = 0;                                  // guarded by mu_ (incl. openings under way)
  size_t in_use_ = 0;                                // guarded by mu_
  uint64_t waits_ = 0;                               // guarded by mu_
};

// A pooled connection for one operation; returned to the pool (rolled back
// if a transaction was left open) when the lease ends.
class PgLease {
 public:
  explicit PgLease(PgPool* pool) : pool_(pool) {
    status_ = pool_->Acquire(&conn_);
    if (conn_) conn_->StartLease();
  }
  ~PgLease() {
    if (conn_) {
      conn_->RollbackIfActive();
      pool_->Release(std::move(conn_));
    }
  }
  PgLease(const PgLease&) = delete;
  PgLease& operator=(const PgLease&) = delete;
  const Status& status() const { return status_; }
  PgConnection* operator->() const { return conn_.get(); }
  PgConnection* get() const { return conn_.get(); }

 private:
  PgPool* pool_;
  std::unique_ptr<PgConnection> conn_;
  Status status_;
};

// SQLSTATEs the store acts on.
inline constexpr std::string_view kPgUniqueViolation = "23505";
// True for a transaction the database gave up that may simply be run again
// (serialization failure, deadlock).
bool PgRetryable(std::string_view sqlstate);

}  // namespace cerulean::storage
