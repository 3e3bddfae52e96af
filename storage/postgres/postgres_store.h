// PostgresStore: the Store over a PostgreSQL-protocol database (libpq), so
// that any number of stateless server processes ("nodes") serve one
// database. Schema, key encoding and the reasons behind them are in
// storage/README.md ("PostgreSQL backend").
// Thread-safety: every method may be called concurrently from any thread
// (as Store requires); connections come from a pool. Background threads
// owned by the store: the ApplyAsync lanes, the reaper of dropped tables and
// the prober that keeps the Healthy() verdict; the destructor finishes
// queued writes and joins them.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "storage/postgres/pg_pool.h"
#include "storage/store.h"

namespace cerulean::storage {

struct PostgresStoreOptions {
  // libpq connection string or URL: postgresql://USER@HOST:PORT/DB.
  std::string url;
  // Schema holding the store's tables (created if missing); empty: the
  // connection's search_path (normally `public`).
  std::string schema;
  // Connections of the pool (requests, lanes and the reaper share them).
  size_t pool_size = 16;
  // Threads committing ApplyAsync writes. Writes to one partition go to one
  // lane and are committed, and called back, in the order they came.
  size_t async_lanes = 4;
  // Rows of a dropped table deleted per reaper statement.
  size_t reap_chunk_rows = 2000;
  // How often the reaper looks for work dropped by other nodes (its own
  // drops wake it at once).
  std::chrono::milliseconds reap_poll{5000};
  // Run the reaper thread (tests turn it off and call ReapNowForTesting).
  bool background_reaping = true;
  // Let one node at a time reap, through pg_try_advisory_lock (PostgreSQL,
  // Citus, YugabyteDB). Off on CockroachDB, which has none (detected):
  // nodes then may reap the same table at once, which is harmless.
  bool advisory_locks = true;
  // A transaction the database gave up (serialization failure, deadlock,
  // a concurrent insert of the same key) is run again up to this often.
  int max_retries = 5;

  // Deadlines (storage/README.md, "Timeouts"). A round trip of a request's
  // statements without an answer after round_trip_timeout is abandoned
  // (kBusy); snapshots, usage counts and reaping get long_round_trip_timeout.
  std::chrono::milliseconds round_trip_timeout{5000};
  std::chrono::milliseconds long_round_trip_timeout{300000};
  // A write whose commit round trip got no answer (a deadline passed, the
  // connection broke) is looked after for up to this long on a connection
  // of its own: its transaction is cancelled if still running, and the
  // database asked whether it committed (kOk), aborted (kBusy) or neither
  // (kOutcomeUnknown).
  std::chrono::milliseconds outcome_timeout{3000};
  // A call waits this long for a pooled connection before kBusy.
  std::chrono::milliseconds acquire_timeout{5000};
  // The prober runs `SELECT 1` every probe_interval on a connection of its
  // own; no answer within probe_timeout makes the database unreachable:
  // Healthy() false, calls kBusy at once, round trips in flight abandoned.
  std::chrono::milliseconds probe_interval{500};
  std::chrono::milliseconds probe_timeout{1500};
  // Told one line, from any thread, when the database stops answering,
  // answers again, or another host serves (each once per change). May be
  // empty.
  std::function<void(const std::string&)> log;
};

// The pool's state and the time spent in queries, for /_metrics.
struct PostgresStoreStats {
  uint64_t connections_open = 0;
  uint64_t connections_in_use = 0;
  uint64_t pool_waits = 0;        // acquisitions that waited for a connection
  uint64_t operations = 0;        // store calls that reached the database
  uint64_t operation_micros = 0;  // their total latency
  uint64_t retries = 0;           // transactions run again
  // Writes whose commit round trip got no answer, by what the store then
  // learnt: committed (answered as done), aborted (kBusy), unknown
  // (kOutcomeUnknown).
  uint64_t lost_commits_committed = 0;
  uint64_t lost_commits_aborted = 0;
  uint64_t lost_commits_unknown = 0;
  bool reachable = false;  // the prober's last verdict (Healthy())
};

class PostgresStore final : public Store {
 public:
  // Connects, creates the schema if missing and starts the background
  // threads. A database that cannot be reached now is no error: the store
  // answers kBusy (and Healthy() false) until the prober reaches it and has
  // created the schema. kInvalidArgument for a URL libpq cannot parse; the
  // database's error if it refuses the schema.
  static Result<std::unique_ptr<PostgresStore>> Open(const PostgresStoreOptions& options);
  ~PostgresStore() override;
  PostgresStore(const PostgresStore&) = delete;
  PostgresStore& operator=(const PostgresStore&) = delete;

