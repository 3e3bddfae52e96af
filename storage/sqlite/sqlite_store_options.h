// SqliteStoreOptions: how a SqliteStore is opened and run (sqlite_store.h):
// the database, its connections and page caches, when the WAL is
// checkpointed and truncated, the reaper's pace, durability, and the seams
// tests use. A plain value, copied into the store at Open.
// Thread-safety: a value type.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "storage/sqlite/wal_checkpoint.h"

namespace cerulean::storage {

struct SqliteStoreOptions {
  // Database file; its directory is created if missing. Ignored when
  // `in_memory` is set.
  std::string path;
  // A private database that lives as long as the store.
  bool in_memory = false;
  // In memory: the most the database may grow to (SQLite's memdb VFS holds
  // it in one buffer, which SQLite allocates below 2 GiB, the cap). Writes
  // past it fail with kIOError (SQLITE_FULL) and change nothing.
  int64_t memory_limit_bytes = int64_t{0x7fff0000};
  // Reader connections of a file store (at least 1). Unused in memory.
  size_t reader_pool_size = 8;
  // Further readers kept for point reads (GetEntityRow) and short pages, each
  // with a page cache of `point_reader_cache_bytes` instead of SQLite's
  // default 2 MiB. GetEntityRow takes an idle one, else a pooled reader. A
  // cache holds only pages read, so the memory they may hold is bounded by
  // count x cache, and by the database's size below that. Unused in memory.
  // 4 MiB holds a large table's interior pages; misses come mostly from the
  // shared page cache below, and a larger cache costs more to empty when
  // another connection commits (storage/README.md, "Connections").
  size_t point_reader_count = 2;
  int64_t point_reader_cache_bytes = int64_t{4} << 20;
  // The database file's pages, kept for every connection (storage/
  // page_cache.h, through the VFS shim): what a connection's own cache loses
  // whenever another connection commits. 0: none. Unused in memory.
  int64_t shared_page_cache_bytes = int64_t{32} << 20;
  // The writer connection's page cache (file stores; SQLite's default is
  // 2 MiB). A write reads the B-tree pages it changes; those the cache does
  // not hold come through a pread from the WAL or the database file, and a
  // bulk load of 100-entity batches spread over a large partition changes
  // more leaves than 2 MiB holds (`PROFILER=none scripts/profile.sh upsert`
  // prints read calls per request). The cache holds only pages read, so at
  // most this many bytes. Unused in memory (the pages are in memdb's buffer
  // already).
  int64_t writer_cache_bytes = int64_t{16} << 20;
  // After this long with no write the writer's page cache is emptied and
  // the freed memory handed back to the system (glibc's malloc_trim), so a
  // bulk load's pages do not stay resident beside the point readers' caches.
  // Zero keeps the cache.
  std::chrono::milliseconds writer_cache_idle_release{1000};
  // After a checkpoint pass that left frames behind (committed during it),
  // how long the checkpointer waits for a commit to ask for the next pass
  // before it copies them anyway (CheckpointLoop).
  std::chrono::milliseconds checkpoint_idle_pass_after{10};
  // Once no commit has come for this long, the checkpointer copies what is
  // left of the WAL and truncates the file to zero bytes, so that a bulk
  // load's WAL does not keep its size on disk while the server is idle. It
  // never waits for a lock: while a reader still reads from the WAL (an
  // open snapshot), it tries again after the same period. Zero: never (the
  // WAL file then keeps the size it grew to, cut to journal_size_limit when
  // it rewinds).
  std::chrono::milliseconds wal_truncate_idle_after{1000};
  // When the WAL is copied back into the database, in WAL pages: past the
  // trigger by the checkpointer thread, past the hard limit by the writer
  // (wal_checkpoint.h). Unused in memory.
  WalCheckpointLimits wal_checkpoint;
  // Bytes of the database file each reader maps (PRAGMA mmap_size); 0 reads
  // with pread. Off by default: mapped pages count in the process's resident
  // memory, which then grows with the data. Unused in memory.
  int64_t reader_mmap_bytes = 0;
  // How long a connection waits on a lock held by another connection before
  // giving up with kBusy.
  std::chrono::milliseconds busy_timeout{5000};
  // Rows of a dropped table deleted per reaper transaction: small enough
  // that a write arriving meanwhile waits only briefly for the writer
  // connection.
  size_t reap_chunk_rows = 500;
  // How long the reaper waits after a table is dropped before it starts.
  // The thread that committed the drop still has to answer it; a reaper
  // starting at once competes with that answer for the CPU.
  std::chrono::milliseconds reap_delay{50};
  // Run the reaper thread. Tests turn it off to observe orphaned rows (and
  // reap with ReapNowForTesting()).
  bool background_reaping = true;
  // Durability of an acknowledged write. true: no write is acknowledged
  // before the WAL holding its commit has been synced (by the store itself,
  // the writer running synchronous=NORMAL; see storage/README.md,
  // Durability), so it survives power loss as well as kill -9. false: sync
  // only at checkpoints; a commit is in the OS, which survives kill -9 of
  // the process but not a power loss. Unused in memory.
  bool fsync_commits = true;
  // Hold the database file for this process alone (SQLite's unix-excl VFS):
  // the WAL index lives in the heap instead of a shared -shm mapping, so a
  // read transaction takes no file locks (two fcntl calls per point read
  // otherwise, visible with PROFILER=strace scripts/profile.sh point). Another
  // process (a second server, `cerulean export`) cannot open the database
  // while this store is open: Open fails with kBusy. Ignored when `vfs` is
  // set.
  bool exclusive_process = true;
  // Name of a registered sqlite3_vfs to open the file with; empty for
  // SQLite's default. The seam through which tests observe or inject I/O.
  // Either way the store opens its files through the WAL write-gathering
  // shim (wal_vfs.h) on top of it, so this VFS sees each WAL transaction
  // as a few large writes.
  std::string vfs;
  // Open fails with kCorruption, listing the problems, if PRAGMA
  // quick_check finds the file damaged (storage/README.md, "Damaged
  // files"). File stores only.
  bool check_at_open = false;
  // Told one line, from any thread, when the database file is found damaged
  // (once). May be empty.
  std::function<void(const std::string&)> log;
};

}  // namespace cerulean::storage
