#include "odata/key_set.h"

#include <cassert>
#include <utility>

#include "storage/value.h"

namespace cerulean::odata {

Cut Cut::Before(std::string s) {
  if (s.empty()) return NegInf();
  return {Kind::kBefore, std::move(s)};
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
bool Less(const Cut& a, const Cut& b) { return CompareCuts(a, b) < 0; }
}  // namespace

IntervalSet AllStrings() { return {Interval{Cut::NegInf(), Cut::PosInf()}}; }

IntervalSet Union(const IntervalSet& a, const IntervalSet& b) {
  IntervalSet out;
  out.reserve(a.size() + b.size());
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    const Interval& next =
        (j == b.size() || (i < a.size() && Less(a[i].lo, b[j].lo))) ? a[i++] : b[j++];
    if (!out.empty() && !Less(out.back().hi, next.lo)) {
      if (Less(out.back().hi, next.hi)) out.back().hi = next.hi;
    } else {
      out.push_back(next);
    }
  }
  return out;
}

IntervalSet Intersect(const IntervalSet& a, const IntervalSet& b) {
  IntervalSet out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const Cut& lo = Less(a[i].lo, b[j].lo) ? b[j].lo : a[i].lo;
    bool a_ends_first = Less(a[i].hi, b[j].hi);
    const Cut& hi = a_ends_first ? a[i].hi : b[j].hi;
    if (Less(lo, hi)) out.push_back(Interval{lo, hi});
    if (a_ends_first) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

IntervalSet Complement(const IntervalSet& a) {
  IntervalSet out;
  Cut cur = Cut::NegInf();
  for (const Interval& iv : a) {
    if (Less(cur, iv.lo)) out.push_back(Interval{cur, iv.lo});
    cur = iv.hi;
  }
  if (cur.kind != Cut::Kind::kPosInf) out.push_back(Interval{std::move(cur), Cut::PosInf()});
  return out;
}

IntervalSet StringsWhere(CmpOp op, const std::string& value) {
  auto make = [](Cut lo, Cut hi) {
    IntervalSet s;
    if (Less(lo, hi)) s.push_back(Interval{std::move(lo), std::move(hi)});
    return s;
  };
  switch (op) {
    case CmpOp::kEq:
      return make(Cut::Before(value), Cut::After(value));
    case CmpOp::kNe:
      return Complement(make(Cut::Before(value), Cut::After(value)));
    case CmpOp::kGt:
      return make(Cut::After(value), Cut::PosInf());
    case CmpOp::kGe:
      return make(Cut::Before(value), Cut::PosInf());
    case CmpOp::kLt:
      return make(Cut::NegInf(), Cut::Before(value));
    case CmpOp::kLe:
      return make(Cut::NegInf(), Cut::After(value));
  }
  return {};
}

namespace {
// lo <= s, for s seen as the point between Before(s) and After(s).
bool CutAtOrBelow(const Cut& c, const std::string& s) {
  switch (c.kind) {
    case Cut::Kind::kNegInf:
      return true;
    case Cut::Kind::kPosInf:
      return false;
    case Cut::Kind::kBefore:
      return storage::CompareOrdinal(c.s, s) <= 0;
    case Cut::Kind::kAfter:
      return storage::CompareOrdinal(c.s, s) < 0;
  }
  return false;
}
}  // namespace

bool Contains(const IntervalSet& set, const std::string& s) {
  for (const Interval& iv : set) {
    if (CutAtOrBelow(iv.lo, s) && !CutAtOrBelow(iv.hi, s)) return true;
  }
  return false;
}

KeyMap UniformMap(IntervalSet rows) {
  return {Piece{Cut::NegInf(), Cut::PosInf(), std::move(rows)}};
}

KeyMap PartitionMap(const IntervalSet& partitions) {
  KeyMap m;
  Cut cur = Cut::NegInf();
  for (const Interval& iv : partitions) {
    if (Less(cur, iv.lo)) m.push_back(Piece{cur, iv.lo, {}});
    m.push_back(Piece{iv.lo, iv.hi, AllStrings()});
    cur = iv.hi;
  }
  if (cur.kind != Cut::Kind::kPosInf) m.push_back(Piece{std::move(cur), Cut::PosInf(), {}});
  return m;
}

size_t MapSize(const KeyMap& m) {
  size_t n = 0;
  for (const Piece& p : m) n += 1 + p.rows.size();
  return n;
}

namespace {

// Appends a piece, merging it into the previous one when the rows agree.
// Returns false when the budget is exhausted.
bool AppendPiece(KeyMap* out, Cut lo, Cut hi, IntervalSet rows, size_t* budget) {
  if (!out->empty() && out->back().rows == rows) {
    out->back().hi = std::move(hi);
    return true;
  }
  size_t cost = 1 + rows.size();
  if (budget) {
    if (*budget < cost) {
      *budget = 0;
      return false;
    }
    *budget -= cost;
  }
  out->push_back(Piece{std::move(lo), std::move(hi), std::move(rows)});
  return true;
}

template <typename Op>
std::optional<KeyMap> Combine(const KeyMap& a, const KeyMap& b, size_t* budget, const Op& op) {
  KeyMap out;
  size_t i = 0, j = 0;
  Cut lo = Cut::NegInf();
  while (i < a.size() && j < b.size()) {
    int c = CompareCuts(a[i].hi, b[j].hi);
    const Cut& hi = c <= 0 ? a[i].hi : b[j].hi;
    if (!AppendPiece(&out, lo, hi, op(a[i].rows, b[j].rows), budget)) return std::nullopt;
    lo = hi;
    if (c <= 0) ++i;
    if (c >= 0) ++j;
  }
  assert(i == a.size() && j == b.size());
  return out;
}

}  // namespace

std::optional<KeyMap> MapAnd(const KeyMap& a, const KeyMap& b, size_t* budget) {
  return Combine(a, b, budget,
                 [](const IntervalSet& x, const IntervalSet& y) { return Intersect(x, y); });
}

std::optional<KeyMap> MapOr(const KeyMap& a, const KeyMap& b, size_t* budget) {
  return Combine(a, b, budget,
                 [](const IntervalSet& x, const IntervalSet& y) { return Union(x, y); });
}

std::optional<KeyMap> MapNot(const KeyMap& a, size_t* budget) {
  KeyMap out;
  for (const Piece& p : a) {
    if (!AppendPiece(&out, p.lo, p.hi, Complement(p.rows), budget)) return std::nullopt;
  }
  return out;
}

bool MapContains(const KeyMap& m, const std::string& pk, const std::string& rk) {
  for (const Piece& p : m) {
    if (CutAtOrBelow(p.lo, pk) && !CutAtOrBelow(p.hi, pk)) return Contains(p.rows, rk);
  }
  return false;
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
  std::string pk, rk;
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
KeyCut FromRowCut(const std::string& pk, const Cut& c) {
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
      return storage::KeyBound{c.pk, std::nullopt, true};
    case K::kRowBefore:
      return storage::KeyBound{c.pk, c.rk, true};
    case K::kRowAfter:
      return storage::KeyBound{c.pk, c.rk, false};
    case K::kPartitionEnd:
      return storage::KeyBound{c.pk, std::nullopt, false};
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
      return storage::KeyBound{c.pk, std::nullopt, false};
    case K::kRowBefore:
      return storage::KeyBound{c.pk, c.rk, false};
    case K::kRowAfter:
      return storage::KeyBound{c.pk, c.rk, true};
    case K::kPartitionEnd:
      return storage::KeyBound{c.pk, std::nullopt, true};
  }
  return std::nullopt;
}

// The PartitionKey of a piece that holds exactly one partition, if so.
const std::string* SinglePartition(const Piece& p) {
  if (p.hi.kind != Cut::Kind::kAfter) return nullptr;
  if (p.lo.kind == Cut::Kind::kBefore && p.lo.s == p.hi.s) return &p.hi.s;
  if (p.lo.kind == Cut::Kind::kNegInf && p.hi.s.empty()) return &p.hi.s;  // partition ""
  return nullptr;
}

}  // namespace

