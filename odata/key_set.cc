// KeyMaps (key_set.h): RowKey sets over the PartitionKey line, their
// combinations within a MapBudget, coarsening, and the key ranges a map
// reads (RangeHull, MapToRanges).
#include "odata/key_set.h"

#include <algorithm>
#include <cassert>
#include <string>
#include <utility>

#include "odata/key_set_internal.h"

namespace cerulean::odata {

namespace {

using Piece = KeyMap::Piece;

bool SameRows(const KeyMap& m, const Piece& p, const Piece& q) {
  return std::equal(m.rows.begin() + p.begin, m.rows.begin() + p.end, m.rows.begin() + q.begin,
                    m.rows.begin() + q.end);
}

// Ends the piece [lo, hi) whose rows were appended to out->rows from
// `begin` on, merging it into the previous piece when the rows agree.
void EndPiece(KeyMap* out, const Cut& lo, const Cut& hi, size_t begin) {
  Piece p{lo, hi, static_cast<uint32_t>(begin), static_cast<uint32_t>(out->rows.size())};
  if (!out->pieces.empty() && SameRows(*out, out->pieces.back(), p)) {
    out->pieces.back().hi = hi;
    out->rows.resize(begin);
    return;
  }
  out->pieces.push_back(p);
}

// Appends the piece [lo, hi) with `rows`.
void AppendPiece(KeyMap* out, const Cut& lo, const Cut& hi, Intervals rows) {
  size_t begin = out->rows.size();
  out->rows.insert(out->rows.end(), rows.begin(), rows.end());
  EndPiece(out, lo, hi, begin);
}

void AppendHull(KeyMap* out, const Cut& lo, const Cut& hi, Intervals rows) {
  if (rows.empty()) return AppendPiece(out, lo, hi, {});
  Interval hull{rows.front().lo, rows.back().hi};
  AppendPiece(out, lo, hi, {&hull, 1});
}

}  // namespace

KeyMap UniformMap(Intervals rows) {
  KeyMap m;
  AppendPiece(&m, Cut::NegInf(), Cut::PosInf(), rows);
  return m;
}

KeyMap PartitionMap(const IntervalSet& partitions) {
  KeyMap m;
  m.pieces.reserve(2 * partitions.size() + 1);
  m.rows.reserve(partitions.size());
  const Interval all{Cut::NegInf(), Cut::PosInf()};
  Cut cur = Cut::NegInf();
  for (const Interval& iv : partitions) {
    if (Less(cur, iv.lo)) AppendPiece(&m, cur, iv.lo, {});
    AppendPiece(&m, iv.lo, iv.hi, {&all, 1});
    cur = iv.hi;
  }
  if (cur.kind != Cut::Kind::kPosInf) AppendPiece(&m, cur, Cut::PosInf(), {});
  return m;
}

KeyMap PairMap(Intervals partitions, Intervals rows, bool conjunction, size_t max_entries,
               bool* widened) {
  const Interval all{Cut::NegInf(), Cut::PosInf()};
  Intervals inside = conjunction ? rows : Intervals{&all, 1};
  Intervals outside = conjunction ? Intervals{} : rows;
  // Each partition interval and each gap is a piece.
  size_t gaps = 0;
  Cut cur = Cut::NegInf();
  for (const Interval& iv : partitions) {
    gaps += Less(cur, iv.lo) ? 1 : 0;
    cur = iv.hi;
  }
  gaps += cur.kind != Cut::Kind::kPosInf ? 1 : 0;
  const size_t pieces = partitions.size() + gaps;
  Interval hull;
  if (pieces + partitions.size() * inside.size() + gaps * outside.size() > max_entries) {
    *widened = true;
    if (rows.size() > 1) {
      hull = Interval{rows.front().lo, rows.back().hi};
      (conjunction ? inside : outside) = Intervals{&hull, 1};
    }
  }
  KeyMap m;
  m.pieces.reserve(pieces);
  cur = Cut::NegInf();
  for (const Interval& iv : partitions) {
    if (Less(cur, iv.lo)) AppendPiece(&m, cur, iv.lo, outside);
    AppendPiece(&m, iv.lo, iv.hi, inside);
    cur = iv.hi;
  }
  if (cur.kind != Cut::Kind::kPosInf) AppendPiece(&m, cur, Cut::PosInf(), outside);
  if (MapSize(m) <= max_entries) return m;
  *widened = true;
  return Coarsen(std::move(m), max_entries);
}

bool IsSingleString(const Interval& iv) {
  if (iv.hi.kind != Cut::Kind::kAfter) return false;
  if (iv.lo.kind == Cut::Kind::kBefore) return iv.lo.s == iv.hi.s;
  return iv.lo.kind == Cut::Kind::kNegInf && iv.hi.s.empty();  // ""
}

KeyMap PointsMap(std::vector<PartitionRows> points, size_t max_entries, bool* widened,
                 size_t* steps) {
  std::sort(points.begin(), points.end(), [](const PartitionRows& a, const PartitionRows& b) {
    return Less(a.partition.lo, b.partition.lo);
  });
  // One entry per partition, its rows the union of theirs.
  std::vector<PartitionRows> merged;
  merged.reserve(points.size());
  size_t size = 1;  // the last gap
  for (PartitionRows& p : points) {
    if (!merged.empty() && merged.back().partition == p.partition) {
      IntervalSet rows;
      UnionInto(merged.back().rows, p.rows, &rows, steps);
      size = size - merged.back().rows.size() + rows.size();
      merged.back().rows = std::move(rows);
      continue;
    }
    size += 2 + p.rows.size();  // a gap, the partition, its rows
    merged.push_back(std::move(p));
  }
  Count(steps, points.size() + size);
  const bool hull = size > max_entries;
  KeyMap m;
  m.pieces.reserve(2 * merged.size() + 1);
  Cut cur = Cut::NegInf();
  for (const PartitionRows& p : merged) {
    if (Less(cur, p.partition.lo)) AppendPiece(&m, cur, p.partition.lo, {});
    if (hull) {
      AppendHull(&m, p.partition.lo, p.partition.hi, p.rows);
    } else {
      AppendPiece(&m, p.partition.lo, p.partition.hi, p.rows);
    }
    cur = p.partition.hi;
  }
  if (cur.kind != Cut::Kind::kPosInf) AppendPiece(&m, cur, Cut::PosInf(), {});
  if (hull) *widened = true;
  if (MapSize(m) <= max_entries) return m;
  *widened = true;
  return Coarsen(std::move(m), max_entries);
}

size_t MapSize(const KeyMap& m) { return m.pieces.size() + m.rows.size(); }

bool MapContains(const KeyMap& m, std::string_view pk, std::string_view rk) {
  auto it = std::partition_point(m.pieces.begin(), m.pieces.end(),
                                 [pk](const Piece& p) { return CutAtOrBelow(p.hi, pk); });
  return it != m.pieces.end() && CutAtOrBelow(it->lo, pk) && Contains(m.RowsOf(*it), rk);
}

bool MapBudget::Charge(size_t steps) {
  if (exhausted_ || steps > steps_left_) {
    steps_left_ = 0;
    exhausted_ = true;
    return false;
  }
  steps_left_ -= steps;
  return true;
}

namespace {

// `m` with each piece's rows widened to their hull.
KeyMap HullRows(const KeyMap& m) {
  KeyMap out;
  out.pieces.reserve(m.pieces.size());
  for (const Piece& p : m.pieces) AppendHull(&out, p.lo, p.hi, m.RowsOf(p));
  return out;
}

// The pointwise `op` of two maps, or nullopt if its size would pass
// `max_entries` or the budget runs out.
template <typename Op>
std::optional<KeyMap> CombineWithin(const KeyMap& a, const KeyMap& b, size_t max_entries,
                                    MapBudget* budget, const Op& op) {
  KeyMap out;
  out.pieces.reserve(std::min(a.pieces.size() + b.pieces.size(), max_entries));
  size_t i = 0, j = 0;
  Cut lo = Cut::NegInf();
  while (i < a.pieces.size() && j < b.pieces.size()) {
    const Piece& pa = a.pieces[i];
    const Piece& pb = b.pieces[j];
    int c = CompareCuts(pa.hi, pb.hi);
    const Cut& hi = c <= 0 ? pa.hi : pb.hi;
    size_t steps = 1;
    size_t begin = out.rows.size();
    op(a.RowsOf(pa), b.RowsOf(pb), &out.rows, &steps);
    steps += out.rows.size() - begin;  // compared with the previous piece's rows
    EndPiece(&out, lo, hi, begin);
    if (!budget->Charge(steps) || MapSize(out) > max_entries) return std::nullopt;
    lo = hi;
    if (c <= 0) ++i;
    if (c >= 0) ++j;
  }
  assert(i == a.pieces.size() && j == b.pieces.size());
  return out;
}

template <typename Op>
std::optional<KeyMap> Combine(const KeyMap& a, const KeyMap& b, MapBudget* budget, bool* widened,
                              const Op& op) {
  auto out = CombineWithin(a, b, budget->max_entries(), budget, op);
  if (out || budget->exhausted()) return out;
  // Too large: combine the row hulls instead (at most two intervals per
  // piece), then coarsen that to fit.
  *widened = true;
  if (!budget->Charge(a.pieces.size() + b.pieces.size())) return std::nullopt;
  out = CombineWithin(HullRows(a), HullRows(b), SIZE_MAX, budget, op);
  if (!out || !budget->Charge(MapSize(*out))) return std::nullopt;
  return Coarsen(std::move(*out), budget->max_entries());
}

}  // namespace

KeyMap Coarsen(KeyMap m, size_t max_entries) {
  assert(max_entries >= 4);
  if (MapSize(m) <= max_entries) return m;
  KeyMap hulled = HullRows(m);
  if (MapSize(hulled) <= max_entries) return hulled;
  // Merge runs of `per_group` neighbouring non-empty pieces (and the empty
  // pieces between them): at most `groups` pieces with one interval each,
  // and the empty pieces between them, 3 * groups + 1 entries.
  const size_t non_empty = hulled.rows.size();  // one interval each
  const size_t groups = (max_entries - 1) / 3;
  const size_t per_group = (non_empty + groups - 1) / groups;
  KeyMap out;
  Cut cursor = Cut::NegInf();
  size_t in_group = 0;
  Cut group_lo, group_hi;
  Interval rows;
  auto close_group = [&] {
    if (Less(cursor, group_lo)) AppendPiece(&out, cursor, group_lo, {});
    AppendPiece(&out, group_lo, group_hi, {&rows, 1});
    cursor = group_hi;
    in_group = 0;
  };
  for (const Piece& p : hulled.pieces) {
    if (p.begin == p.end) continue;
    const Interval& r = hulled.rows[p.begin];
    if (in_group == 0) {
      group_lo = p.lo;
      rows = r;
    } else {
      if (Less(r.lo, rows.lo)) rows.lo = r.lo;
      if (Less(rows.hi, r.hi)) rows.hi = r.hi;
    }
    group_hi = p.hi;
    if (++in_group == per_group) close_group();
  }
  if (in_group > 0) close_group();
  if (cursor.kind != Cut::Kind::kPosInf) AppendPiece(&out, cursor, Cut::PosInf(), {});
  return out;
}

std::optional<KeyMap> MapAnd(const KeyMap& a, const KeyMap& b, MapBudget* budget, bool* widened) {
  return Combine(a, b, budget, widened,
                 [](Intervals x, Intervals y, IntervalSet* out, size_t* steps) {
                   IntersectInto(x, y, out, steps);
                 });
}

std::optional<KeyMap> MapOr(const KeyMap& a, const KeyMap& b, MapBudget* budget, bool* widened) {
  return Combine(a, b, budget, widened,
                 [](Intervals x, Intervals y, IntervalSet* out, size_t* steps) {
                   UnionInto(x, y, out, steps);
                 });
}

std::optional<KeyMap> MapNot(const KeyMap& a, MapBudget* budget, bool* widened) {
  KeyMap out;
  for (const Piece& p : a.pieces) {
    size_t steps = 1;
    size_t begin = out.rows.size();
    ComplementInto(a.RowsOf(p), &out.rows, &steps);
    steps += out.rows.size() - begin;
    EndPiece(&out, p.lo, p.hi, begin);
    if (!budget->Charge(steps)) return std::nullopt;
  }
  if (MapSize(out) <= budget->max_entries()) return out;
  *widened = true;
  return Coarsen(std::move(out), budget->max_entries());
}

bool MapWithin(const KeyMap& a, const KeyMap& b, MapBudget* budget) {
  size_t i = 0, j = 0;
  while (i < a.pieces.size() && j < b.pieces.size()) {
    const Piece& pa = a.pieces[i];
    const Piece& pb = b.pieces[j];
    size_t steps = 1;
    if (pa.begin != pa.end && !IsSubset(a.RowsOf(pa), b.RowsOf(pb), &steps)) return false;
    if (!budget->Charge(steps)) return false;
    int c = CompareCuts(pa.hi, pb.hi);
    if (c <= 0) ++i;
    if (c >= 0) ++j;
  }
  return true;
}

namespace {

// The PartitionKey of a piece that holds exactly one partition, if so.
const std::string_view* SinglePartition(const Piece& p) {
  if (p.hi.kind != Cut::Kind::kAfter) return nullptr;
  if (p.lo.kind == Cut::Kind::kBefore && p.lo.s == p.hi.s) return &p.hi.s;
  if (p.lo.kind == Cut::Kind::kNegInf && p.hi.s.empty()) return &p.hi.s;  // partition ""
  return nullptr;
}

}  // namespace

KeyMap RangeHull(const KeyMap& m, bool* widened) {
  *widened = false;
  const Interval all{Cut::NegInf(), Cut::PosInf()};
  KeyMap out;
  out.pieces.reserve(m.pieces.size());
  out.rows.reserve(m.rows.size());
  for (const Piece& p : m.pieces) {
    Intervals rows = m.RowsOf(p);
    if (rows.empty() || AllRows(rows) || SinglePartition(p) != nullptr) {
      AppendPiece(&out, p.lo, p.hi, rows);
      continue;
    }
    // Several partitions, each restricted to `rows`: all of them, but the
    // rows from the first interval on in a first partition known exactly,
    // and up to the end of the last one in a last partition.
    *widened = true;
    Cut lo = p.lo;
    if (lo.kind == Cut::Kind::kBefore) {
      Interval first{rows.front().lo, Cut::PosInf()};
      AppendPiece(&out, lo, Cut::After(lo.s), {&first, 1});
      lo = Cut::After(lo.s);
    }
    if (p.hi.kind == Cut::Kind::kAfter) {
      Cut last = Cut::Before(p.hi.s);
      Interval final_rows{Cut::NegInf(), rows.back().hi};
      AppendPiece(&out, lo, last, {&all, 1});
      AppendPiece(&out, last, p.hi, {&final_rows, 1});
    } else {
      AppendPiece(&out, lo, p.hi, {&all, 1});
    }
  }
  return out;
}

namespace {

// A position in the composite key order.
struct KeyCut {
  enum class Kind : uint8_t {
    kNegInf,
    kPartitionStart,
    kRowBefore,
    kRowAfter,
    kPartitionEnd,
    kPosInf
  };
  Kind kind = Kind::kNegInf;
  std::string_view pk, rk;
  friend bool operator==(const KeyCut&, const KeyCut&) = default;
};

// A PartitionKey cut as a composite cut: before / after a whole partition.
KeyCut FromPartitionCut(const Cut& c) {
  switch (c.kind) {
    case Cut::Kind::kNegInf:
      return {};
    case Cut::Kind::kPosInf:
      return {KeyCut::Kind::kPosInf, {}, {}};
    case Cut::Kind::kBefore:
      return {KeyCut::Kind::kPartitionStart, c.s, {}};
    case Cut::Kind::kAfter:
      return {KeyCut::Kind::kPartitionEnd, c.s, {}};
  }
  return {};
}

// A RowKey cut inside partition `pk`.
KeyCut FromRowCut(std::string_view pk, const Cut& c) {
  switch (c.kind) {
    case Cut::Kind::kNegInf:
      return {KeyCut::Kind::kPartitionStart, pk, {}};
    case Cut::Kind::kPosInf:
      return {KeyCut::Kind::kPartitionEnd, pk, {}};
    case Cut::Kind::kBefore:
      return {KeyCut::Kind::kRowBefore, pk, c.s};
    case Cut::Kind::kAfter:
      return {KeyCut::Kind::kRowAfter, pk, c.s};
  }
  return {};
}

std::optional<storage::KeyBound> LowerBound(const KeyCut& c) {
  using K = KeyCut::Kind;
  switch (c.kind) {
    case K::kNegInf:
    case K::kPosInf:
      return std::nullopt;  // kPosInf cannot start a non-empty range
    case K::kPartitionStart:
      return storage::KeyBound{std::string(c.pk), std::nullopt, true};
    case K::kRowBefore:
      return storage::KeyBound{std::string(c.pk), std::string(c.rk), true};
    case K::kRowAfter:
      return storage::KeyBound{std::string(c.pk), std::string(c.rk), false};
    case K::kPartitionEnd:
      return storage::KeyBound{std::string(c.pk), std::nullopt, false};
  }
  return std::nullopt;
}

std::optional<storage::KeyBound> UpperBound(const KeyCut& c) {
  using K = KeyCut::Kind;
  switch (c.kind) {
    case K::kNegInf:
    case K::kPosInf:
      return std::nullopt;  // kNegInf cannot end a non-empty range
    case K::kPartitionStart:
      return storage::KeyBound{std::string(c.pk), std::nullopt, false};
    case K::kRowBefore:
      return storage::KeyBound{std::string(c.pk), std::string(c.rk), false};
    case K::kRowAfter:
      return storage::KeyBound{std::string(c.pk), std::string(c.rk), true};
    case K::kPartitionEnd:
      return storage::KeyBound{std::string(c.pk), std::nullopt, true};
  }
  return std::nullopt;
}

}  // namespace

std::vector<storage::KeyRange> MapToRanges(const KeyMap& m, bool* exact) {
  bool widened;
  const KeyMap hull = RangeHull(m, &widened);
  *exact = !widened;
  std::vector<std::pair<KeyCut, KeyCut>> spans;
  auto add = [&spans](KeyCut lo, KeyCut hi) {
    if (!spans.empty() && spans.back().second == lo) {
      spans.back().second = hi;
    } else {
      spans.emplace_back(lo, hi);
    }
  };
  for (const Piece& p : hull.pieces) {
    Intervals rows = hull.RowsOf(p);
    if (rows.empty()) continue;
    if (AllRows(rows)) {
      add(FromPartitionCut(p.lo), FromPartitionCut(p.hi));
    } else {
      const std::string_view* pk = SinglePartition(p);
      assert(pk != nullptr);  // RangeHull leaves no other restricted piece
      for (const Interval& iv : rows) add(FromRowCut(*pk, iv.lo), FromRowCut(*pk, iv.hi));
    }
  }
  std::vector<storage::KeyRange> ranges;
  ranges.reserve(spans.size());
  for (const auto& [lo, hi] : spans)
    ranges.push_back(storage::KeyRange{LowerBound(lo), UpperBound(hi)});
  return ranges;
}

}  // namespace cerulean::odata
