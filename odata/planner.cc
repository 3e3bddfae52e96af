// Compile: filter -> QueryPlan {ranges, residual}.
//
// Every node gets an upper bound of the keys where it can be true, computed
// in negation normal form so that `not` needs no lower bounds:
// Upper(not e) = Upper(e, negated). A comparison of PartitionKey or RowKey
// with a literal, and the constants, are exact (the bound is precisely where
// they hold); any other predicate is bounded by "all keys" and is inexact.
// A bound is a set of one key's values (odata/key_set.h: IntervalSet) as
// long as its subtree compares only that key; where both keys meet, it is a
// KeyMap. So a list of keys (an `or` of comparisons, as Contains(...) is
// written) is sorted into one set at once, and maps are built only where
// needed. The top-level conjuncts are intersected; when the resulting map
// converts to ranges without widening, the exact conjuncts are implied by
// the ranges and only the inexact ones form the residual.
//
// Every set and map is bounded (kPlanLimits, planner.h): one whose exact
// value would be larger gets a coarser superset instead, and its node is
// then inexact. Since every operation is monotone on upper bounds, the
// ranges still cover every match; the residual then keeps each conjunct that
// the ranges are not proven to imply, so that it decides exactly.
#include "odata/planner.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "odata/ast.h"
#include "odata/key_set.h"
#include "odata/query.h"

namespace cerulean::odata {

namespace {

// An upper bound of where a subtree holds.
struct Bound {
  enum class Kind : uint8_t { kPartitionKeys, kRowKeys, kProduct, kMap };
  Kind kind = Kind::kMap;
  // kPartitionKeys, kRowKeys: the values of that key. kProduct: the
  // PartitionKeys, each admitting `rows`.
  IntervalSet set;
  IntervalSet rows;  // kProduct
  KeyMap map;        // kMap
  bool exact = true;
};

// Members of an `and` / `or` chain planned together: the members bounded by
// sets of one key form one part, the others a part each.
struct Part {
  std::vector<size_t> members;  // indices into the chain
  Bound bound;
};

class Planner {
 public:
  explicit Planner(const PlanLimits& limits) : budget_(limits.max_map_entries, limits.max_steps) {}

  // The keys where `e` (or `not e` if `negate`) can hold.
  Bound Upper(const Expr& e, bool negate) {
    if (failed_ || !budget_.Charge(1)) {
      failed_ = true;
      return Everything();
    }
    switch (e.kind()) {
      case ExprKind::kConstant:
        // Either key's set: all values or none.
        return Keys(Bound::Kind::kPartitionKeys,
                    e.constant() != negate ? AllStrings() : IntervalSet{});
      case ExprKind::kBoolProperty:
        // A key or Timestamp is never a Boolean, so as a term it is false.
        if (e.system() != SystemProperty::kNone) {
          return Keys(Bound::Kind::kPartitionKeys, negate ? AllStrings() : IntervalSet{});
        }
        return Everything();
      case ExprKind::kCompare:
        if (e.system() == SystemProperty::kPartitionKey) {
          return Keys(Bound::Kind::kPartitionKeys, KeySet(e, negate));
        }
        if (e.system() == SystemProperty::kRowKey) {
          return Keys(Bound::Kind::kRowKeys, KeySet(e, negate));
        }
        return Everything();
      case ExprKind::kNot:
        return Upper(*e.children().front(), !negate);
      case ExprKind::kAnd:
      case ExprKind::kOr: {
        const bool conjunction = (e.kind() == ExprKind::kAnd) != negate;
        std::vector<Part> parts = PlanChain(e.children(), negate, conjunction);
        if (parts.size() == 1) return std::move(parts.front().bound);
        if (conjunction && parts.size() == 2 &&
            parts[0].bound.kind == Bound::Kind::kPartitionKeys &&
            parts[1].bound.kind == Bound::Kind::kRowKeys) {
          // Kept as two sets: an `or` of such products with one
          // PartitionKey each (composite keys) is then one sorted map.
          Bound b;
          b.kind = Bound::Kind::kProduct;
          b.set = std::move(parts[0].bound.set);
          b.rows = std::move(parts[1].bound.set);
          b.exact = parts[0].bound.exact && parts[1].bound.exact;
          return b;
        }
        return Reduce(parts, conjunction);
      }
    }
    return Everything();
  }

