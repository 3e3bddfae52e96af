// Differential test: for random entities and random filters, scanning the
// plan's ranges and applying its residual must select exactly the entities
// that the naive evaluator selects over all of them. Each filter is planned
// within the real limits and within tiny ones, which coarsen the plans of
// small filters (merged ranges, row hulls, work ceilings) as the real limits
// do for large ones. The seed is printed; set CERULEAN_SEED to replay
// another one.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "odata/ast.h"
#include "odata/planner.h"
#include "odata/query.h"
#include "storage/edm_text.h"

namespace cerulean::odata {
namespace {

using storage::Entity;
using storage::Value;

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}

  int Int(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  bool Chance(int percent) { return Int(100) < percent; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Int(static_cast<int>(v.size()))];
  }

  // Keys built from pieces that exercise ordinal order: quotes, '_', '`',
  // upper/lower case, Latin-1, a supplementary character (surrogates in
  // UTF-16), and U+E000 / U+FFFD (which sort after the surrogates).
  std::string Key() {
    static const std::vector<std::string> kPieces = {"a",
                                                     "b",
                                                     "A",
                                                     "_",
                                                     "`",
                                                     "'",
                                                     "0",
                                                     "9",
                                                     "\xc3\xa9",
                                                     "\xf0\x9f\x98\x80",
                                                     "\xee\x80\x80",
                                                     "\xef\xbf\xbd",
                                                     "ab",
                                                     "p1_"};
    std::string k;
    int n = Int(4);
    for (int i = 0; i < n; ++i) k += Pick(kPieces);
    return k;
  }

  Value PropertyValue() {
    switch (Int(9)) {
      case 0:
        return Value::Int32(Int(5) - 1);
      case 1:
        return Value::Int64(Chance(80) ? Int(5) - 1 : int64_t{5000000000});
      case 2: {
        static const std::vector<double> kD = {
            0.0, -0.0, 1.0, 2.5, 3.0, -1.0, std::numeric_limits<double>::quiet_NaN()};
        return Value::Double(Pick(kD));
      }
      case 3:
        return Value::String(Key());
      case 4:
        return Value::Boolean(Chance(50));
      case 5:
        return Value::DateTimeTicks(kT0 + Int(3));
      case 6:
        return Value::FromGuid(Guid());
      case 7:
        return Value::FromBinary(
            Pick(std::vector<std::string>{"", "\x01", std::string("\x01\x02"), "\xff"}));
      default:
        return Value::Int32(Int(3));
    }
  }

  storage::Guid Guid() {
    static const std::vector<std::string> kG = {"00000000-0000-0000-0000-000000000001",
                                                "c9da6455-213d-42c9-9a79-3e9149a57833"};
    return *storage::ParseGuid(Pick(kG));
  }

  Entity RandomEntity() {
    Entity e;
    e.partition_key = Key();
    e.row_key = Key();
    e.timestamp = kT0 + Int(3);
    for (const char* name : {"A", "B", "Flag"}) {
      if (Chance(25)) continue;  // missing
      Value v =
          std::string(name) == "Flag" && Chance(70) ? Value::Boolean(Chance(50)) : PropertyValue();
      e.properties.push_back({name, v});
    }
    return e;
  }

  // A literal in filter syntax.
  std::string Literal() {
    switch (Int(10)) {
      case 0:
        return std::to_string(Int(5) - 1);
      case 1:
        return Chance(80) ? std::to_string(Int(5) - 1) + "L" : "5000000000L";
      case 2:
        return Pick(std::vector<std::string>{"0.0", "-0.0", "1.0", "2.5", "3e0", "-1.0", "1e300"});
      case 3:
      case 4:
        return Quote(Key());
      case 5:
        return Chance(50) ? "true" : "false";
      case 6:
        return "datetime'" + storage::FormatDateTime(kT0 + Int(3)) + "'";
      case 7:
        return "guid'" + storage::FormatGuid(Guid()) + "'";
      case 8:
        return Pick(std::vector<std::string>{"X''", "X'01'", "x'0102'", "binary'FF'"});
      default:
        return std::to_string(Int(3));
    }
  }

