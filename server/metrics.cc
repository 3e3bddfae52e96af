#include "server/metrics.h"

#include "server/request.h"

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
    out += "cerulean_requests_total{operation=\"" + key.first + "\",status=\"" + std::to_string(key.second) +
           "\"} " + std::to_string(n) + "\n";
  }
  out += "# HELP cerulean_request_duration_seconds Time to answer a request.\n";
  out += "# TYPE cerulean_request_duration_seconds histogram\n";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kBucketsMs.size(); ++i) {
    cumulative += buckets_[i];
    out += "cerulean_request_duration_seconds_bucket{le=\"" + std::to_string(kBucketsMs[i] / 1000) + "\"} " +
           std::to_string(cumulative) + "\n";
  }
  cumulative += buckets_.back();
  out += "cerulean_request_duration_seconds_bucket{le=\"+Inf\"} " + std::to_string(cumulative) + "\n";
  out += "cerulean_request_duration_seconds_sum " + std::to_string(sum_ms_ / 1000) + "\n";
  out += "cerulean_request_duration_seconds_count " + std::to_string(count_) + "\n";
  return out;
}

}  // namespace cerulean::server
