// A VFS shim that writes each WAL transaction with one system call.
//
// SQLite writes a WAL frame as two writes, its 24-byte header and then its
// page, so a commit of N pages made 2N pwrite calls (strace: 5.7 per single
// insert at 16 connections, 24 per 100-entity batch). Through this shim a WAL
// file gathers consecutive writes in memory and writes them at once when the
// transaction's commit frame is complete, before SQLite publishes the commit
// to other connections, so every frame another connection can see is in the
// file. Any other use of the file (read, sync, size, truncate, close) first
// writes what is gathered.
//
// A main database file's writes pass straight through, but every 256 KiB
// of them the shim pushes the file's writeback to the device and waits for
// it (sync_file_range), so a checkpoint's closing fdatasync finds little
// left to write, and the WAL syncs that acknowledge writes meanwhile do not
// queue behind megabytes of it. Only Linux has that request
// (WritebackHandle, storage/platform.h): elsewhere the checkpoint's own
// sync writes it all. Other files pass straight through.
//
// Thread-safety: WalCoalescingVfs may be called from any thread. A file
// opened through the shim is used like any sqlite3_file, by one connection
// at a time; the file returned by WalBaseFile may in addition be synced from
// another thread while its connection writes.
#pragma once

#include <sqlite3.h>

#include <cstdint>

namespace cerulean::storage {

// The name of a registered VFS that forwards to the VFS named `base`
// (nullptr: the default one) and coalesces WAL writes as described above;
// nullptr iff `base` is not registered or registering failed. The same
// base always gives the same VFS.
const char* WalCoalescingVfs(const char* base);

// The base VFS's file under `file` when `file` was opened through a
// WalCoalescingVfs, else `file` itself. Syncing it does not touch the writes
// still gathered, so it is safe beside the connection's own use; it covers
// every committed transaction.
sqlite3_file* WalBaseFile(sqlite3_file* file);

// A main database file opened through the shim can keep its pages in a
// cache shared by every connection of that file (page_cache.h), which
// outlives SQLite's own per-connection caches. sqlite3_file_control(db,
// "main", kPageCacheFileControl, &request) creates it, of request.bytes in
// pages of request.page_bytes (the database's page size), unless the file
// has one already; reads of whole pages then go through it. A file opened
// without the shim answers SQLITE_NOTFOUND.
constexpr int kPageCacheFileControl = 0x43455201;
struct PageCacheRequest {
  int page_bytes = 0;
  int64_t bytes = 0;
};

// How often a database file's writeback has been pushed (all shims).
uint64_t PacedWritebacksForTesting();

}  // namespace cerulean::storage
