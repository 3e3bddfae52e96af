// libFuzzer entry for the $filter parser, planner and evaluator, and the key
// path parser. Besides "no crash, no hang, no sanitizer report" it checks the
// plan invariant on entities whose keys are the filter's own string literals
// (the interesting boundaries): a matching entity lies in exactly one range
// and passes the residual, and with no residual every entity in a range
// matches. The plan is checked as Compile makes it and within tiny limits,
// which coarsen small filters as the real limits coarsen large ones. Seeds:
// odata/fuzz_seeds/filter/. Build and run: see odata/README.md.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "odata/ast.h"
#include "odata/parser.h"
#include "odata/planner.h"
#include "odata/query.h"

namespace {

using cerulean::odata::Expr;
using cerulean::odata::ExprKind;

void CollectStrings(const Expr& e, std::vector<std::string>* out) {
  if (e.kind() == ExprKind::kCompare && e.literal().type() == cerulean::storage::EdmType::kString &&
      out->size() < 8) {
    out->push_back(e.literal().string());
    out->push_back(e.literal().string() + "a");
  }
  for (const auto& c : e.children()) CollectStrings(*c, out);
}

void CheckPlan(const cerulean::odata::Filter& filter, const cerulean::odata::QueryPlan& plan) {
  (void)plan.ToString();
  std::vector<std::string> keys = {""};
  CollectStrings(filter.root(), &keys);
  cerulean::storage::Entity e;
  e.properties.push_back({"A", cerulean::storage::Value::Int32(1)});
  e.properties.push_back({"Flag", cerulean::storage::Value::Boolean(true)});
  for (const std::string& pk : keys) {
    for (const std::string& rk : keys) {
      e.partition_key = pk;
      e.row_key = rk;
      size_t hits = 0;
      for (const auto& r : plan.ranges) hits += r.Contains(pk, rk) ? 1 : 0;
      if (hits > 1) std::abort();  // overlapping ranges
      bool naive = cerulean::odata::Matches(filter, e);
      bool planned = hits == 1 && (!plan.residual || cerulean::odata::Matches(*plan.residual, e));
      if (naive != planned) std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto filter = cerulean::odata::ParseFilter(text);
  if (filter.ok()) {
    (void)filter->ToString();
    (void)cerulean::odata::MatchesTable(*filter, "t");
    (void)cerulean::odata::ReferencedProperties(*filter);
    CheckPlan(*filter, cerulean::odata::Compile(&*filter));
    const cerulean::odata::PlanLimits tiny{4 + size % 9, size % 7 == 0 ? size : 1 << 16};
    cerulean::odata::QueryPlan coarse = cerulean::odata::CompileWithin(&*filter, tiny);
    if (coarse.ranges.size() > tiny.max_map_entries) std::abort();
    CheckPlan(*filter, coarse);
  } else if (filter.status().message().find(" at ") == std::string::npos &&
             size <= cerulean::odata::kMaxFilterBytes) {
    std::abort();  // every parse error says where
  }
  auto key = cerulean::odata::ParseKeyPath(text);
  (void)key;
  return 0;
}
