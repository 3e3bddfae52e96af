// PgConnection: one libpq connection with its prepared statements. Values are
// always bound (prepared statements), never spliced into SQL text; results
// come in binary format. Every round trip has a deadline: libpq runs in
// non-blocking mode and the answer is awaited with poll(), so a database that
// stops answering (a frozen host, a cut network: its kernel may still
// acknowledge TCP) costs a caller a bounded wait, then kBusy, never a hang.
// Thread-safety: a PgConnection is used by one thread at a time (a PgLease,
// storage/postgres/pg_pool.h, hands it out).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "storage/postgres/pg_result.h"
#include "storage/postgres/pg_url.h"
#include "storage/status.h"

struct pg_conn;
struct pg_result;

namespace cerulean::storage {

// One statement of a pipeline (PgConnection::Pipeline).
struct PgStatement {
  std::string_view sql;  // viewed: must outlive the pipeline
  PgParams params;       // prepared on first use, like Exec; none: sent unprepared
};

// How long a connection's round trips may wait for the database's answer.
enum class PgDeadline {
  kRequest,  // PgConnectionOptions::round_trip_timeout
  kLong,     // long_round_trip_timeout: snapshots, usage counts, reaping
};

struct PgConnectionOptions {
  // Schema for the search_path; empty: the connection's default.
  std::string schema;
  // A round trip (a statement, or a pipeline of them) not answered within
  // this is abandoned: the connection is closed (not cancelled: PQcancel
  // opens a connection to the same host, which may hang the same way) and
  // the call returns kBusy. A write whose COMMIT was sent may or may not
  // have happened then.
  std::chrono::milliseconds round_trip_timeout{5000};
  std::chrono::milliseconds long_round_trip_timeout{300000};
  // If set, each (re)connection tries the hosts starting at this one
  // (PgConnInfo); else at the first.
  const std::atomic<size_t>* first_host_source = nullptr;
  // If set, a round trip is abandoned as soon as *generation_source differs
  // from its value when the connection opened (PgPool::Invalidate).
  const std::atomic<uint64_t>* generation_source = nullptr;
  uint64_t generation = 0;  // set when connecting
};

class PgConnection {
 public:
  // Connects to `info`'s database and, if options.schema is not empty, sets
  // the search_path to it. kBusy if it cannot be reached (libpq's
  // connect_timeout bounds each host's attempt).
  static Status Open(const PgConnInfo& info, const PgConnectionOptions& options,
                     std::unique_ptr<PgConnection>* out);
  // The same for a URL, with the default options (tests, tools).
  static Status Open(const std::string& url, const std::string& schema,
                     std::unique_ptr<PgConnection>* out);
  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // Runs `sql` as a prepared statement (prepared on first use on this
  // connection) with `params`. On failure *sqlstate (if given) holds the
  // SQLSTATE ("" when the connection itself failed or timed out).
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
  // re-validated inside the transaction that uses it; null if none. At most
  // kMaxMemos are kept: a new one past that forgets the others first (a
  // memo is only a hint, as after a reconnect).
  const int64_t* Memo(std::string_view key) const;
  void SetMemo(std::string_view key, int64_t value);
  static constexpr size_t kMaxMemos = 4096;
  // Runs a parameterless command (BEGIN, COMMIT, DDL) as plain text.
  Status Command(const std::string& sql, std::string* sqlstate = nullptr);
  // Ends the open transaction, if any, discarding its changes (sent
  // without waiting; the next statement settles it first).
  void RollbackIfActive();

  // The connection is gone (server restart, network, a deadline passed):
  // the pool drops it.
  bool Broken() const;
  // Starts a lease: until its first statement ran, a statement that fails
  // on a broken connection is retried once on a fresh one (nothing of the
  // lease's work can have been lost); round trips get `deadline`'s timeout.
  void StartLease(PgDeadline deadline);
  // The host and port that serve this connection (PQhost, PQport).
  std::string HostPort() const;
  // The position of that host in the connection string (PgConnInfo).
  size_t host_index() const { return host_index_; }
  uint64_t generation() const { return options_.generation; }
  // The connection was dropped because the database did not answer in time
  // (or its pool gave it up), rather than found dead.
  bool timed_out() const { return timed_out_; }

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
  // connection's own error). Not after a deadline passed: the database did
  // not answer, and a new connection would wait the same way.
  bool ReopenForRetry(bool fresh, int attempt, pg_result** res);
  // One attempt of Pipeline; a connection found out of step with the server
  // is dropped (Broken() is then true).
  Status PipelineOnce(const std::vector<PgStatement>& stmts, std::vector<PgResult>* results,
                      size_t* failed, std::string* sqlstate);
  // The deadline of a round trip that starts now.
  std::chrono::steady_clock::time_point Deadline() const;
  // Sends what libpq buffered and waits until PQgetResult will not block.
  // False if the connection failed, the deadline passed or the pool
  // invalidated the connection: then it is closed (Broken()) and
  // last_error_ says why.
  bool Await(std::chrono::steady_clock::time_point deadline);
  // Awaits the answer of the command sent and returns its (last) result,
  // having read to its end; null if Await failed.
  pg_result* Collect(std::chrono::steady_clock::time_point deadline);
  // Closes the connection, remembering why (Broken() is then true).
  void Drop(std::string why, bool timed_out);

  pg_conn* conn_ = nullptr;
  const PgConnInfo* info_ = nullptr;      // outlives the connection (the pool's or the caller's)
  std::unique_ptr<PgConnInfo> own_info_;  // for Open(url, ...)
  PgConnectionOptions options_;
  std::chrono::milliseconds timeout_{0};  // of the current lease's round trips
  size_t host_index_ = 0;
  std::string last_error_;       // why the connection was dropped
  bool timed_out_ = false;       // dropped because the database did not answer
  uint64_t next_statement_ = 0;  // names s0, s1, ... of prepared statements
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

// SQLSTATEs the store acts on.
inline constexpr std::string_view kPgUniqueViolation = "23505";
// True for a transaction the database gave up that may simply be run again
// (serialization failure, deadlock).
bool PgRetryable(std::string_view sqlstate);

}  // namespace cerulean::storage
