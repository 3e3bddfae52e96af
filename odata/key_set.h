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
//   RowKey comparisons exactly, and its size grows only linearly under
//   and/or/not (no DNF blow-up).
// Thread-safety: value types and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "odata/ast.h"
#include "storage/key_range.h"

namespace cerulean::odata {

struct Cut {
  enum class Kind : uint8_t { kNegInf, kBefore, kAfter, kPosInf };
  Kind kind = Kind::kNegInf;
  std::string s;  // kBefore / kAfter only

  static Cut NegInf() { return {}; }
  static Cut PosInf() { return {Kind::kPosInf, {}}; }
  // Before("") is normalised to NegInf ("" is the least string), so equal
  // positions compare equal as values in the common cases.
  static Cut Before(std::string s);
  static Cut After(std::string s) { return {Kind::kAfter, std::move(s)}; }
  friend bool operator==(const Cut&, const Cut&) = default;
};

// <0, 0, >0 in key order.
int CompareCuts(const Cut& a, const Cut& b);

struct Interval {
  Cut lo, hi;  // [lo, hi); lo < hi
  friend bool operator==(const Interval&, const Interval&) = default;
};
using IntervalSet = std::vector<Interval>;

IntervalSet AllStrings();
IntervalSet Union(const IntervalSet& a, const IntervalSet& b);
IntervalSet Intersect(const IntervalSet& a, const IntervalSet& b);
IntervalSet Complement(const IntervalSet& a);
// The exact set { s : s op value } in ordinal order.
IntervalSet StringsWhere(CmpOp op, const std::string& value);
// True iff `s` lies in `set`.
bool Contains(const IntervalSet& set, const std::string& s);

struct Piece {
  Cut lo, hi;        // PartitionKeys in [lo, hi)
  IntervalSet rows;  // RowKeys admitted for those PartitionKeys
  friend bool operator==(const Piece&, const Piece&) = default;
};
// Pieces are contiguous from NegInf to PosInf; neighbours differ in rows.
using KeyMap = std::vector<Piece>;

// Every partition admits `rows`.
KeyMap UniformMap(IntervalSet rows);
// Partitions in `partitions` admit every row, others none.
KeyMap PartitionMap(const IntervalSet& partitions);
// The pointwise and / or / not of maps. Each charges the size of its result
// to *budget (when not null) and returns nullopt, leaving *budget at 0, if
// the result would not fit: this bounds the planner's work for any filter.
std::optional<KeyMap> MapAnd(const KeyMap& a, const KeyMap& b, size_t* budget);
std::optional<KeyMap> MapOr(const KeyMap& a, const KeyMap& b, size_t* budget);
std::optional<KeyMap> MapNot(const KeyMap& a, size_t* budget);
// Pieces plus row intervals: the cost measure of a map.
size_t MapSize(const KeyMap& m);
bool MapContains(const KeyMap& m, const std::string& pk, const std::string& rk);

// Sorted, non-overlapping key ranges covering every key of `m`. Sets
// *exact to whether they cover nothing else: a piece spanning several
// partitions with a restricted RowKey set cannot be expressed and is
// widened to whole partitions.
std::vector<storage::KeyRange> MapToRanges(const KeyMap& m, bool* exact);

}  // namespace cerulean::odata
