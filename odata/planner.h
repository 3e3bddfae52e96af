// The planner's bounds (odata/planner.cc). The public entry is
// odata::Compile in odata/query.h, which uses kPlanLimits; tests compile
// with smaller limits to reach the coarsened plans with small filters.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>

#include "odata/query.h"

namespace cerulean::odata {

struct PlanLimits {
  // Entries (pieces plus row intervals, key_set.h) of any one map, and so
  // the most key ranges a plan has. REQUIRES: >= 4.
  size_t max_map_entries;
  // Steps (an interval or piece visited or written) of all map operations
  // of one plan; past it the plan is one full range with the whole filter
  // as residual.
  size_t max_steps;
};

// A list of 1000 keys needs about 3000 entries, so it keeps an exact plan;
// an `and` of two such lists (a million keys) is coarsened to one range per
// partition. Maps of bounded size keep the steps of any filter of up to
// kMaxFilterBytes far below the ceiling, which only bounds the worst case.
inline constexpr PlanLimits kPlanLimits{4096, size_t{1} << 16};

// Compile (query.h) within `limits`.
QueryPlan CompileWithin(const Filter* filter, const PlanLimits& limits);

}  // namespace cerulean::odata
