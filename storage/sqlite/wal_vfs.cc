#include "storage/sqlite/wal_vfs.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "storage/platform.h"
#include "storage/sqlite/page_cache.h"

namespace cerulean::storage {

namespace {

// A WAL frame header: page number, then the database size in pages after a
// commit (0 in every frame but a transaction's last), salts and checksums.
constexpr int kFrameHeaderBytes = 24;
constexpr int kWalHeaderBytes = 32;
// The most bytes gathered: a transaction that spills more pages has them
// written before the commit.
constexpr size_t kMaxGatheredBytes = 4 * 1024 * 1024;

// A database file's writes (a checkpoint copying pages back from the WAL)
// are pushed to the device this many bytes at a time, each piece waited for,
// instead of all at the checkpoint's closing fdatasync. That sync would
// write megabytes in one go, and the WAL syncs acknowledging writes
// meanwhile wait behind it: it sets the tail latency of single writes. In
// 256 KiB pieces the WAL syncs find at most one piece ahead of them; smaller
// pieces cost throughput in waits, larger ones leave more of the tail.
constexpr size_t kPaceBytes = 256 * 1024;

std::atomic<uint64_t> paced_writebacks{0};

// A descriptor of its own for each database file open through a shim, to
// start and wait for its writeback (WritebackHandle; the base VFS does not
// expose its own). Shared by all the files open on one path, and closed
// only after the last of them: closing any descriptor of a file drops every
// POSIX lock the process holds on it, SQLite's included. Where the OS has
// no write-back request (or the file cannot be opened again) the handle is
// invalid and the file is not paced.
// It also holds the file's shared page cache (page_cache.h), once a
// connection has asked for one (kPageCacheFileControl).
struct PacedFile {
  WritebackHandle writeback;
  int refs = 0;
  std::unique_ptr<PageCache> cache_owner;  // guarded by paced_mu
  std::atomic<PageCache*> cache{nullptr};
};
std::mutex paced_mu;
std::map<std::string, PacedFile>& PacedFiles() {
  static auto* files = new std::map<std::string, PacedFile>();
  return *files;
}

// The shared PacedFile for `path`.
PacedFile* AcquirePaced(const char* path) {
  std::lock_guard<std::mutex> lock(paced_mu);
  auto [it, inserted] = PacedFiles().try_emplace(path);
  if (inserted) it->second.writeback = WritebackHandle(path);
  ++it->second.refs;
  return &it->second;
}

void ReleasePaced(PacedFile* paced) {
  std::lock_guard<std::mutex> lock(paced_mu);
  if (--paced->refs > 0) return;
  for (auto it = PacedFiles().begin(); it != PacedFiles().end(); ++it) {
    if (&it->second == paced) {
      PacedFiles().erase(it);
      break;
    }
  }
}

struct ShimVfs {
  sqlite3_vfs vfs;
  sqlite3_vfs* base;
  std::string name;
};

// SQLite allocates szOsFile bytes for this and never constructs it: plain
// data only. The base VFS's file follows it in the same allocation.
struct ShimFile {
  sqlite3_file head;  // head.pMethods points at `methods`
  sqlite3_io_methods methods;
  sqlite3_file* real;
  bool wal;  // a WAL file that gathers writes
  // Gathered writes: the bytes of [offset, offset + size).
  sqlite3_int64 offset;
  char* data;
  size_t size;
  size_t capacity;
  // The last write was the header of a commit frame: its page completes the
  // transaction.
  bool commit_next;
  // A main database file: its shared PacedFile (nullptr for other files)
  // and the bytes written since its writeback was last pushed.
  PacedFile* paced;
  size_t unpaced_bytes;
};

ShimFile* Shim(sqlite3_file* f) { return reinterpret_cast<ShimFile*>(f); }
sqlite3_file* Real(sqlite3_file* f) { return Shim(f)->real; }

// The largest write handed to the base VFS at once: SQLite's unix VFS
// masks a write's length with 0x1ffff, so a longer one would be cut short
// (and fail with SQLITE_FULL).
constexpr size_t kMaxWriteBytes = 120 * 1024;

// Writes the gathered bytes, if any. The bytes are dropped either way: a
// failed write fails the transaction, and SQLite rewrites those frames.
int Flush(ShimFile* s) {
  int rc = SQLITE_OK;
  for (size_t done = 0; done < s->size && rc == SQLITE_OK;) {
    const size_t n = std::min(kMaxWriteBytes, s->size - done);
    rc = s->real->pMethods->xWrite(s->real, s->data + done, static_cast<int>(n),
                                   s->offset + static_cast<sqlite3_int64>(done));
    done += n;
  }
  s->size = 0;
  return rc;
}

// Writes what a WAL file has gathered before any other use of the file.
int FlushIfWal(ShimFile* s) { return s->wal ? Flush(s) : SQLITE_OK; }

uint32_t ReadBigEndian32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// --- io methods -------------------------------------------------------------

int ShimClose(sqlite3_file* f) {
  ShimFile* s = Shim(f);
  int rc = FlushIfWal(s);
  std::free(s->data);
  s->data = nullptr;
  s->capacity = 0;
  int close_rc = s->real->pMethods->xClose(s->real);
  if (s->paced != nullptr) ReleasePaced(s->paced);
  s->paced = nullptr;
  return rc != SQLITE_OK ? rc : close_rc;
}

PageCache* CacheOf(ShimFile* s) {
  return s->paced != nullptr ? s->paced->cache.load(std::memory_order_acquire) : nullptr;
}

int ShimRead(sqlite3_file* f, void* out, int amount, sqlite3_int64 offset) {
  ShimFile* s = Shim(f);
  int rc = FlushIfWal(s);
  if (rc != SQLITE_OK) return rc;
  PageCache* cache = CacheOf(s);
  if (cache == nullptr || amount != cache->page_bytes() || offset % amount != 0) {
    return s->real->pMethods->xRead(s->real, out, amount, offset);
  }
  const int64_t page = offset / amount;
  uint64_t epoch = 0;
  if (cache->Lookup(page, out, &epoch)) return SQLITE_OK;
  rc = s->real->pMethods->xRead(s->real, out, amount, offset);
  if (rc == SQLITE_OK) cache->Offer(page, out, epoch);
  return rc;
}

int ShimWrite(sqlite3_file* f, const void* in, int amount, sqlite3_int64 offset) {
  ShimFile* s = Shim(f);
  if (!s->wal || amount <= 0) {
    PageCache* cache = CacheOf(s);
    if (cache != nullptr) cache->DropWritten(offset, amount);
    int rc = s->real->pMethods->xWrite(s->real, in, amount, offset);
    if (cache != nullptr) cache->DropWritten(offset, amount);
    if (rc == SQLITE_OK && s->paced != nullptr && s->paced->writeback.valid() && amount > 0) {
      s->unpaced_bytes += static_cast<size_t>(amount);
      if (s->unpaced_bytes >= kPaceBytes) {
        s->unpaced_bytes = 0;
        s->paced->writeback.PushWriteback();
        paced_writebacks.fetch_add(1, std::memory_order_relaxed);
      }
    }
    return rc;
  }
  const size_t n = static_cast<size_t>(amount);
  // Only a write that continues the gathered bytes joins them, and only
  // while they stay within kMaxGatheredBytes (the buffer's largest size).
  if (s->size > 0 && (offset != s->offset + static_cast<sqlite3_int64>(s->size) ||
                      s->size + n > kMaxGatheredBytes)) {
    int rc = Flush(s);
    if (rc != SQLITE_OK) return rc;
  }
  if (s->size + n > s->capacity) {
    size_t capacity = std::max<size_t>(64 * 1024, s->capacity * 2);
    while (capacity < s->size + n) capacity *= 2;
    capacity = std::max(s->size + n, std::min(capacity, kMaxGatheredBytes));
    char* grown = static_cast<char*>(std::realloc(s->data, capacity));
    if (grown == nullptr) {
      // Out of memory: this file writes through from now on (gathering
      // only part of a transaction could miss its commit frame).
      int rc = Flush(s);
      s->wal = false;
      if (rc != SQLITE_OK) return rc;
      return s->real->pMethods->xWrite(s->real, in, amount, offset);
    }
    s->data = grown;
    s->capacity = capacity;
  }
  if (s->size == 0) s->offset = offset;
  std::memcpy(s->data + s->size, in, n);
  s->size += n;
  const bool completes_commit = s->commit_next;
  s->commit_next = false;
  if (amount == kFrameHeaderBytes && offset >= kWalHeaderBytes) {
    s->commit_next = ReadBigEndian32(static_cast<const unsigned char*>(in) + 4) != 0;
  }
  if (completes_commit) return Flush(s);
  return SQLITE_OK;
}

int ShimTruncate(sqlite3_file* f, sqlite3_int64 size) {
  ShimFile* s = Shim(f);
  int rc = FlushIfWal(s);
  if (rc != SQLITE_OK) return rc;
  PageCache* cache = CacheOf(s);
  if (cache != nullptr) cache->DropFrom(size);
  rc = s->real->pMethods->xTruncate(s->real, size);
  if (cache != nullptr) cache->DropFrom(size);
  return rc;
}

int ShimSync(sqlite3_file* f, int flags) {
  ShimFile* s = Shim(f);
  s->unpaced_bytes = 0;
  int rc = FlushIfWal(s);
  return rc != SQLITE_OK ? rc : s->real->pMethods->xSync(s->real, flags);
}

int ShimFileSize(sqlite3_file* f, sqlite3_int64* size) {
  ShimFile* s = Shim(f);
  int rc = FlushIfWal(s);
  return rc != SQLITE_OK ? rc : s->real->pMethods->xFileSize(s->real, size);
}

int ShimLock(sqlite3_file* f, int level) { return Real(f)->pMethods->xLock(Real(f), level); }
int ShimUnlock(sqlite3_file* f, int level) { return Real(f)->pMethods->xUnlock(Real(f), level); }
int ShimCheckReservedLock(sqlite3_file* f, int* out) {
  return Real(f)->pMethods->xCheckReservedLock(Real(f), out);
}

int ShimFileControl(sqlite3_file* f, int op, void* arg) {
  ShimFile* s = Shim(f);
  if (op == kPageCacheFileControl) {
    const auto* request = static_cast<const PageCacheRequest*>(arg);
    if (s->wal || s->paced == nullptr || request == nullptr || request->page_bytes <= 0) {
      return SQLITE_NOTFOUND;
    }
    std::lock_guard<std::mutex> lock(paced_mu);
    if (!s->paced->cache_owner) {
      s->paced->cache_owner =
          std::make_unique<PageCache>(request->page_bytes, request->bytes / request->page_bytes);
      s->paced->cache.store(s->paced->cache_owner.get(), std::memory_order_release);
    }
    return SQLITE_OK;
  }
  int rc = FlushIfWal(s);
  return rc != SQLITE_OK ? rc : s->real->pMethods->xFileControl(s->real, op, arg);
}

int ShimSectorSize(sqlite3_file* f) { return Real(f)->pMethods->xSectorSize(Real(f)); }
int ShimDeviceCharacteristics(sqlite3_file* f) {
  return Real(f)->pMethods->xDeviceCharacteristics(Real(f));
}

int ShimShmMap(sqlite3_file* f, int region, int size, int extend, void volatile** out) {
  return Real(f)->pMethods->xShmMap(Real(f), region, size, extend, out);
}
int ShimShmLock(sqlite3_file* f, int offset, int n, int flags) {
  return Real(f)->pMethods->xShmLock(Real(f), offset, n, flags);
}
void ShimShmBarrier(sqlite3_file* f) { Real(f)->pMethods->xShmBarrier(Real(f)); }
int ShimShmUnmap(sqlite3_file* f, int delete_flag) {
  return Real(f)->pMethods->xShmUnmap(Real(f), delete_flag);
}
int ShimFetch(sqlite3_file* f, sqlite3_int64 offset, int amount, void** out) {
  return Real(f)->pMethods->xFetch(Real(f), offset, amount, out);
}
int ShimUnfetch(sqlite3_file* f, sqlite3_int64 offset, void* p) {
  return Real(f)->pMethods->xUnfetch(Real(f), offset, p);
}

// --- vfs methods ------------------------------------------------------------

sqlite3_vfs* Base(sqlite3_vfs* vfs) { return static_cast<ShimVfs*>(vfs->pAppData)->base; }

int ShimOpen(sqlite3_vfs* vfs, const char* name, sqlite3_file* f, int flags, int* out_flags) {
  ShimFile* s = Shim(f);
  std::memset(s, 0, sizeof(ShimFile));
  s->real = reinterpret_cast<sqlite3_file*>(s + 1);
  sqlite3_vfs* base = Base(vfs);
  int rc = base->xOpen(base, name, s->real, flags, out_flags);
  const sqlite3_io_methods* real_methods = s->real->pMethods;
  if (real_methods == nullptr) return rc == SQLITE_OK ? SQLITE_CANTOPEN : rc;
  // The base file is open (even if rc is an error), so this file must be
  // closable: SQLite calls xClose whenever pMethods is set.
  s->wal = (flags & SQLITE_OPEN_WAL) != 0;
  if ((flags & SQLITE_OPEN_MAIN_DB) != 0 && name != nullptr) s->paced = AcquirePaced(name);
  sqlite3_io_methods& m = s->methods;
  m.iVersion = real_methods->iVersion;
  m.xClose = ShimClose;
  m.xRead = ShimRead;
  m.xWrite = ShimWrite;
  m.xTruncate = ShimTruncate;
  m.xSync = ShimSync;
  m.xFileSize = ShimFileSize;
  m.xLock = ShimLock;
  m.xUnlock = ShimUnlock;
  m.xCheckReservedLock = ShimCheckReservedLock;
  m.xFileControl = ShimFileControl;
  m.xSectorSize = ShimSectorSize;
  m.xDeviceCharacteristics = ShimDeviceCharacteristics;
  if (m.iVersion >= 2) {
    m.xShmMap = ShimShmMap;
    m.xShmLock = ShimShmLock;
    m.xShmBarrier = ShimShmBarrier;
    m.xShmUnmap = ShimShmUnmap;
  }
  if (m.iVersion >= 3) {
    m.xFetch = ShimFetch;
    m.xUnfetch = ShimUnfetch;
  }
  s->head.pMethods = &m;
  return rc;
}

int ShimDelete(sqlite3_vfs* vfs, const char* name, int sync_dir) {
  return Base(vfs)->xDelete(Base(vfs), name, sync_dir);
}
int ShimAccess(sqlite3_vfs* vfs, const char* name, int flags, int* out) {
  return Base(vfs)->xAccess(Base(vfs), name, flags, out);
}
int ShimFullPathname(sqlite3_vfs* vfs, const char* name, int n, char* out) {
  return Base(vfs)->xFullPathname(Base(vfs), name, n, out);
}
void* ShimDlOpen(sqlite3_vfs* vfs, const char* name) { return Base(vfs)->xDlOpen(Base(vfs), name); }
void ShimDlError(sqlite3_vfs* vfs, int n, char* out) { Base(vfs)->xDlError(Base(vfs), n, out); }
void (*ShimDlSym(sqlite3_vfs* vfs, void* handle, const char* symbol))(void) {
  return Base(vfs)->xDlSym(Base(vfs), handle, symbol);
}
void ShimDlClose(sqlite3_vfs* vfs, void* handle) { Base(vfs)->xDlClose(Base(vfs), handle); }
int ShimRandomness(sqlite3_vfs* vfs, int n, char* out) {
  return Base(vfs)->xRandomness(Base(vfs), n, out);
}
int ShimSleep(sqlite3_vfs* vfs, int micros) { return Base(vfs)->xSleep(Base(vfs), micros); }
int ShimCurrentTime(sqlite3_vfs* vfs, double* out) {
  return Base(vfs)->xCurrentTime(Base(vfs), out);
}
int ShimGetLastError(sqlite3_vfs* vfs, int n, char* out) {
  return Base(vfs)->xGetLastError(Base(vfs), n, out);
}
int ShimCurrentTimeInt64(sqlite3_vfs* vfs, sqlite3_int64* out) {
  return Base(vfs)->xCurrentTimeInt64(Base(vfs), out);
}
int ShimSetSystemCall(sqlite3_vfs* vfs, const char* name, sqlite3_syscall_ptr call) {
  return Base(vfs)->xSetSystemCall(Base(vfs), name, call);
}
sqlite3_syscall_ptr ShimGetSystemCall(sqlite3_vfs* vfs, const char* name) {
  return Base(vfs)->xGetSystemCall(Base(vfs), name);
}
const char* ShimNextSystemCall(sqlite3_vfs* vfs, const char* name) {
  return Base(vfs)->xNextSystemCall(Base(vfs), name);
}

std::mutex registry_mu;
// Shims by base name; never freed (SQLite keeps pointers to them).
std::map<std::string, ShimVfs*>& Registry() {
  static auto* registry = new std::map<std::string, ShimVfs*>();
  return *registry;
}

}  // namespace

const char* WalCoalescingVfs(const char* base_name) {
  std::lock_guard<std::mutex> lock(registry_mu);
  sqlite3_vfs* base = sqlite3_vfs_find(base_name);
  if (base == nullptr) return nullptr;
  std::string key = base->zName;
  auto it = Registry().find(key);
  if (it != Registry().end()) return it->second->name.c_str();
  auto* shim = new ShimVfs{};
  shim->base = base;
  shim->name = "cerulean-wal-" + key;
  sqlite3_vfs& v = shim->vfs;
  v.iVersion = std::min(base->iVersion, 3);
  v.szOsFile = static_cast<int>(sizeof(ShimFile)) + base->szOsFile;
  v.mxPathname = base->mxPathname;
  v.zName = shim->name.c_str();
  v.pAppData = shim;
  v.xOpen = ShimOpen;
  v.xDelete = ShimDelete;
  v.xAccess = ShimAccess;
  v.xFullPathname = ShimFullPathname;
  v.xDlOpen = ShimDlOpen;
  v.xDlError = ShimDlError;
  v.xDlSym = ShimDlSym;
  v.xDlClose = ShimDlClose;
  v.xRandomness = ShimRandomness;
  v.xSleep = ShimSleep;
  v.xCurrentTime = ShimCurrentTime;
  v.xGetLastError = ShimGetLastError;
  if (v.iVersion >= 2) v.xCurrentTimeInt64 = ShimCurrentTimeInt64;
  if (v.iVersion >= 3) {
    v.xSetSystemCall = ShimSetSystemCall;
    v.xGetSystemCall = ShimGetSystemCall;
    v.xNextSystemCall = ShimNextSystemCall;
  }
  if (sqlite3_vfs_register(&v, 0) != SQLITE_OK) {
    delete shim;
    return nullptr;
  }
  Registry().emplace(key, shim);
  return shim->name.c_str();
}

uint64_t PacedWritebacksForTesting() { return paced_writebacks.load(std::memory_order_relaxed); }

sqlite3_file* WalBaseFile(sqlite3_file* file) {
  if (file == nullptr || file->pMethods == nullptr || file->pMethods->xClose != ShimClose) {
    return file;
  }
  return Shim(file)->real;
}

}  // namespace cerulean::storage