  // The parts of a chain whose members are `children` (negated if `negate`),
  // combined by `and` if `conjunction`, else by `or`. The sets of one key are
  // combined into one by sorting their intervals (an intersection as the
  // complement of the union of the complements).
  std::vector<Part> PlanChain(const std::vector<ExprPtr>& children, bool negate, bool conjunction) {
    std::vector<Part> parts;
    Part keys[2];  // kPartitionKeys, kRowKeys
    std::vector<Interval> intervals[2];
    Part points;  // in an `or`: products with one PartitionKey
    std::vector<PartitionRows> point_rows;
    for (size_t i = 0; i < children.size(); ++i) {
      // A key comparison (through `not`s, as negation normal form would)
      // adds its intervals directly.
      const Expr* leaf = children[i].get();
      bool leaf_negate = negate;
      while (leaf->kind() == ExprKind::kNot) {
        leaf = leaf->children().front().get();
        leaf_negate = !leaf_negate;
      }
      if (leaf->kind() == ExprKind::kCompare && leaf->system() != SystemProperty::kNone &&
          leaf->system() != SystemProperty::kTimestamp) {
        const int k = leaf->system() == SystemProperty::kPartitionKey ? 0 : 1;
        keys[k].members.push_back(i);
        AppendKeySet(*leaf, leaf_negate != conjunction, &intervals[k]);
        continue;
      }
      Bound b = Upper(*children[i], negate);
      if (b.kind == Bound::Kind::kProduct && !conjunction && b.set.size() == 1 &&
          IsSingleString(b.set.front())) {
        points.members.push_back(i);
        points.bound.exact = points.bound.exact && b.exact;
        point_rows.push_back(PartitionRows{b.set.front(), std::move(b.rows)});
        continue;
      }
      if (b.kind == Bound::Kind::kProduct || b.kind == Bound::Kind::kMap) {
        parts.push_back(Part{{i}, std::move(b)});
        continue;
      }
      const int k = b.kind == Bound::Kind::kPartitionKeys ? 0 : 1;
      keys[k].members.push_back(i);
      keys[k].bound.exact = keys[k].bound.exact && b.exact;
      size_t steps = 0;
      if (conjunction) b.set = Complement(b.set, &steps);
      if (!budget_.Charge(steps + b.set.size())) failed_ = true;
      intervals[k].insert(intervals[k].end(), b.set.begin(), b.set.end());
    }
    for (int k = 0; k < 2; ++k) {
      if (keys[k].members.empty()) continue;
      size_t steps = 0;
      IntervalSet set = UnionAll(std::move(intervals[k]), &steps);
      if (conjunction) set = Complement(set, &steps);
      if (!budget_.Charge(steps)) failed_ = true;
      Bound& b = keys[k].bound;
      b.kind = k == 0 ? Bound::Kind::kPartitionKeys : Bound::Kind::kRowKeys;
      b.set = std::move(set);
      Bound fitted = Keys(b.kind, std::move(b.set));
      b.set = std::move(fitted.set);
      b.exact = b.exact && fitted.exact;
      parts.push_back(std::move(keys[k]));
    }
    if (!points.members.empty()) {
      size_t steps = 0;
      bool widened = false;
      points.bound.map = PointsMap(std::move(point_rows), budget_.max_entries(), &widened, &steps);
      if (!budget_.Charge(steps)) failed_ = true;
      if (widened) {
        points.bound.exact = false;
        widened_ = true;
      }
      parts.push_back(std::move(points));
    }
    return parts;
  }