std::vector<storage::KeyRange> MapToRanges(const KeyMap& m, bool* exact) {
  *exact = true;
  std::vector<std::pair<KeyCut, KeyCut>> spans;
  auto add = [&spans](KeyCut lo, KeyCut hi) {
    if (!spans.empty() && spans.back().second == lo) {
      spans.back().second = std::move(hi);
    } else {
      spans.emplace_back(std::move(lo), std::move(hi));
    }
  };
  const IntervalSet all = AllStrings();
  for (const Piece& p : m) {
    if (p.rows.empty()) continue;
    if (p.rows == all) {
      add(FromPartitionCut(p.lo), FromPartitionCut(p.hi));
    } else if (const std::string* pk = SinglePartition(p)) {
      for (const Interval& iv : p.rows) add(FromRowCut(*pk, iv.lo), FromRowCut(*pk, iv.hi));
    } else {
      // Several partitions, each restricted to `rows`: not a key range.
      // Widen to the partitions, keeping the row bound in a first / last
      // partition that is known exactly.
      *exact = false;
      KeyCut lo = p.lo.kind == Cut::Kind::kBefore ? FromRowCut(p.lo.s, p.rows.front().lo)
                                                  : FromPartitionCut(p.lo);
      KeyCut hi = p.hi.kind == Cut::Kind::kAfter ? FromRowCut(p.hi.s, p.rows.back().hi)
                                                 : FromPartitionCut(p.hi);
      add(std::move(lo), std::move(hi));
    }
  }
  std::vector<storage::KeyRange> ranges;
  ranges.reserve(spans.size());
  for (const auto& [lo, hi] : spans)
    ranges.push_back(storage::KeyRange{LowerBound(lo), UpperBound(hi)});
  return ranges;
}

}  // namespace cerulean::odata
