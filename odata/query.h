// OData $filter for the Table service: parse -> AST -> type check ->
// QueryPlan {key ranges, residual} -> evaluation. Also the entity key path
// "(PartitionKey='a',RowKey='b')". No HTTP, no Store: only storage value types.
// Thread-safety: parsed filters and plans are immutable and may be shared
// across threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "storage/key_range.h"
#include "storage/status.h"
#include "storage/value.h"

namespace cerulean::odata {

class Expr;  // AST node, defined in odata/ast.h

// A parsed, type-checked $filter. Immutable.
class Filter {
 public:
  explicit Filter(std::shared_ptr<const Expr> root);
  const Expr& root() const { return *root_; }
  // S-expression of the AST, e.g. "(and (eq PartitionKey 'a') (ge RowKey 'b'))".
  std::string ToString() const;

 private:
  std::shared_ptr<const Expr> root_;
};

// An upper bound of the nodes Matches visits to evaluate `filter` on one row
// (an equality list, Expr::eq_strings, counts one per halving): what a row
// costs, so that a scan can bound the work of a page.
size_t EvaluationCost(const Filter& filter);

// Names of the properties `filter` refers to, sorted, without duplicates
// (Query Tables rejects filters on anything but TableName).
std::vector<std::string> ReferencedProperties(const Filter& filter);

// What a filter is evaluated on. It decides which properties have a known
// type: for entities PartitionKey and RowKey (Edm.String) and Timestamp
// (Edm.DateTime), for Query Tables TableName (Edm.String). Such a property
// is never a Boolean, so used as a predicate it is an error.
enum class FilterScope : uint8_t { kEntities, kTables };

// Parses a $filter expression. Errors are kInvalidArgument with a message
// that says where, e.g. "expected ')' at 23". Never throws, bounded work for
// any input (depth and length limits).
storage::Result<Filter> ParseFilter(std::string_view text,
                                    FilterScope scope = FilterScope::kEntities);

// True iff `entity` matches the filter (Azure semantics: type-strict
// comparisons, missing properties match nothing, PartitionKey/RowKey/Timestamp
// are the system properties).
bool Matches(const Filter& filter, const storage::Entity& entity);

// True iff a table named `table_name` matches a Query Tables filter (the only
// property is TableName; every other property is missing).
bool MatchesTable(const Filter& filter, std::string_view table_name);

// What Query Entities scans: sorted, non-overlapping key ranges, and the
// filter applied to every row of those ranges (a row outside them can never
// match). `ranges` empty = nothing can match (no scan needed).
struct QueryPlan {
  std::vector<storage::KeyRange> ranges;
  // Residual predicate; null when the ranges alone decide (no filter, or a
  // filter made only of key bounds that the ranges express exactly).
  std::shared_ptr<const Filter> residual;
  // E.g. "ranges: ['a','b' .. 'a','c'); residual: (gt Amount 5)".
  std::string ToString() const;
};

// Derives the plan of a filter (or of no filter: one full range).
QueryPlan Compile(const Filter* filter);

// A parsed entity key path.
struct KeyPath {
  std::string partition_key;
  std::string row_key;
};

// Parses "PartitionKey='a',RowKey='b'" (the text between the parentheses,
// already percent-decoded; '' inside a quoted key stands for one quote).
// kInvalidArgument on any other shape.
storage::Result<KeyPath> ParseKeyPath(std::string_view text);

}  // namespace cerulean::odata
