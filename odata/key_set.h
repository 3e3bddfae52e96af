// Set algebra over the (PartitionKey, RowKey) key space, used by the
// planner (odata/planner.cc) to turn key comparisons combined with and / or /
// not into key ranges.
//
// * A Cut is a position between strings of the ordinal (UTF-16) order:
//   just before or just after a string, or at either end.
// * An IntervalSet is a sorted list of disjoint, non-touching half-open
//   intervals [lo, hi) of cuts: a set of strings closed under and/or/not.
// * A KeyMap assigns a RowKey set to every PartitionKey: a list of pieces
//   that partition the whole PartitionKey line, each with the set of RowKeys
//   it admits. It represents any Boolean combination of PartitionKey and
//   RowKey comparisons exactly. Its size grows only linearly under or / not,
//   but an `and` of a PartitionKey list and a RowKey list is their product,
//   so every map operation is bounded (MapBudget): a result that would not
//   fit is replaced by a coarser superset of it (Coarsen), and the work of
//   a whole plan has a ceiling.
// Cuts hold views of strings they do not own (the filter's literals): a set
// or map lives no longer than the filter it was built from.
// Thread-safety: value types and pure functions; a MapBudget is used by one
// thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "odata/ast.h"
#include "storage/key_range.h"

namespace cerulean::odata {

struct Cut {
  enum class Kind : uint8_t { kNegInf, kBefore, kAfter, kPosInf };
  Kind kind = Kind::kNegInf;
  std::string_view s;  // kBefore / kAfter only

  static Cut NegInf() { return {}; }
  static Cut PosInf() { return {Kind::kPosInf, {}}; }
  // Before("") is normalised to NegInf ("" is the least string), so equal
  // positions compare equal as values in the common cases.
  static Cut Before(std::string_view s);
  static Cut After(std::string_view s) { return {Kind::kAfter, s}; }
  friend bool operator==(const Cut&, const Cut&) = default;
};

// <0, 0, >0 in key order.
int CompareCuts(const Cut& a, const Cut& b);

struct Interval {
  Cut lo, hi;  // [lo, hi); lo < hi
  friend bool operator==(const Interval&, const Interval&) = default;
};
using IntervalSet = std::vector<Interval>;

// The set operations cost O(output + inputs skipped in O(log n) jumps); each
// adds the intervals it visited to *steps when `steps` is not null. The
// ...Into forms append their result to *out.
using Intervals = std::span<const Interval>;
IntervalSet AllStrings();
void UnionInto(Intervals a, Intervals b, IntervalSet* out, size_t* steps = nullptr);
void IntersectInto(Intervals a, Intervals b, IntervalSet* out, size_t* steps = nullptr);
void ComplementInto(Intervals a, IntervalSet* out, size_t* steps = nullptr);
IntervalSet Union(Intervals a, Intervals b, size_t* steps = nullptr);
IntervalSet Intersect(Intervals a, Intervals b, size_t* steps = nullptr);
IntervalSet Complement(Intervals a, size_t* steps = nullptr);
// The union of any intervals, in any order: O(n log n).
IntervalSet UnionAll(std::vector<Interval> intervals, size_t* steps = nullptr);
// A superset of `set` of at most `max_intervals` (>= 1) intervals: runs of
// neighbouring intervals merged into their hull.
IntervalSet CoarsenSet(IntervalSet set, size_t max_intervals);
// The exact set { s : s op value } in ordinal order.
IntervalSet StringsWhere(CmpOp op, std::string_view value);
// Appends the set { s : s op value }, or its complement, to *out.
void StringsWhereInto(CmpOp op, std::string_view value, bool complement, IntervalSet* out);
// True iff `s` lies in `set`.
bool Contains(Intervals set, std::string_view s);
// True iff every string of `a` lies in `b`.
bool IsSubset(Intervals a, Intervals b, size_t* steps = nullptr);

// Pieces that partition the PartitionKey line from NegInf to PosInf, each
// with the RowKeys it admits; neighbours differ in rows. Stored flat: each
// piece names its run of `rows`, so that building a map allocates per map,
// not per piece.
struct KeyMap {
  struct Piece {
    Cut lo, hi;           // PartitionKeys in [lo, hi)
    uint32_t begin, end;  // its RowKey intervals: rows[begin, end)
    friend bool operator==(const Piece&, const Piece&) = default;
  };
  std::vector<Piece> pieces;
  std::vector<Interval> rows;