  Status CreateTable(const std::string& account, const std::string& table) override;
  Status DeleteTable(const std::string& account, const std::string& table) override;
  Result<std::string> GetTable(const std::string& account, const std::string& table) override;
  Status ScanTables(const std::string& account, const std::string& start,
                    const std::function<bool(const std::string&)>& visit) override;
  Result<std::string> GetTableAcl(const std::string& account, const std::string& table) override;
  Status SetTableAcl(const std::string& account, const std::string& table,
                     const std::string& acl) override;
  Result<std::string> GetServiceProperties(const std::string& account) override;
  Status SetServiceProperties(const std::string& account, const std::string& props) override;

  Status GetEntityRow(const std::string& account, const std::string& table,
                      const std::string& partition_key, const std::string& row_key,
                      const RowVisitor& visit) override;
  Status ScanRows(const std::string& account, const std::string& table, const ScanRequest& request,
                  const RowVisitor& visit, std::optional<EntityKey>* next) override;
  using Store::Scan;
  // Besides the Store statuses: kInvalidArgument ("InvalidKey") for a key
  // holding a 0xFE or 0xFF byte; kBusy when the database is unreachable and
  // nothing was written; kOutcomeUnknown when the commit was sent, got no
  // answer, and the database could not tell (within outcome_timeout)
  // whether it took effect.
  Status Apply(const std::string& account, const std::string& table,
               const std::vector<WriteOp>& ops, ApplyResult* result, ApplyError* error) override;
  void ApplyAsync(std::string account, std::string table, std::vector<WriteOp> ops,
                  ApplyCallback done) override;
  void Flush() override;

  Status ResetAccount(const std::string& account) override;
  // The prober's last verdict; never waits.
  bool Healthy() override;
  bool ReadsWaitOnNetwork() const override { return true; }
  // bytes: the size of the store's tables and indexes (0 where the database
  // has no pg_total_relation_size).
  Status GetUsage(std::vector<AccountUsage>* accounts, uint64_t* bytes) override;
  // Snapshots are kept in the database, so every node sees them. A save or
  // restore locks the account's tables against writers until it commits; a
  // restore compares each table that is still the one saved (or last
  // restored) with the saved rows and writes only what differs.
  Status SaveSnapshot(const std::string& account, const std::string& name,
                      SnapshotInfo* info) override;
  Status RestoreSnapshot(const std::string& account, const std::string& name,
                         RestoreStats* stats) override;
  Status ListSnapshots(const std::string& account, std::vector<SnapshotInfo>* out) override;
  Status DeleteSnapshot(const std::string& account, const std::string& name) override;
  // No WriteEpoch: other nodes write too, so no local count can tell that
  // nothing changed.

  PostgresStoreStats GetStats() const;
  // GetStats() as StoreGauges (pg_connections_open, pg_connections_in_use,
  // pg_pool_waits, pg_operations, pg_operation_microseconds, pg_retries,
  // pg_lost_commits_{committed,aborted,unknown}, pg_reachable).
  std::vector<StoreGauge> Gauges() const override;

  // Introspection for tests, as SqliteStore's.
  Result<uint64_t> CountEntityRowsForTesting();
  Result<uint64_t> CountPendingReapsForTesting();
  Status ReapNowForTesting();
  // The database's plan (EXPLAIN) for the statement a scan of `range` runs.
  Result<std::vector<std::string>> ExplainScanForTesting(const std::string& account,
                                                         const std::string& table,
                                                         const KeyRange& range);

