// A page cache shared by every connection of one database file.
//
// In WAL mode SQLite empties a connection's own page cache whenever another
// connection has committed since its last read transaction (the pager cannot
// tell which pages changed). Under a trickle of writes every connection's
// own cache is therefore nearly always empty, and a point read of a large
// table reads its B-tree pages from the file again. The shim (wal_vfs.h) keeps the
// database file's pages here, so such a re-read is a copy from memory. (A
// memory-mapped database file is no substitute: every read transaction after
// a commit remaps the grown file and faults its pages in again.)
//
// Coherence: the cache holds what the file holds. A write or truncate drops
// the pages it touches before and after it changes the file, and a read
// stores what it read only if no write or truncate began or ended meanwhile
// (an epoch), so a read racing a write never stores the old bytes.
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace cerulean::storage {

class PageCache {
 public:
  // Pages of `page_bytes` each, at most `capacity_pages` of them (0: the
  // cache holds nothing).
  PageCache(int page_bytes, int64_t capacity_pages);
  ~PageCache();
  PageCache(const PageCache&) = delete;
  PageCache& operator=(const PageCache&) = delete;

  int page_bytes() const { return page_bytes_; }

  // Copies page `page` into `out` (page_bytes) if cached. Otherwise sets
  // `*epoch` for the reader, which reads the file and then offers the page;
  // it is stored only if the epoch is still the same.
  bool Lookup(int64_t page, void* out, uint64_t* epoch);
  void Offer(int64_t page, const void* data, uint64_t epoch);

  // Called both before and after the file's bytes [offset, offset + amount)
  // are written (also when the write failed).
  void DropWritten(int64_t offset, int64_t amount);
  // Called both before and after the file is truncated to `size` bytes.
  void DropFrom(int64_t size);

  struct Stats {
    uint64_t hits = 0;
    uint64_t misses = 0;
    int64_t pages = 0;  // held now
  };
  Stats GetStats();

 private:
  static constexpr int32_t kNone = -1;

  void DropRangeLocked(int64_t first_page, int64_t end_page);
  void DropSlotLocked(int32_t slot);
  int32_t FindLocked(int64_t page) const;
  size_t Bucket(int64_t page) const;

  const int page_bytes_;
  const int64_t capacity_;
  std::mutex mu_;
  uint64_t epoch_ = 0;  // guarded by mu_
  // Slots: the page each holds (kNone: free), its CLOCK bit and its bytes
  // (allocated on first use, so memory follows what is cached).
  std::vector<int64_t> slot_page_;
  std::vector<uint8_t> slot_referenced_;
  std::vector<std::unique_ptr<char[]>> slot_data_;
  std::vector<int32_t> free_slots_;
  int64_t used_ = 0;
  size_t hand_ = 0;
  // Open addressing, linear probing, tombstone-free (backward-shift delete):
  // page -> slot.
  std::vector<int32_t> table_;
  size_t mask_ = 0;
  Stats stats_;
};

}  // namespace cerulean::storage
