// The Store interface: accounts' tables and entities in key order.
// Thread-safety: every method may be called concurrently from any thread.
// Implementations: SqliteStore (storage/sqlite/sqlite_store.h),
// PostgresStore (storage/postgres/postgres_store.h).
//
// A backend implements the pure virtual methods. A few members are marked
// "optional hint": they let a caller do better (reuse a page it read,
// batch the wake-ups after a group of writes) and carry no semantics of
// their own; a backend may ignore them or keep their defaults, and is then
// still a correct Store.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/key_range.h"
#include "storage/status.h"
#include "storage/value.h"

namespace cerulean::storage {

// Limits the store enforces on the result of a write (a merge can grow an
// entity beyond what its request body held).
inline constexpr size_t kMaxCustomProperties = 252;

// What a write does with an existing / absent entity.
enum class WriteKind {
  kInsert,           // absent required (else kAlreadyExists)
  kUpdate,           // replace; present required
  kMerge,            // merge; present required
  kDelete,           // present required
  kInsertOrReplace,  // upsert, replace
  kInsertOrMerge,    // upsert, merge
};

// One entity write. `entity` carries the keys, and the properties for every
// kind but kDelete (its timestamp is ignored: the store assigns one).
struct WriteOp {
  WriteKind kind = WriteKind::kInsert;
  Entity entity;
  // For kUpdate, kMerge, kDelete: nullopt means If-Match "*" (must exist);
  // a value means the entity's current timestamp must equal it (else
  // kConditionFailed). Ignored for other kinds.
  std::optional<int64_t> if_match;
};

// A (PartitionKey, RowKey) pair.
struct EntityKey {
  std::string partition_key;
  std::string row_key;
  friend bool operator==(const EntityKey&, const EntityKey&) = default;
};

// A query over one table. Rows are visited in key order through `ranges`,
// starting at `start` if set; rows passing `predicate` (all rows when null)
// are returned until `limit` matched or `max_examined` rows were read.
struct ScanRequest {
  // Sorted, non-overlapping ranges. An empty vector means no rows at all;
  // {KeyRange::All()} means the whole table.
  std::vector<KeyRange> ranges{KeyRange::All()};
  // Continuation: resume at the first row with key >= start.
  std::optional<EntityKey> start;
  // Residual filter, evaluated on each row in range. May be empty.
  std::function<bool(const Entity&)> predicate;
  size_t limit = 1000;
  // Budget of rows read (matching or not) before the page is cut short.
  size_t max_examined = SIZE_MAX;
  // Polled every kRowsPerAbandonPoll rows read (matching or not); when it
  // returns true the scan stops with kBusy. May be empty.
  std::function<bool()> abandon;
  static constexpr size_t kRowsPerAbandonPoll = 32;
  // Optional hint: the scan is short and its caller waits for it like a
  // point read. A backend that keeps connections apart for point reads
  // (SqliteStore: larger page caches) may serve it from one; any backend
  // may ignore it.
  bool point_reader = false;
};

struct ScanResult {
  std::vector<Entity> entities;
  // Key of the first row in range not yet examined, if any rows may remain.
  std::optional<EntityKey> next;
};

// A row as ScanRows visits it, valid only during the visit: the keys
// decoded, the properties still in their stored encoding (read them with
// PropertyReader or DecodeProperties, storage/codec.h).
struct EntityRow {
  std::string_view partition_key;
  std::string_view row_key;
  int64_t timestamp = 0;
  std::string_view properties;
  // The whole row decoded, when the scan decoded it to evaluate the
  // predicate; else null. The visitor may move from it.
  Entity* decoded = nullptr;
};
// Returns Ok to go on; any other status ends the scan with that status.
using RowVisitor = std::function<Status(EntityRow&)>;

// `row` decoded into `*out` (keys, timestamp, properties), reusing its
// buffers. Corruption if the properties do not decode.
Status DecodeRow(const EntityRow& row, Entity* out);

// Result of a successful Apply: the new timestamp of each op (0 for deletes).
struct ApplyResult {
  std::vector<int64_t> timestamps;
};

// Failure of an Apply: the status and the index of the op that failed.
struct ApplyError {
  Status status;
  size_t index = 0;
};

// What an ApplyAsync's callback receives: the status, the ops it was given
// (handed back), and the timestamps (ok) or the failing op (not ok).
struct ApplyOutcome {
  Status status;
  std::vector<WriteOp> ops;
  ApplyResult result;
  ApplyError error;
  // Optional hint: true when more callbacks follow at once on the same
  // thread (the rest of one commit's or one sync's writes); false on the
  // last of them. A caller whose callbacks hand work to another thread may
  // hold it back until a callback with false, and wake that thread once for
  // the whole run. A backend may always leave it false.
  bool more_in_batch = false;
};
using ApplyCallback = std::function<void(ApplyOutcome)>;

// What one account holds (Store::GetUsage).
struct AccountUsage {
  std::string account;
  uint64_t tables = 0;
  uint64_t entities = 0;
};

// A saved copy of one account (Store::SaveSnapshot).
struct SnapshotInfo {
  std::string name;
  int64_t created = 0;  // DateTime ticks of the save
  uint64_t tables = 0;
  uint64_t entities = 0;
};

// What a Store::RestoreSnapshot did: tables left as they were (unchanged
// since the save or the last restore of the snapshot), tables whose changed
// rows were put back, tables copied back whole, and the rows written.
struct RestoreStats {
  uint64_t tables_kept = 0;
  uint64_t tables_patched = 0;
  uint64_t tables_copied = 0;
  uint64_t entities_copied = 0;
};

// One figure of a backend's own machinery, for monitoring (Store::Gauges).
// A gauge named "<structure>_memory_bytes" or "<structure>_memory_entries"
// (kMemoryBytesSuffix, kMemoryEntriesSuffix) is the memory an in-memory
// structure of the backend holds now (e.g. "key_log_memory_bytes"), reported
// beside the server's own structures.
struct StoreGauge {
  std::string name;  // lower_snake_case, unique per store
  std::string description;
  bool counter = false;  // only ever grows (else it may go up and down)
  uint64_t value = 0;
};
inline constexpr std::string_view kMemoryBytesSuffix = "_memory_bytes";
inline constexpr std::string_view kMemoryEntriesSuffix = "_memory_entries";

class Store {
 public:
  virtual ~Store() = default;

