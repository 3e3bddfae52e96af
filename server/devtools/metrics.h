// Request counters and a latency histogram, exported in Prometheus text
// format on /_metrics.
// Thread-safety: Record and Render may be called concurrently; Record takes
// no lock (atomic counters), it runs on every request.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace cerulean::storage {
class Store;
}  // namespace cerulean::storage

namespace cerulean::server {

struct Request;

// The memory an in-memory structure holds now, for /_metrics.
struct MemoryUse {
  uint64_t bytes = 0;
  uint64_t entries = 0;
};

class Metrics {
 public:
  void Record(const Request& req, int status, double ms);
  // A Query Entities request answered on the thread that read it
  // (`inline_answer`), or left to the blocking pool.
  void RecordQuery(bool inline_answer) {
    queries_[inline_answer ? 1 : 0].fetch_add(1, std::memory_order_relaxed);
  }
  // Prometheus exposition text of everything recorded so far.
  std::string Render() const;
  // Gauges of what `store` holds: tables and entities per account (of
  // every account if `all_accounts`, else of `account` only, of none when it
  // is empty), bytes on disk. Counting entities reads every row, so the
  // figures are recomputed at most every kUsageMaxAge and shared by the
  // scrapes in between. Then the store's own figures (Store::Gauges),
  // current.
  std::string RenderUsage(storage::Store& store, bool all_accounts, std::string_view account);

  // Registers a structure whose memory /_metrics reports as
  // cerulean_memory_bytes{structure="<structure>"} and
  // cerulean_memory_entries{...}; `read` is called at each scrape, from the
  // thread that renders it, and must stay callable as long as this object.
  // Structures are registered once, at start-up (main.cc); the bound of each
  // is stated where it is defined (server/README.md, "Memory bounds").
  void TrackMemory(std::string structure, std::function<MemoryUse()> read);
  // cerulean_memory_bytes and cerulean_memory_entries of every registered
  // structure and of the store's (Store::Gauges with a structure), current.
  std::string RenderMemory(const storage::Store& store) const;

  static constexpr std::chrono::seconds kUsageMaxAge{10};

  static constexpr std::array<double, 12> kBucketsMs = {0.1, 0.25, 0.5, 1,   2.5, 5,
                                                        10,  25,   50,  100, 250, 1000};

 private:
  // Counters by (operation, status): operations by enum value plus one for
  // the reserved /_ endpoints ("Admin"); statuses 100..599.
  static constexpr size_t kOperationSlots = 32;
  static constexpr int kFirstStatus = 100;
  static constexpr size_t kStatusSlots = 500;
  std::array<std::array<std::atomic<uint64_t>, kStatusSlots>, kOperationSlots> requests_{};
  std::array<std::atomic<uint64_t>, kBucketsMs.size() + 1> buckets_{};
  std::atomic<uint64_t> sum_us_{0};
  std::atomic<uint64_t> count_{0};
  std::array<std::atomic<uint64_t>, 2> queries_{};  // [deferred, inline]

  mutable std::mutex memory_mu_;
  std::vector<std::pair<std::string, std::function<MemoryUse()>>> memory_;  // guarded by memory_mu_

  struct AccountCounts {
    std::string account;
    uint64_t tables = 0;
    uint64_t entities = 0;
  };
  std::mutex usage_mu_;       // held while usage is recomputed: one count at a time
  bool usage_known_ = false;  // guarded by usage_mu_
  std::vector<AccountCounts> usage_accounts_;         // guarded by usage_mu_
  uint64_t usage_bytes_ = 0;                          // guarded by usage_mu_
  std::chrono::steady_clock::time_point usage_time_;  // guarded by usage_mu_
};

}  // namespace cerulean::server
