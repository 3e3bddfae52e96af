// Comparison semantics of $filter (query.md §3), shared by the evaluator
// and its tests. The public entries are odata::Matches / MatchesTable in
// odata/query.h.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "odata/ast.h"
#include "storage/value.h"

namespace cerulean::odata {

// Three-way order of a property value against a literal: <0, 0, >0, or
// nullopt when they are not comparable (incompatible types, or a NaN).
// Compatibility (query.md §3.3): a literal compares with a property of the
// same type; an Int32 literal also with Int64 and Double properties, an
// Int64 literal also with Double properties (converted to double, as .NET
// does).
std::optional<int> OrderValue(const storage::Value& property, const storage::Value& literal);
std::optional<int> OrderString(std::string_view property, const storage::Value& literal);
std::optional<int> OrderTicks(int64_t property_ticks, const storage::Value& literal);

// The result of `property op literal` given their order: a comparable pair
// compares; a non-comparable one gives eq false, ne true, ordering false
// (the spec's recommendation; a missing property is handled by the caller
// and gives false for every operator).
bool ApplyCmp(CmpOp op, std::optional<int> order);

}  // namespace cerulean::odata