  // Tables. Names are compared case-insensitively; the case given at
  // creation is kept and returned.
  virtual Status CreateTable(const std::string& account, const std::string& table) = 0;
  // kTableNotFound if absent. Must not visit the table's rows on the caller's
  // thread: the table disappears at once, its rows are reclaimed later.
  virtual Status DeleteTable(const std::string& account, const std::string& table) = 0;
  // The table's name as created, or kTableNotFound.
  virtual Result<std::string> GetTable(const std::string& account, const std::string& table) = 0;
  // Visits the account's tables in name order, starting at the first name
  // >= `start` (compared as created); stops when `visit` returns false.
  virtual Status ScanTables(const std::string& account, const std::string& start,
                            const std::function<bool(const std::string&)>& visit) = 0;

  // Opaque per-table and per-account documents (ACL, service properties).
  virtual Result<std::string> GetTableAcl(const std::string& account, const std::string& table) = 0;
  virtual Status SetTableAcl(const std::string& account, const std::string& table,
                             const std::string& acl) = 0;
  virtual Result<std::string> GetServiceProperties(const std::string& account) = 0;
  virtual Status SetServiceProperties(const std::string& account, const std::string& props) = 0;

  // Entities.
  // kTableNotFound, kNotFound, or visits the entity's row (keys and
  // timestamp, properties still encoded) and returns what `visit` returns.
  // The row is valid only during the visit: a reply can be written from it
  // without decoding it. `visit` runs while a connection is held and must
  // not call back into the store.
  virtual Status GetEntityRow(const std::string& account, const std::string& table,
                              const std::string& partition_key, const std::string& row_key,
                              const RowVisitor& visit) = 0;
  // GetEntityRow with the row decoded: kTableNotFound, kNotFound or the
  // entity.
  Result<Entity> GetEntity(const std::string& account, const std::string& table,
                           const std::string& partition_key, const std::string& row_key);
  // Visits the rows of `request` in key order (see ScanRequest); `*next`
  // is set as ScanResult::next is. Rows are read without copying: a reply
  // can be written from each row as it comes. Each row is visited at most
  // once, and every row in range that no write changed during the call is
  // visited (up to the limits). A backend reads the page in one snapshot,
  // or, if it keeps a WriteEpoch, in several taken one after another along
  // the key order (SqliteStore in memory, which lets waiting requests use
  // its one connection between two rows): a write committed during the call
  // then shows in the rows read after it and not in those read before, so a
  // page may hold part of a batch's effect, as the pages of one query may.
  // A WriteEpoch unchanged across the call means one instant.
  virtual Status ScanRows(const std::string& account, const std::string& table,
                          const ScanRequest& request, const RowVisitor& visit,
                          std::optional<EntityKey>* next) = 0;
  // ScanRows with every row decoded into `result->entities`.
  Status Scan(const std::string& account, const std::string& table, const ScanRequest& request,
              ScanResult* result);