  // The and (or the or) of the bounds of `parts`, as a map. The sets of the
  // two keys (at most one part each) make one map (PairMap); the maps are
  // combined pairwise, so that long chains cost O(n log n) rather than
  // O(n^2).
  Bound Reduce(const std::vector<Part>& parts, bool conjunction) {
    Bound out;
    bool widened = false;
    const Bound* keys[2] = {nullptr, nullptr};
    std::vector<const KeyMap*> level;
    level.reserve(parts.size() + 1);
    std::vector<KeyMap> products;  // the maps of kProduct parts
    products.reserve(parts.size());
    for (const Part& part : parts) {
      out.exact = out.exact && part.bound.exact;
      switch (part.bound.kind) {
        case Bound::Kind::kPartitionKeys:
          keys[0] = &part.bound;
          break;
        case Bound::Kind::kRowKeys:
          keys[1] = &part.bound;
          break;
        case Bound::Kind::kProduct:
          products.push_back(
              PairMap(part.bound.set, part.bound.rows, true, budget_.max_entries(), &widened));
          if (!budget_.Charge(MapSize(products.back()))) failed_ = true;
          level.push_back(&products.back());
          break;
        case Bound::Kind::kMap:
          level.push_back(&part.bound.map);
          break;
      }
    }
    KeyMap from_sets;
    if (keys[0] != nullptr || keys[1] != nullptr) {
      const IntervalSet all = AllStrings();
      // A missing key's set is the neutral element: all values for `and`,
      // none for `or`.
      const IntervalSet none;
      const IntervalSet& neutral = conjunction ? all : none;
      const IntervalSet& pks = keys[0] != nullptr ? keys[0]->set : neutral;
      const IntervalSet& rks = keys[1] != nullptr ? keys[1]->set : neutral;
      from_sets = PairMap(pks, rks, conjunction, budget_.max_entries(), &widened);
      if (!budget_.Charge(MapSize(from_sets))) failed_ = true;
      level.push_back(&from_sets);
    }
    auto combine = [&](const KeyMap& a, const KeyMap& b) {
      auto m = conjunction ? MapAnd(a, b, &budget_, &widened) : MapOr(a, b, &budget_, &widened);
      if (!m) failed_ = true;
      return m ? std::move(*m) : KeyMap{};
    };
    std::vector<KeyMap> maps;
    maps.reserve(level.size() / 2 + 1);
    for (size_t i = 0; i + 1 < level.size() && !failed_; i += 2) {
      maps.push_back(combine(*level[i], *level[i + 1]));
    }
    if (level.size() % 2 == 1) {
      maps.push_back(level.back() == &from_sets ? std::move(from_sets) : *level.back());
    }
    while (maps.size() > 1 && !failed_) {
      std::vector<KeyMap> next;
      next.reserve(maps.size() / 2 + 1);
      for (size_t i = 0; i + 1 < maps.size() && !failed_; i += 2) {
        next.push_back(combine(maps[i], maps[i + 1]));
      }
      if (maps.size() % 2 == 1) next.push_back(std::move(maps.back()));
      maps = std::move(next);
    }
    if (failed_ || maps.empty()) return Everything();
    if (widened) {
      widened_ = true;
      out.exact = false;
    }
    out.map = std::move(maps.front());
    return out;
  }

  // Makes *b a map (coarsened to fit, if its set does not).
  void MakeMap(Bound* b) {
    if (b->kind == Bound::Kind::kMap) return;
    if (b->kind == Bound::Kind::kProduct) {
      bool widened = false;
      b->map = PairMap(b->set, b->rows, true, budget_.max_entries(), &widened);
      if (widened) {
        b->exact = false;
        widened_ = true;
      }
      b->set.clear();
      b->rows.clear();
      b->kind = Bound::Kind::kMap;
      return;
    }
    if (b->kind == Bound::Kind::kPartitionKeys) {
      // A partition map of n intervals has 3n + 1 entries at most.
      const size_t max = (budget_.max_entries() - 1) / 3;
      if (b->set.size() > max) Widen(b, max);
      b->map = PartitionMap(b->set);
    } else {
      if (b->set.size() + 1 > budget_.max_entries()) Widen(b, budget_.max_entries() - 1);
      b->map = UniformMap(b->set);
    }
    b->set.clear();
    b->kind = Bound::Kind::kMap;
  }

  // True iff the budget ran out: the bounds computed are then meaningless.
  bool failed() const { return failed_; }
  // True iff some bound was coarsened.
  bool widened() const { return widened_; }
  MapBudget* budget() { return &budget_; }

 private:
  static Bound Everything() {
    Bound b;
    b.map = UniformMap(AllStrings());
    b.exact = false;
    return b;
  }

  // A set bound, coarsened if it is larger than a map may be.
  Bound Keys(Bound::Kind kind, IntervalSet set) {
    Bound b;
    b.kind = kind;
    b.set = std::move(set);
    if (b.set.size() + 1 > budget_.max_entries()) Widen(&b, budget_.max_entries() - 1);
    return b;
  }

  void Widen(Bound* b, size_t max_intervals) {
    b->set = CoarsenSet(std::move(b->set), max_intervals);
    b->exact = false;
    widened_ = true;
  }