  static std::string Quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) {
      q += c;
      if (c == '\'') q += '\'';
    }
    return q + "'";
  }

  std::string Comparison() {
    static const std::vector<std::string> kOps = {"eq", "ne", "gt", "ge", "lt", "le"};
    std::string prop;
    std::string lit;
    int kind = Int(10);
    if (kind < 6) {
      prop = kind < 3 ? "PartitionKey" : "RowKey";
      lit = Chance(90) ? Quote(Key()) : Literal();
    } else {
      prop = Pick(std::vector<std::string>{"A", "B", "Flag", "Timestamp", "Missing"});
      lit = Literal();
    }
    const std::string& op = Pick(kOps);
    if (Chance(15)) return lit + " " + op + " " + prop;
    return prop + " " + op + " " + lit;
  }

  std::string FilterText(int depth) {
    if (depth == 0 || Chance(35)) {
      int r = Int(20);
      if (r == 0) return Chance(50) ? "true" : "false";
      if (r == 1) return Pick(std::vector<std::string>{"Flag", "A", "Missing"});
      return Comparison();
    }
    switch (Int(5)) {
      case 0:
        return "not (" + FilterText(depth - 1) + ")";
      case 1:
        return "(" + FilterText(depth - 1) + ")";
      case 2:
      case 3: {
        std::string s = FilterText(depth - 1);
        int n = 1 + Int(3);
        for (int i = 0; i < n; ++i) s += " and " + FilterText(depth - 1);
        return s;
      }
      default: {
        std::string s = "(" + FilterText(depth - 1) + ")";
        int n = 1 + Int(3);
        for (int i = 0; i < n; ++i) s += " or (" + FilterText(depth - 1) + ")";
        return s;
      }
    }
  }

  // Filters shaped like client queries: a partition, then row bounds, then
  // maybe a property test; or an `or` of such.
  std::string KeyQuery() {
    std::string s = "PartitionKey eq " + Quote(Key());
    static const std::vector<std::string> kRowOps = {"ge", "gt", "lt", "le", "eq", "ne"};
    int n = Int(3);
    for (int i = 0; i < n; ++i) s += " and RowKey " + Pick(kRowOps) + " " + Quote(Key());
    if (Chance(30)) s += " and " + Comparison();
    return s;
  }

  // A list of key comparisons joined by `or` (or by `and`, for `ne`), as
  // query builders write Contains(...): sometimes negated, sometimes of
  // ranges.
  std::string KeyList() {
    const std::string prop = Chance(50) ? "PartitionKey" : "RowKey";
    int n = 2 + Int(12);
    std::string s = "(";
    bool ranges = Chance(25);
    bool ne = !ranges && Chance(15);
    for (int i = 0; i < n; ++i) {
      if (i) s += ne ? " and " : " or ";
      if (ranges) {
        s += "(" + prop + " ge " + Quote(Key()) + " and " + prop + " lt " + Quote(Key()) + ")";
      } else {
        s += prop + (ne ? " ne " : " eq ") + Quote(Key());
      }
    }
    s += ")";
    return Chance(20) ? "not " + s : s;
  }

  // Products of key lists, with other conjuncts and nested.
  std::string ListQuery() {
    std::string s = KeyList() + " and " + KeyList();
    if (Chance(30)) s += " and " + Comparison();
    if (Chance(30)) s += " and " + KeyList();
    if (Chance(20)) s = "(" + s + ") or " + KeyList();
    if (Chance(10)) s = "not (" + s + ")";
    return s;
  }

  std::string AnyFilter() {
    int r = Int(12);
    if (r < 2) return KeyQuery();
    if (r < 4) return "(" + KeyQuery() + ") or (" + KeyQuery() + ")";
    if (r < 6) return ListQuery();
    return FilterText(1 + Int(4));
  }

 private:
  static constexpr int64_t kT0 = 638396640000000000;  // 2024-01-01
  std::mt19937_64 rng_;
};

uint64_t Seed() {
  if (const char* s = std::getenv("CERULEAN_SEED")) return std::strtoull(s, nullptr, 10);
  return 20240601;
}

