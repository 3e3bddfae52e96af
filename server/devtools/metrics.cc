#include "server/devtools/metrics.h"

#include <algorithm>
#include <tuple>
#include <vector>

#include "server/protocol/routes.h"
#include "storage/store.h"

namespace cerulean::server {

namespace {
constexpr size_t kAdminSlot = static_cast<size_t>(Operation::kSnapshots) + 1;
}  // namespace

void Metrics::Record(const Request& req, int status, double ms) {
  static_assert(kAdminSlot < kOperationSlots);
  size_t op = req.account.empty() ? kAdminSlot : static_cast<size_t>(req.op);
  if (status < kFirstStatus || status >= kFirstStatus + static_cast<int>(kStatusSlots)) return;
  requests_[op][static_cast<size_t>(status - kFirstStatus)].fetch_add(1, std::memory_order_relaxed);
  size_t i = 0;
  while (i < kBucketsMs.size() && ms > kBucketsMs[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_us_.fetch_add(static_cast<uint64_t>(ms * 1000), std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

std::string Metrics::Render() const {
  // (operation, status, count), sorted by name for a stable exposition.
  std::vector<std::tuple<std::string, int, uint64_t>> rows;
  for (size_t op = 0; op <= kAdminSlot; ++op) {
    for (size_t st = 0; st < kStatusSlots; ++st) {
      uint64_t n = requests_[op][st].load(std::memory_order_relaxed);
      if (n == 0) continue;
      std::string name = op == kAdminSlot ? std::string("Admin")
                                          : std::string(OperationName(static_cast<Operation>(op)));
      rows.emplace_back(std::move(name), static_cast<int>(st) + kFirstStatus, n);
    }
  }
  std::sort(rows.begin(), rows.end());
  std::string out;
  out += "# HELP cerulean_requests_total Requests answered, by operation and status.\n";
  out += "# TYPE cerulean_requests_total counter\n";
  for (const auto& [name, status, n] : rows) {
    out += "cerulean_requests_total{operation=\"" + name + "\",status=\"" + std::to_string(status) +
           "\"} " + std::to_string(n) + "\n";
  }
  out += "# HELP cerulean_request_duration_seconds Time to answer a request.\n";
  out += "# TYPE cerulean_request_duration_seconds histogram\n";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kBucketsMs.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    out += "cerulean_request_duration_seconds_bucket{le=\"" + std::to_string(kBucketsMs[i] / 1000) +
           "\"} " + std::to_string(cumulative) + "\n";
  }
  cumulative += buckets_.back().load(std::memory_order_relaxed);
  out +=
      "cerulean_request_duration_seconds_bucket{le=\"+Inf\"} " + std::to_string(cumulative) + "\n";
  out += "cerulean_request_duration_seconds_sum " +
         std::to_string(static_cast<double>(sum_us_.load(std::memory_order_relaxed)) / 1e6) + "\n";
  out += "cerulean_request_duration_seconds_count " +
         std::to_string(count_.load(std::memory_order_relaxed)) + "\n";
  out +=
      "# HELP cerulean_queries_total Query Entities requests, by where they were answered: on the "
      "thread that read them (inline: a short page of key ranges only) or on the blocking pool "
      "(deferred).\n"
      "# TYPE cerulean_queries_total counter\n";
  out += "cerulean_queries_total{answered=\"deferred\"} " +
         std::to_string(queries_[0].load(std::memory_order_relaxed)) + "\n";
  out += "cerulean_queries_total{answered=\"inline\"} " +
         std::to_string(queries_[1].load(std::memory_order_relaxed)) + "\n";
  return out;
}

void Metrics::TrackMemory(std::string structure, std::function<MemoryUse()> read) {
  std::lock_guard lock(memory_mu_);
  memory_.emplace_back(std::move(structure), std::move(read));
}

std::string Metrics::RenderMemory(const storage::Store& store) const {
  // (structure, use), sorted by structure for a stable exposition.
  std::vector<std::pair<std::string, MemoryUse>> rows;
  {
    std::lock_guard lock(memory_mu_);
    for (const auto& [structure, read] : memory_) rows.emplace_back(structure, read());
  }
  std::vector<std::pair<std::string, MemoryUse>> stored;
  for (const auto& g : store.Gauges()) {
    std::string_view name = g.name;
    const bool bytes = name.ends_with(storage::kMemoryBytesSuffix);
    if (!bytes && !name.ends_with(storage::kMemoryEntriesSuffix)) continue;
    name.remove_suffix(bytes ? storage::kMemoryBytesSuffix.size()
                             : storage::kMemoryEntriesSuffix.size());
    auto it = std::find_if(stored.begin(), stored.end(),
                           [&](const auto& row) { return row.first == name; });
    if (it == stored.end()) it = stored.insert(stored.end(), {std::string(name), MemoryUse{}});
    (bytes ? it->second.bytes : it->second.entries) = g.value;
  }
  rows.insert(rows.end(), stored.begin(), stored.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out;
  out +=
      "# HELP cerulean_memory_bytes Bytes held by each bounded in-memory structure "
      "(server/README.md, \"Memory bounds\").\n"
      "# TYPE cerulean_memory_bytes gauge\n";
  for (const auto& [structure, use] : rows) {
    out += "cerulean_memory_bytes{structure=\"" + structure + "\"} " + std::to_string(use.bytes) +
           "\n";
  }
  out +=
      "# HELP cerulean_memory_entries Entries held by each bounded in-memory structure.\n"
      "# TYPE cerulean_memory_entries gauge\n";
  for (const auto& [structure, use] : rows) {
    out += "cerulean_memory_entries{structure=\"" + structure + "\"} " +
           std::to_string(use.entries) + "\n";
  }
  return out;
}

namespace {
// The store's own figures (Store::Gauges), read at each scrape; memory
// figures are rendered by RenderMemory.
std::string RenderStoreGauges(const storage::Store& store) {
  std::string out;
  for (const auto& g : store.Gauges()) {
    if (g.name.ends_with(storage::kMemoryBytesSuffix) ||
        g.name.ends_with(storage::kMemoryEntriesSuffix)) {
      continue;
    }
    const std::string name = "cerulean_store_" + g.name;
    out += "# HELP " + name + " " + g.description + "\n";
    out += "# TYPE " + name + (g.counter ? " counter\n" : " gauge\n");
    out += name + " " + std::to_string(g.value) + "\n";
  }
  return out;
}
}  // namespace

std::string Metrics::RenderUsage(storage::Store& store, bool all_accounts,
                                 std::string_view account) {
  const std::string live = RenderStoreGauges(store);
  std::lock_guard lock(usage_mu_);
  auto now = std::chrono::steady_clock::now();
  if (!usage_known_ || now - usage_time_ >= kUsageMaxAge) {
    std::vector<storage::AccountUsage> accounts;
    uint64_t bytes = 0;
    if (store.GetUsage(&accounts, &bytes).ok()) {
      usage_accounts_.clear();
      for (auto& a : accounts) {
        usage_accounts_.push_back({std::move(a.account), a.tables, a.entities});
      }
      usage_bytes_ = bytes;
      usage_known_ = true;
      usage_time_ = now;
    }
  }
  if (!usage_known_) return live;
  auto shown = [&](const AccountCounts& a) { return all_accounts || a.account == account; };
  std::string out;
  out += "# HELP cerulean_tables Tables per account.\n";
  out += "# TYPE cerulean_tables gauge\n";
  for (const auto& a : usage_accounts_) {
    if (!shown(a)) continue;
    out += "cerulean_tables{account=\"" + a.account + "\"} " + std::to_string(a.tables) + "\n";
  }
  out += "# HELP cerulean_entities Entities per account (recomputed at most every " +
         std::to_string(kUsageMaxAge.count()) + " s).\n";
  out += "# TYPE cerulean_entities gauge\n";
  for (const auto& a : usage_accounts_) {
    if (!shown(a)) continue;
    out += "cerulean_entities{account=\"" + a.account + "\"} " + std::to_string(a.entities) + "\n";
  }
  out += "# HELP cerulean_storage_bytes Bytes of the database files (0 in memory).\n";
  out += "# TYPE cerulean_storage_bytes gauge\n";
  out += "cerulean_storage_bytes " + std::to_string(usage_bytes_) + "\n";
  return out + live;
}

}  // namespace cerulean::server
