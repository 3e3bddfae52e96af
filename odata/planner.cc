// Compile: filter -> QueryPlan {ranges, residual}.
//
// Every node gets an upper bound of the keys where it can be true, as a
// KeyMap (odata/key_set.h), computed in negation normal form so that `not`
// needs no lower bounds: Upper(not e) = Upper(e, negated). A comparison of
// PartitionKey or RowKey with a literal, and the constants, are exact (the
// map is precisely where they hold); any other predicate is bounded by "all
// keys" and is inexact. The top-level conjuncts are intersected; when the
// resulting map converts to ranges without widening, the exact conjuncts are
// implied by the ranges and only the inexact ones form the residual.
#include <memory>
#include <utility>
#include <vector>

#include "odata/ast.h"
#include "odata/key_set.h"
#include "odata/query.h"

namespace cerulean::odata {

namespace {

// Map entries a plan may build in total. Far above any filter a client
// sends (a 1000-key `or` chain needs a few thousand); past it the planner
// gives up and scans everything with the whole filter as residual.
constexpr size_t kPlanBudget = 1 << 20;

class Planner {
 public:
  // The keys where `e` (or `not e` if `negate`) can hold. Sets *exact iff
  // the map is exactly where it holds.
  KeyMap Upper(const Expr& e, bool negate, bool* exact) {
    *exact = true;
    if (failed_) return Everything(exact);
    switch (e.kind()) {
      case ExprKind::kConstant:
        return UniformMap(e.constant() != negate ? AllStrings() : IntervalSet{});
      case ExprKind::kBoolProperty:
        // A key or Timestamp is never a Boolean, so as a term it is false.
        if (e.system() != SystemProperty::kNone) {
          return UniformMap(negate ? AllStrings() : IntervalSet{});
        }
        return Everything(exact);
      case ExprKind::kCompare: {
        if (e.system() != SystemProperty::kPartitionKey && e.system() != SystemProperty::kRowKey) {
          return Everything(exact);
        }
        // Keys are strings: another literal type is never comparable, which
        // makes `ne` true and every other operator false.
        IntervalSet set = e.literal().type() == storage::EdmType::kString
                              ? StringsWhere(e.op(), e.literal().string())
                          : e.op() == CmpOp::kNe ? AllStrings()
                                                 : IntervalSet{};
        if (negate) set = Complement(set);
        return e.system() == SystemProperty::kPartitionKey ? PartitionMap(set)
                                                           : UniformMap(std::move(set));
      }
      case ExprKind::kNot:
        return Upper(*e.children().front(), !negate, exact);
      case ExprKind::kAnd:
      case ExprKind::kOr: {
        bool conjunction = (e.kind() == ExprKind::kAnd) != negate;
        std::vector<KeyMap> maps;
        maps.reserve(e.children().size());
        for (const auto& c : e.children()) {
          bool child_exact;
          maps.push_back(Upper(*c, negate, &child_exact));
          *exact = *exact && child_exact;
        }
        KeyMap m = Reduce(std::move(maps), conjunction);
        if (failed_) return Everything(exact);
        return m;
      }
    }
    return Everything(exact);
  }

  // The and (or the or) of `maps`, combined pairwise so that long chains
  // cost O(n log n) rather than O(n^2).
  KeyMap Reduce(std::vector<KeyMap> maps, bool conjunction) {
    while (maps.size() > 1 && !failed_) {
      std::vector<KeyMap> next;
      next.reserve(maps.size() / 2 + 1);
      for (size_t i = 0; i + 1 < maps.size(); i += 2) {
        auto m = conjunction ? MapAnd(maps[i], maps[i + 1], &budget_)
                             : MapOr(maps[i], maps[i + 1], &budget_);
        if (!m) {
          failed_ = true;
          break;
        }
        next.push_back(std::move(*m));
      }
      if (maps.size() % 2 == 1) next.push_back(std::move(maps.back()));
      maps = std::move(next);
    }
    if (failed_ || maps.empty()) return UniformMap(AllStrings());
    return std::move(maps.front());
  }

  bool failed() const { return failed_; }

 private:
  static KeyMap Everything(bool* exact) {
    *exact = false;
    return UniformMap(AllStrings());
  }

  size_t budget_ = kPlanBudget;
  bool failed_ = false;
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

QueryPlan Compile(const Filter* filter) {
  QueryPlan plan;
  if (filter == nullptr) {
    plan.ranges.push_back(storage::KeyRange::All());
    return plan;
  }
  const Expr& root = filter->root();
  std::vector<ExprPtr> conjuncts;
  if (root.kind() == ExprKind::kAnd) CollectConjuncts(root.children(), &conjuncts);

  Planner planner;
  std::vector<bool> exact;
  KeyMap map;
  if (conjuncts.empty()) {
    bool e;
    map = planner.Upper(root, false, &e);
    exact.push_back(e);
  } else {
    std::vector<KeyMap> maps;
    for (const auto& c : conjuncts) {
      bool e;
      maps.push_back(planner.Upper(*c, false, &e));
      exact.push_back(e);
    }
    map = planner.Reduce(std::move(maps), true);
  }
  auto whole = [filter] { return std::make_shared<const Filter>(*filter); };
  if (planner.failed()) {
    plan.ranges.push_back(storage::KeyRange::All());
    plan.residual = whole();
    return plan;
  }
  bool lossless;
  plan.ranges = MapToRanges(map, &lossless);
  if (plan.ranges.empty()) return plan;  // contradiction: nothing to scan
  if (!lossless) {
    plan.residual = whole();
    return plan;
  }
  if (conjuncts.empty()) {
    if (!exact.front()) plan.residual = whole();
    return plan;
  }
  std::vector<ExprPtr> rest;
  for (size_t i = 0; i < conjuncts.size(); ++i) {
    if (!exact[i]) rest.push_back(conjuncts[i]);
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
