// Cuts and IntervalSets (key_set.h): the sets of one key's strings, and
// their and / or / not.
#include <algorithm>
#include <cassert>
#include <string_view>
#include <utility>
#include <vector>

#include "odata/key_set.h"
#include "odata/key_set_internal.h"
#include "storage/value.h"

namespace cerulean::odata {

Cut Cut::Before(std::string_view s) {
  if (s.empty()) return NegInf();
  return {Kind::kBefore, s};
}

int CompareCuts(const Cut& a, const Cut& b) {
  auto rank = [](Cut::Kind k) {
    return k == Cut::Kind::kNegInf ? 0 : k == Cut::Kind::kPosInf ? 2 : 1;
  };
  int ra = rank(a.kind), rb = rank(b.kind);
  if (ra != rb || ra != 1) return ra - rb;
  int c = storage::CompareOrdinal(a.s, b.s);
  if (c != 0) return c;
  if (a.kind == b.kind) return 0;
  return a.kind == Cut::Kind::kBefore ? -1 : 1;
}

namespace {

// The first index k >= from of `v` whose interval starts after `c`.
size_t FirstStartingAfter(Intervals v, size_t from, const Cut& c) {
  auto it = std::partition_point(v.begin() + static_cast<ptrdiff_t>(from), v.end(),
                                 [&c](const Interval& x) { return !Less(c, x.lo); });
  return static_cast<size_t>(it - v.begin());
}

// The first index k >= from of `v` whose interval ends after `c`.
size_t FirstEndingAfter(Intervals v, size_t from, const Cut& c) {
  auto it = std::partition_point(v.begin() + static_cast<ptrdiff_t>(from), v.end(),
                                 [&c](const Interval& x) { return !Less(c, x.hi); });
  return static_cast<size_t>(it - v.begin());
}

}  // namespace

IntervalSet AllStrings() { return {Interval{Cut::NegInf(), Cut::PosInf()}}; }

void UnionInto(Intervals a, Intervals b, IntervalSet* out, size_t* steps) {
  // The common cases in maps: no rows or all rows on one side.
  if (a.empty() || AllRows(b)) {
    out->insert(out->end(), b.begin(), b.end());
    return Count(steps, 1);
  }
  if (b.empty() || AllRows(a)) {
    out->insert(out->end(), a.begin(), a.end());
    return Count(steps, 1);
  }
  if (a.size() == 1 && b.size() == 1) {
    const Interval& x = Less(a[0].lo, b[0].lo) ? a[0] : b[0];
    const Interval& y = &x == &a[0] ? b[0] : a[0];
    if (Less(x.hi, y.lo)) {
      out->push_back(x);
      out->push_back(y);
    } else {
      out->push_back(Interval{x.lo, Less(x.hi, y.hi) ? y.hi : x.hi});
    }
    return Count(steps, 1);
  }
  size_t i = 0, j = 0, n = 0;
  while (i < a.size() || j < b.size()) {
    Interval cur = (j == b.size() || (i < a.size() && Less(a[i].lo, b[j].lo))) ? a[i++] : b[j++];
    // Absorb every interval of either list that starts at or before the
    // end of `cur` (touching intervals merge), skipping runs in one jump.
    for (bool grew = true; grew;) {
      grew = false;
      ++n;
      if (size_t k = FirstStartingAfter(a, i, cur.hi); k > i) {
        if (Less(cur.hi, a[k - 1].hi)) cur.hi = a[k - 1].hi;
        i = k;
        grew = true;
      }
      if (size_t k = FirstStartingAfter(b, j, cur.hi); k > j) {
        if (Less(cur.hi, b[k - 1].hi)) cur.hi = b[k - 1].hi;
        j = k;
        grew = true;
      }
    }
    out->push_back(cur);
  }
  Count(steps, n);
}

void IntersectInto(Intervals a, Intervals b, IntervalSet* out, size_t* steps) {
  if (AllRows(a) || AllRows(b)) {
    Intervals other = AllRows(a) ? b : a;
    out->insert(out->end(), other.begin(), other.end());
    return Count(steps, 1);
  }
  size_t i = 0, j = 0, n = 0;
  while (i < a.size() && j < b.size()) {
    ++n;
    if (!Less(b[j].lo, a[i].hi)) {  // a[i] ends before b[j] starts
      i = FirstEndingAfter(a, i + 1, b[j].lo);
      continue;
    }
    if (!Less(a[i].lo, b[j].hi)) {  // b[j] ends before a[i] starts
      j = FirstEndingAfter(b, j + 1, a[i].lo);
      continue;
    }
    const Cut& lo = Less(a[i].lo, b[j].lo) ? b[j].lo : a[i].lo;
    bool a_ends_first = Less(a[i].hi, b[j].hi);
    const Cut& hi = a_ends_first ? a[i].hi : b[j].hi;
    out->push_back(Interval{lo, hi});
    if (a_ends_first) {
      ++i;
    } else {
      ++j;
    }
  }
  Count(steps, n);
}

void ComplementInto(Intervals a, IntervalSet* out, size_t* steps) {
  Cut cur = Cut::NegInf();
  for (const Interval& iv : a) {
    if (Less(cur, iv.lo)) out->push_back(Interval{cur, iv.lo});
    cur = iv.hi;
  }
  if (cur.kind != Cut::Kind::kPosInf) out->push_back(Interval{cur, Cut::PosInf()});
  Count(steps, a.size() + 1);
}

IntervalSet Union(Intervals a, Intervals b, size_t* steps) {
  IntervalSet out;
  UnionInto(a, b, &out, steps);
  return out;
}

IntervalSet Intersect(Intervals a, Intervals b, size_t* steps) {
  IntervalSet out;
  IntersectInto(a, b, &out, steps);
  return out;
}

IntervalSet Complement(Intervals a, size_t* steps) {
  IntervalSet out;
  out.reserve(a.size() + 1);
  ComplementInto(a, &out, steps);
  return out;
}

IntervalSet UnionAll(std::vector<Interval> intervals, size_t* steps) {
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& x, const Interval& y) { return Less(x.lo, y.lo); });
  IntervalSet out;
  for (const Interval& iv : intervals) {
    if (!out.empty() && !Less(out.back().hi, iv.lo)) {
      if (Less(out.back().hi, iv.hi)) out.back().hi = iv.hi;
    } else {
      out.push_back(iv);
    }
  }
  Count(steps, intervals.size() + 1);
  return out;
}