  // Applies `ops` atomically: all take effect or none does. On failure
  // returns the failing op's index (kTableNotFound reports index 0).
  // Statuses: kTableNotFound, kAlreadyExists, kNotFound, kConditionFailed,
  // kTooManyProperties (merge result over kMaxCustomProperties), kIOError.
  // REQUIRES: no two ops address the same key.
  virtual Status Apply(const std::string& account, const std::string& table,
                       const std::vector<WriteOp>& ops, ApplyResult* result, ApplyError* error) = 0;
  // Apply without waiting: returns at once; `done` runs exactly once, on a
  // thread of the store's (never the caller's), when the ops were committed
  // (durably, like Apply) or refused. A backend may commit writes queued
  // together in one transaction; one without an asynchronous path of its own
  // may run Apply on a thread it owns and then call `done`. `done` must not
  // block, nor call Apply or Flush.
  virtual void ApplyAsync(std::string account, std::string table, std::vector<WriteOp> ops,
                          ApplyCallback done) = 0;
  // Returns once the callback of every ApplyAsync begun before the call has
  // run.
  virtual void Flush() = 0;

  // Removes every table, entity and document of `account`, quickly.
  virtual Status ResetAccount(const std::string& account) = 0;

  // Snapshots: named copies of one account's tables (names as created),
  // entities (timestamps included), table ACLs and service properties,
  // kept by the store beside the live data. ResetAccount leaves them.
  // Saves the account's current state as `name`, replacing a snapshot of
  // that name. Costs O(entities of the account).
  virtual Status SaveSnapshot(const std::string& account, const std::string& name,
                              SnapshotInfo* info) = 0;
  // Brings the account back to exactly the state saved as `name`
  // (kNotFound if none), atomically. Tables not written since the save (or
  // since this snapshot was last restored) are kept as they are; in a table
  // written since, the rows written are put back from the snapshot; a table
  // dropped or re-created since, or with too many writes to tell, is copied
  // back whole. So the cost grows with what was written, not with the
  // account.
  virtual Status RestoreSnapshot(const std::string& account, const std::string& name,
                                 RestoreStats* stats) = 0;
  // The account's snapshots in name order.
  virtual Status ListSnapshots(const std::string& account, std::vector<SnapshotInfo>* out) = 0;
  // kNotFound if there is no snapshot `name`.
  virtual Status DeleteSnapshot(const std::string& account, const std::string& name) = 0;

  // Usable for requests right now (health checks): the store's last
  // verdict. Never blocks (no I/O, no wait for a connection or a lock held
  // by a request), so it may be called on a thread that serves connections;
  // a store that learns its health by asking another process keeps the
  // verdict up to date in the background.
  virtual bool Healthy() = 0;
  // Why Healthy() is false, in one line, where the store can say; empty
  // otherwise. Never blocks, like Healthy().
  virtual std::string HealthProblem() { return {}; }

  // Optional hint: true iff every read waits on another process (a
  // database server's round trip) rather than on local memory or files, so
  // a caller may keep even point reads off threads that serve other work.
  // false, the default, is always correct.
  virtual bool ReadsWaitOnNetwork() const { return false; }

  // Optional hint: a count that grows after every write transaction ends,
  // once what it committed is visible to reads. If it returned E before a
  // read began and still returns E, no write has become visible since: the
  // read's answer is still the current one (a caller may keep a page it
  // read until the count moves). nullopt, the default, means the store
  // keeps none (a store written by other processes too cannot), and is
  // always correct.
  virtual std::optional<uint64_t> WriteEpoch() const { return std::nullopt; }

  // Tables and entities of every account that has a table, by account name,
  // and the bytes the store occupies (0 in memory). Counting entities reads
  // every live row: O(entities), for metrics off the request path.
  virtual Status GetUsage(std::vector<AccountUsage>* accounts, uint64_t* bytes) = 0;

  // Optional: figures of the backend's own (a connection pool, query
  // latencies) for monitoring, read without touching the data; none by
  // default.
  virtual std::vector<StoreGauge> Gauges() const { return {}; }
};

}  // namespace cerulean::storage