 private:
  PostgresStore(const PostgresStoreOptions& options, PgConnInfo info);
  // Creates the schema if missing, on a connection of its own; *host: the
  // host:port that served.
  Status Init(std::string* host);
  // Starts the lanes, the reaper and the prober.
  void Start();

  // One attempt of Apply inside one transaction on `c`; *retry: run it
  // again. With *group_inserts, several inserts go in one statement; it is
  // cleared when that statement met an existing row (which it cannot name).
  Status ApplyOnce(PgConnection* c, const std::string& account, const std::string& table,
                   const std::vector<WriteOp>& ops, ApplyResult* result, ApplyError* error,
                   bool* group_inserts, bool* retry);
  // A transaction whose COMMIT was sent: its id (txid_current(), with
  // epoch), its backend and the host:port that served it.
  struct SentCommit {
    int64_t xid = -1;  // -1: not known (the database has no txid_status)
    int64_t pid = 0;
    std::string host_port;
  };
  enum class CommitOutcome { kCommitted, kAborted, kUnknown };
  // What became of `sent`, whose commit round trip got no answer: cancels
  // its backend if the transaction still runs (then terminates it), and asks
  // txid_status on a connection of its own to the same host, for up to
  // options_.outcome_timeout. Counts the outcome.
  CommitOutcome ResolveLostCommit(const SentCommit& sent);
  // Runs `body` in BEGIN ... COMMIT on a pooled connection, again (up to
  // max_retries) when the database gave the transaction up; round trips
  // wait as long as `deadline` says (kRequest if not given).
  template <typename Body>
  Status Transaction(PgDeadline deadline, Body&& body);
  template <typename Body>
  Status Transaction(Body&& body) {
    return Transaction(PgDeadline::kRequest, std::forward<Body>(body));
  }
  // Server time for the next write on this node: strictly above every
  // timestamp this node handed out before.
  int64_t NextTimestamp();

  struct Pending;
  struct Lane;
  void LaneLoop(Lane* lane);

  void WakeReaper();
  void ReaperLoop();
  // Reaps every dropped table (this node's and others'), chunk by chunk;
  // with advisory locks only if no other node is reaping.
  Status ReapAll();

  // Keeps the Healthy() verdict: probes every probe_interval (schema first,
  // while Init has not succeeded).
  void ProbeLoop();
  // One probe on *conn (opened again if dropped): kBusy if the database
  // does not answer.
  Status ProbeOnce(std::unique_ptr<PgConnection>* conn);
  // Records a probe's outcome: on a change, marks the pool, logs it.
  void Verdict(const Status& probe, const std::string& host);
  void Log(const std::string& line) const;

  // Counts a call that reached the database, and its latency.
  class Timed;

  const PostgresStoreOptions options_;
  // options_.advisory_locks, unless the database has none (set by Init).
  std::atomic<bool> advisory_locks_{false};
  // The database has txid_current() and txid_status() (set by Init).
  std::atomic<bool> txid_status_{false};
  PgPool pool_;
  // Init has created (or found) the schema.
  std::atomic<bool> ready_{false};
  // The prober's verdict (Healthy()).
  std::atomic<bool> healthy_{false};
  // The prober's own state (its thread only, and Open before it starts).
  std::string serving_host_;  // host:port of the last good probe
  std::chrono::steady_clock::time_point unreachable_since_;
  bool verdict_given_ = false;  // a verdict was logged
  bool ever_reached_ = false;
  std::atomic<int64_t> last_timestamp_{0};
  std::atomic<uint64_t> operations_{0}, operation_micros_{0}, retries_{0};
  std::atomic<uint64_t> lost_committed_{0}, lost_aborted_{0}, lost_unknown_{0};

  std::vector<std::unique_ptr<Lane>> lanes_;

  std::mutex reap_mu_;
  std::condition_variable reap_cv_;
  bool reap_pending_ = false;  // guarded by reap_mu_
  bool stopping_ = false;      // guarded by reap_mu_
  std::thread reaper_;

  std::mutex probe_mu_;
  std::condition_variable probe_cv_;
  bool probe_stopping_ = false;  // guarded by probe_mu_
  std::thread prober_;
};

}  // namespace cerulean::storage