  std::span<const Interval> RowsOf(const Piece& p) const {
    return {rows.data() + p.begin, rows.data() + p.end};
  }
  friend bool operator==(const KeyMap&, const KeyMap&) = default;
};

// Every partition admits `rows`.
KeyMap UniformMap(Intervals rows);
// Partitions in `partitions` admit every row, others none.
KeyMap PartitionMap(const IntervalSet& partitions);
// The map of `partitions` and `rows` (both in them if `conjunction`, else
// either), coarsened to at most max_entries (>= 4) entries: then *widened
// is set. Costs O(result), not O(|partitions| * |rows|).
KeyMap PairMap(Intervals partitions, Intervals rows, bool conjunction, size_t max_entries,
               bool* widened);
// RowKeys admitted in one partition: `partition` holds one string.
struct PartitionRows {
  Interval partition;
  IntervalSet rows;
};
// True iff `iv` holds exactly one string.
bool IsSingleString(const Interval& iv);
// The map where the partition of each of `points` admits its rows (their
// union, for a partition named twice) and every other partition nothing,
// coarsened to at most max_entries (>= 4) entries: then *widened is set.
// Costs O(n log n) in the points and rows, charged to *steps.
KeyMap PointsMap(std::vector<PartitionRows> points, size_t max_entries, bool* widened,
                 size_t* steps);
// Pieces plus row intervals: the size of a map.
size_t MapSize(const KeyMap& m);
bool MapContains(const KeyMap& m, std::string_view pk, std::string_view rk);

// The bounds of the map operations of one plan: no map holds more than
// `max_entries` (MapSize), and all operations together take at most
// `max_steps` steps (an interval or piece visited or written).
class MapBudget {
 public:
  MapBudget(size_t max_entries, size_t max_steps)
      : max_entries_(max_entries), steps_left_(max_steps) {}
  size_t max_entries() const { return max_entries_; }
  // Takes `steps` from the budget; false (and the budget empty) if they were
  // not left.
  bool Charge(size_t steps);
  bool exhausted() const { return exhausted_; }

 private:
  size_t max_entries_;
  size_t steps_left_;
  bool exhausted_ = false;
};

// A superset of `m` of at most `max_entries` entries (REQUIRES: >= 4):
// `m` itself if it fits; else each piece's rows widened to their hull (one
// interval); if that is still too large, runs of neighbouring non-empty
// pieces merged into one piece each, with the hull of their rows.
KeyMap Coarsen(KeyMap m, size_t max_entries);

// The pointwise and / or / not of maps, within `budget`. A result larger than
// budget->max_entries() is coarsened to fit (Coarsen) and *widened is set:
// it is then a superset of the exact result. nullopt once the budget's steps
// are exhausted.
std::optional<KeyMap> MapAnd(const KeyMap& a, const KeyMap& b, MapBudget* budget, bool* widened);
std::optional<KeyMap> MapOr(const KeyMap& a, const KeyMap& b, MapBudget* budget, bool* widened);
std::optional<KeyMap> MapNot(const KeyMap& a, MapBudget* budget, bool* widened);
// True iff every key of `a` is a key of `b`. False also when the budget is
// exhausted before the answer is known.
bool MapWithin(const KeyMap& a, const KeyMap& b, MapBudget* budget);

// The least superset of `m` that key ranges express exactly: a piece that
// spans several partitions and restricts the RowKey cannot be written as key
// ranges, so it is widened to those partitions, keeping the RowKey bound of
// a first and a last partition known exactly. Sets *widened iff the result
// differs from `m`.
KeyMap RangeHull(const KeyMap& m, bool* widened);

// Sorted, non-overlapping key ranges covering every key of `m`, one per
// row interval of a single-partition piece and one per other piece at most,
// merged where they touch. Sets *exact to whether they cover nothing else
// (they are the ranges of RangeHull(m)).
std::vector<storage::KeyRange> MapToRanges(const KeyMap& m, bool* exact);

}  // namespace cerulean::odata
