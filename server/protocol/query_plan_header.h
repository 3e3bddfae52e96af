// The x-cerulean-query-plan response header: how a Query Entities page ran
// (the key ranges scanned, the residual predicate, rows examined and
// returned, time taken). Sent only when the request carries the header of
// the same name (any non-empty value), so other clients and the query path
// are unaffected.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "odata/query.h"

namespace cerulean::server {

inline constexpr std::string_view kQueryPlanHeader = "x-cerulean-query-plan";

// What one page of a query did.
struct QueryPlanReport {
  size_t examined = 0;  // rows read from the key ranges, matching or not
  size_t returned = 0;  // rows written to the page
  double elapsed_ms = 0;
  bool more = false;  // the page ended with a continuation
};

// The header value: one line of JSON, ASCII only (other characters as \u
// escapes), e.g. {"ranges":["['a' .. 'a']"],"residual":"(gt Amount 5)",
// "examined":12,"returned":3,"elapsedMs":0.21,"more":false}. "ranges" is []
// when the filter can match nothing; "residual" is null when the ranges
// alone decide. A residual longer than 2,000 characters is cut short,
// ending in "...".
std::string QueryPlanHeaderValue(const odata::QueryPlan& plan, const QueryPlanReport& report);

}  // namespace cerulean::server
