#include "server/protocol/query_plan_header.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace cerulean::server {

namespace {

// Keeps the header well below what clients accept in one response header.
constexpr size_t kMaxResidualText = 2000;

}  // namespace

std::string QueryPlanHeaderValue(const odata::QueryPlan& plan, const QueryPlanReport& report) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::object();
  nlohmann::ordered_json ranges = nlohmann::ordered_json::array();
  for (const auto& range : plan.ranges) ranges.push_back(range.ToString());
  doc["ranges"] = std::move(ranges);
  if (plan.residual) {
    std::string residual = plan.residual->ToString();
    if (residual.size() > kMaxResidualText) {
      residual.resize(kMaxResidualText);
      residual += "...";
    }
    doc["residual"] = std::move(residual);
  } else {
    doc["residual"] = nullptr;
  }
  doc["examined"] = report.examined;
  doc["returned"] = report.returned;
  doc["elapsedMs"] = std::round(report.elapsed_ms * 1000) / 1000;
  doc["more"] = report.more;
  // ensure_ascii: a header value holds no raw UTF-8 or control characters;
  // a cut in the middle of a UTF-8 sequence is replaced, not thrown.
  return doc.dump(-1, ' ', true, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace cerulean::server