IntervalSet CoarsenSet(IntervalSet set, size_t max_intervals) {
  assert(max_intervals >= 1);
  if (set.size() <= max_intervals) return set;
  const size_t per_run = (set.size() + max_intervals - 1) / max_intervals;
  IntervalSet out;
  out.reserve(max_intervals);
  for (size_t i = 0; i < set.size(); i += per_run) {
    size_t last = std::min(i + per_run, set.size()) - 1;
    out.push_back(Interval{set[i].lo, set[last].hi});
  }
  return out;
}

void StringsWhereInto(CmpOp op, std::string_view value, bool complement, IntervalSet* out) {
  // { s : s op value } is one interval, or for `ne` the complement of one.
  Cut lo = Cut::NegInf(), hi = Cut::PosInf();
  switch (op) {
    case CmpOp::kEq:
    case CmpOp::kNe:
      lo = Cut::Before(value);
      hi = Cut::After(value);
      if (op == CmpOp::kNe) complement = !complement;
      break;
    case CmpOp::kGt:
      lo = Cut::After(value);
      break;
    case CmpOp::kGe:
      lo = Cut::Before(value);
      break;
    case CmpOp::kLt:
      hi = Cut::Before(value);
      break;
    case CmpOp::kLe:
      hi = Cut::After(value);
      break;
  }
  if (!complement) {
    if (Less(lo, hi)) out->push_back(Interval{lo, hi});
    return;
  }
  if (!Less(lo, hi)) {
    out->push_back(Interval{Cut::NegInf(), Cut::PosInf()});
    return;
  }
  if (lo.kind != Cut::Kind::kNegInf) out->push_back(Interval{Cut::NegInf(), lo});
  if (hi.kind != Cut::Kind::kPosInf) out->push_back(Interval{hi, Cut::PosInf()});
}

IntervalSet StringsWhere(CmpOp op, std::string_view value) {
  IntervalSet out;
  StringsWhereInto(op, value, false, &out);
  return out;
}

bool Contains(Intervals set, std::string_view s) {
  auto it = std::partition_point(set.begin(), set.end(),
                                 [s](const Interval& iv) { return CutAtOrBelow(iv.hi, s); });
  return it != set.end() && CutAtOrBelow(it->lo, s);
}

bool IsSubset(Intervals a, Intervals b, size_t* steps) {
  size_t k = 0;
  for (const Interval& x : a) {
    k = FirstEndingAfter(b, k, x.lo);
    if (k == b.size() || Less(x.lo, b[k].lo) || Less(b[k].hi, x.hi)) {
      Count(steps, 1);
      return false;
    }
  }
  Count(steps, a.size() + 1);
  return true;
}

}  // namespace cerulean::odata