  // The exact set of keys where key comparison `e` (or `not e`) holds.
  static IntervalSet KeySet(const Expr& e, bool negate) {
    IntervalSet set;
    AppendKeySet(e, negate, &set);
    return set;
  }
  static void AppendKeySet(const Expr& e, bool negate, IntervalSet* out) {
    if (e.literal().type() == storage::EdmType::kString) {
      return StringsWhereInto(e.op(), e.literal().string(), negate, out);
    }
    // Keys are strings: another literal type is never comparable, which
    // makes `ne` true and every other operator false.
    if ((e.op() == CmpOp::kNe) != negate) out->push_back(Interval{Cut::NegInf(), Cut::PosInf()});
  }

  MapBudget budget_;
  bool failed_ = false;
  bool widened_ = false;
};

// The top-level conjuncts of `e`, through nested `and` nodes.
void CollectConjuncts(const std::vector<ExprPtr>& children, std::vector<ExprPtr>* out) {
  for (const auto& c : children) {
    if (c->kind() == ExprKind::kAnd) {
      CollectConjuncts(c->children(), out);
    } else {
      out->push_back(c);
    }
  }
}

}  // namespace

QueryPlan Compile(const Filter* filter) { return CompileWithin(filter, kPlanLimits); }

QueryPlan CompileWithin(const Filter* filter, const PlanLimits& limits) {
  QueryPlan plan;
  if (filter == nullptr) {
    plan.ranges.push_back(storage::KeyRange::All());
    return plan;
  }
  const Expr& root = filter->root();
  std::vector<ExprPtr> conjuncts;
  if (root.kind() == ExprKind::kAnd) CollectConjuncts(root.children(), &conjuncts);

  Planner planner(limits);
  // Per conjunct: whether the plan may leave it out of the residual.
  std::vector<bool> implied(conjuncts.size(), false);
  std::vector<Part> parts;  // of the conjuncts
  Bound reduced;
  const Bound* bound = &reduced;  // of the whole filter, a map
  if (conjuncts.empty()) {
    reduced = planner.Upper(root, false);
    planner.MakeMap(&reduced);
  } else {
    parts = planner.PlanChain(conjuncts, false, true);
    for (const Part& part : parts) {
      for (size_t i : part.members) implied[i] = part.bound.exact;
    }
    if (parts.size() == 1) {
      planner.MakeMap(&parts.front().bound);
      bound = &parts.front().bound;
    } else {
      reduced = planner.Reduce(parts, true);
    }
  }
  auto whole = [filter] { return std::make_shared<const Filter>(*filter); };
  if (planner.failed()) {
    plan.ranges.push_back(storage::KeyRange::All());
    plan.residual = whole();
    return plan;
  }
  bool lossless;
  plan.ranges = MapToRanges(bound->map, &lossless);
  if (plan.ranges.empty()) return plan;  // contradiction: nothing to scan
  if (conjuncts.empty()) {
    if (!lossless || !bound->exact) plan.residual = whole();
    return plan;
  }
  if (!planner.widened()) {
    // Exact bounds throughout: a lossless conversion implies every exact
    // conjunct; a lossy one keeps the whole filter.
    if (!lossless) {
      plan.residual = whole();
      return plan;
    }
  } else {
    // Coarsened: an exact part is implied iff the ranges lie within its map
    // (a check the budget cannot pay for keeps its part).
    bool unused;
    const KeyMap covered = RangeHull(bound->map, &unused);
    std::fill(implied.begin(), implied.end(), false);
    for (Part& part : parts) {
      if (!part.bound.exact) continue;
      planner.MakeMap(&part.bound);
      if (!part.bound.exact || !MapWithin(covered, part.bound.map, planner.budget())) continue;
      for (size_t i : part.members) implied[i] = true;
    }
    if (std::find(implied.begin(), implied.end(), true) == implied.end()) {
      plan.residual = whole();
      return plan;
    }
  }
  std::vector<ExprPtr> rest;
  for (size_t i = 0; i < conjuncts.size(); ++i) {
    if (!implied[i]) rest.push_back(conjuncts[i]);
  }
  if (rest.size() == 1) {
    plan.residual = std::make_shared<const Filter>(std::move(rest.front()));
  } else if (rest.size() > 1) {
    plan.residual = std::make_shared<const Filter>(Expr::And(std::move(rest)));
  }
  return plan;
}

std::string QueryPlan::ToString() const {
  std::string s = "ranges: ";
  if (ranges.empty()) s += "none";
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (i) s += ", ";
    s += ranges[i].ToString();
  }
  s += "; residual: ";
  s += residual ? residual->ToString() : "none";
  return s;
}

}  // namespace cerulean::odata