// Checks `plan` against the naive evaluation of `filter` over `entities`
// (in key order).
void CheckPlan(const Filter& filter, const QueryPlan& plan, const std::vector<Entity>& entities) {
  size_t last_range = 0;
  for (const Entity& e : entities) {
    CAPTURE(e.partition_key);
    CAPTURE(e.row_key);
    size_t hits = 0;
    size_t which = 0;
    for (size_t i = 0; i < plan.ranges.size(); ++i) {
      if (plan.ranges[i].Contains(e.partition_key, e.row_key)) {
        ++hits;
        which = i;
      }
    }
    REQUIRE(hits <= 1);  // ranges do not overlap
    if (hits == 1) {
      REQUIRE(which >= last_range);  // ranges are in key order
      last_range = which;
    }
    bool naive = Matches(filter, e);
    bool planned = hits == 1 && (!plan.residual || Matches(*plan.residual, e));
    REQUIRE(naive == planned);
  }
}

TEST_CASE("differential: plan ranges + residual == naive filter") {
  const uint64_t seed = Seed();
  MESSAGE("seed " << seed);
  Gen gen(seed);
  constexpr int kRounds = 40;
  constexpr int kFiltersPerRound = 150;
  constexpr int kEntities = 80;
  size_t exact_plans = 0, empty_plans = 0, total = 0;
  size_t coarsened = 0, coarsened_exact_conjunct_dropped = 0, gave_up = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<Entity> entities;
    for (int i = 0; i < kEntities; ++i) entities.push_back(gen.RandomEntity());
    // Key order, for the range-order check below.
    std::sort(entities.begin(), entities.end(), [](const Entity& a, const Entity& b) {
      int c = storage::CompareOrdinal(a.partition_key, b.partition_key);
      if (c != 0) return c < 0;
      return storage::CompareOrdinal(a.row_key, b.row_key) < 0;
    });
    for (int k = 0; k < kFiltersPerRound; ++k) {
      std::string text = gen.AnyFilter();
      CAPTURE(seed);
      CAPTURE(text);
      auto filter = ParseFilter(text);
      REQUIRE_MESSAGE(filter.ok(), filter.status().message());
      QueryPlan plan = Compile(&*filter);
      {
        CAPTURE(plan.ToString());
        ++total;
        if (!plan.residual) ++exact_plans;
        if (plan.ranges.empty()) ++empty_plans;
        CheckPlan(*filter, plan, entities);
      }
      // Tiny limits: maps of 4 to 12 entries, and now and then a work
      // ceiling that ends planning early.
      PlanLimits tiny{4 + static_cast<size_t>(gen.Int(9)),
                      gen.Chance(15) ? static_cast<size_t>(gen.Int(200)) : size_t{1} << 20};
      QueryPlan coarse = CompileWithin(&*filter, tiny);
      CAPTURE(tiny.max_map_entries);
      CAPTURE(tiny.max_steps);
      CAPTURE(coarse.ToString());
      REQUIRE(coarse.ranges.size() <= tiny.max_map_entries);
      if (coarse.ToString() != plan.ToString()) {
        ++coarsened;
        if (coarse.ranges.size() == 1 && coarse.ranges.front() == storage::KeyRange::All() &&
            coarse.residual && coarse.residual->ToString() == filter->ToString()) {
          ++gave_up;
        } else if (coarse.residual && coarse.residual->ToString() != filter->ToString()) {
          ++coarsened_exact_conjunct_dropped;
        }
      }
      CheckPlan(*filter, coarse, entities);
    }
  }
  MESSAGE(total << " filters, " << exact_plans << " without residual, " << empty_plans
                << " with no ranges; within tiny limits " << coarsened << " plans differ, "
                << gave_up << " gave up, " << coarsened_exact_conjunct_dropped
                << " dropped a conjunct the ranges imply");
  CHECK(exact_plans > total / 10);
  CHECK(empty_plans > 0);
  CHECK(coarsened > total / 20);
  CHECK(gave_up > 0);
  CHECK(coarsened_exact_conjunct_dropped > 0);
}

}  // namespace
}  // namespace cerulean::odata
