#include "storage/sqlite/page_cache.h"

#include <algorithm>
#include <cstring>

namespace cerulean::storage {

PageCache::PageCache(int page_bytes, int64_t capacity_pages)
    : page_bytes_(page_bytes), capacity_(std::max<int64_t>(0, capacity_pages)) {
  slot_page_.assign(static_cast<size_t>(capacity_), kNone);
  slot_referenced_.assign(static_cast<size_t>(capacity_), 0);
  slot_data_.resize(static_cast<size_t>(capacity_));
  free_slots_.reserve(static_cast<size_t>(capacity_));
  for (int64_t i = capacity_ - 1; i >= 0; --i) free_slots_.push_back(static_cast<int32_t>(i));
  size_t buckets = 16;
  while (buckets < static_cast<size_t>(capacity_) * 2) buckets *= 2;
  table_.assign(buckets, kNone);
  mask_ = buckets - 1;
}

PageCache::~PageCache() = default;

size_t PageCache::Bucket(int64_t page) const {
  return static_cast<size_t>((static_cast<uint64_t>(page) * 0x9E3779B97F4A7C15ull) >> 29) & mask_;
}

int32_t PageCache::FindLocked(int64_t page) const {
  for (size_t b = Bucket(page);; b = (b + 1) & mask_) {
    const int32_t slot = table_[b];
    if (slot == kNone || slot_page_[static_cast<size_t>(slot)] == page) return slot;
  }
}

bool PageCache::Lookup(int64_t page, void* out, uint64_t* epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  const int32_t slot = capacity_ > 0 ? FindLocked(page) : kNone;
  if (slot == kNone) {
    ++stats_.misses;
    *epoch = epoch_;
    return false;
  }
  slot_referenced_[static_cast<size_t>(slot)] = 1;
  std::memcpy(out, slot_data_[static_cast<size_t>(slot)].get(), static_cast<size_t>(page_bytes_));
  ++stats_.hits;
  return true;
}

void PageCache::Offer(int64_t page, const void* data, uint64_t epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  if (capacity_ == 0 || epoch != epoch_ || FindLocked(page) != kNone) return;
  int32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    // CLOCK: every slot holds a page; pass over recently used ones once.
    while (slot_referenced_[hand_] != 0) {
      slot_referenced_[hand_] = 0;
      hand_ = (hand_ + 1) % static_cast<size_t>(capacity_);
    }
    slot = static_cast<int32_t>(hand_);
    hand_ = (hand_ + 1) % static_cast<size_t>(capacity_);
    DropSlotLocked(slot);
    free_slots_.pop_back();  // DropSlotLocked freed it
  }
  const auto s = static_cast<size_t>(slot);
  if (!slot_data_[s]) slot_data_[s] = std::make_unique<char[]>(static_cast<size_t>(page_bytes_));
  std::memcpy(slot_data_[s].get(), data, static_cast<size_t>(page_bytes_));
  slot_page_[s] = page;
  slot_referenced_[s] = 0;
  size_t b = Bucket(page);
  while (table_[b] != kNone) b = (b + 1) & mask_;
  table_[b] = slot;
  ++used_;
}

void PageCache::DropSlotLocked(int32_t slot) {
  const int64_t page = slot_page_[static_cast<size_t>(slot)];
  size_t hole = Bucket(page);
  while (table_[hole] != slot) hole = (hole + 1) & mask_;
  table_[hole] = kNone;
  // Backward-shift: move later entries of the probe run into the hole when
  // their home bucket does not lie cyclically in (hole, j].
  for (size_t j = (hole + 1) & mask_; table_[j] != kNone; j = (j + 1) & mask_) {
    const size_t home = Bucket(slot_page_[static_cast<size_t>(table_[j])]);
    const bool home_in_gap = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (!home_in_gap) {
      table_[hole] = table_[j];
      table_[j] = kNone;
      hole = j;
    }
  }
  slot_page_[static_cast<size_t>(slot)] = kNone;
  slot_referenced_[static_cast<size_t>(slot)] = 0;
  free_slots_.push_back(slot);
  --used_;
}

void PageCache::DropRangeLocked(int64_t first_page, int64_t end_page) {
  if (used_ == 0 || end_page <= first_page) return;
  if (end_page - first_page <= 64) {
    for (int64_t page = first_page; page < end_page; ++page) {
      const int32_t slot = FindLocked(page);
      if (slot != kNone) DropSlotLocked(slot);
    }
    return;
  }
  for (size_t s = 0; s < slot_page_.size(); ++s) {
    const int64_t page = slot_page_[s];
    if (page != kNone && page >= first_page && page < end_page) {
      DropSlotLocked(static_cast<int32_t>(s));
    }
  }
}

void PageCache::DropWritten(int64_t offset, int64_t amount) {
  std::lock_guard<std::mutex> lock(mu_);
  ++epoch_;
  if (amount <= 0) return;
  DropRangeLocked(offset / page_bytes_, (offset + amount + page_bytes_ - 1) / page_bytes_);
}

void PageCache::DropFrom(int64_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  ++epoch_;
  // The page that the new end falls in changes too (its tail reads as zeros).
  DropRangeLocked(std::max<int64_t>(0, size) / page_bytes_, INT64_MAX);
}

PageCache::Stats PageCache::GetStats() {
  std::lock_guard<std::mutex> lock(mu_);
  Stats stats = stats_;
  stats.pages = used_;
  return stats;
}

}  // namespace cerulean::storage
