#include "server/metrics.h"

#include "server/request.h"
#include "storage/store.h"

namespace cerulean::server {

void Metrics::Record(const Request& req, int status, double ms) {
  std::string op = req.account.empty() ? std::string("Admin") : std::string(OperationName(req.op));
  std::lock_guard lock(mu_);
  ++requests_[{std::move(op), status}];
  size_t i = 0;
  while (i < kBucketsMs.size() && ms > kBucketsMs[i]) ++i;
  ++buckets_[i];
  sum_ms_ += ms;
  ++count_;
}

std::string Metrics::Render() const {
  std::lock_guard lock(mu_);
  std::string out;
  out += "# HELP cerulean_requests_total Requests answered, by operation and status.\n";
  out += "# TYPE cerulean_requests_total counter\n";
  for (const auto& [key, n] : requests_) {
    out += "cerulean_requests_total{operation=\"" + key.first + "\",status=\"" +
           std::to_string(key.second) + "\"} " + std::to_string(n) + "\n";
  }
  out += "# HELP cerulean_request_duration_seconds Time to answer a request.\n";
  out += "# TYPE cerulean_request_duration_seconds histogram\n";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kBucketsMs.size(); ++i) {
    cumulative += buckets_[i];
    out += "cerulean_request_duration_seconds_bucket{le=\"" + std::to_string(kBucketsMs[i] / 1000) +
           "\"} " + std::to_string(cumulative) + "\n";
  }
  cumulative += buckets_.back();
  out +=
      "cerulean_request_duration_seconds_bucket{le=\"+Inf\"} " + std::to_string(cumulative) + "\n";
  out += "cerulean_request_duration_seconds_sum " + std::to_string(sum_ms_ / 1000) + "\n";
  out += "cerulean_request_duration_seconds_count " + std::to_string(count_) + "\n";
  return out;
}

std::string Metrics::RenderUsage(storage::Store& store) {
  std::lock_guard lock(usage_mu_);
  auto now = std::chrono::steady_clock::now();
  if (!usage_text_.empty() && now - usage_time_ < kUsageMaxAge) return usage_text_;
  std::vector<storage::AccountUsage> accounts;
  uint64_t bytes = 0;
  if (!store.GetUsage(&accounts, &bytes).ok()) return usage_text_;
  std::string out;
  out += "# HELP cerulean_tables Tables per account.\n";
  out += "# TYPE cerulean_tables gauge\n";
  for (const auto& a : accounts) {
    out += "cerulean_tables{account=\"" + a.account + "\"} " + std::to_string(a.tables) + "\n";
  }
  out += "# HELP cerulean_entities Entities per account (recomputed at most every " +
         std::to_string(kUsageMaxAge.count()) + " s).\n";
  out += "# TYPE cerulean_entities gauge\n";
  for (const auto& a : accounts) {
    out += "cerulean_entities{account=\"" + a.account + "\"} " + std::to_string(a.entities) + "\n";
  }
  out += "# HELP cerulean_storage_bytes Bytes of the database files (0 in memory).\n";
  out += "# TYPE cerulean_storage_bytes gauge\n";
  out += "cerulean_storage_bytes " + std::to_string(bytes) + "\n";
  usage_text_ = std::move(out);
  usage_time_ = now;
  return usage_text_;
}

}  // namespace cerulean::server
