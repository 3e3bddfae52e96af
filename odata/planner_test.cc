// Planner tests: plan.ToString() per seed pattern (EXPLAIN style), plus the
// key-set algebra underneath.
#include "odata/planner.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "odata/key_set.h"
#include "odata/parser.h"
#include "odata/query.h"

namespace cerulean::odata {
namespace {

std::string Plan(std::string_view filter) {
  auto f = ParseFilter(filter);
  REQUIRE_MESSAGE(f.ok(), f.status().message());
  return Compile(&*f).ToString();
}

struct Case {
  const char* filter;
  const char* plan;
};

TEST_CASE("planner: no filter scans everything") {
  QueryPlan p = Compile(nullptr);
  CHECK(p.ToString() == "ranges: (-inf .. +inf); residual: none");
  CHECK_FALSE(p.residual);
}

TEST_CASE("planner: seed patterns") {
  const Case cases[] = {
      // Point and partition.
      {"PartitionKey eq 'p1' and RowKey eq 'r1'",
       "ranges: ['p1','r1' .. 'p1','r1']; residual: none"},
      {"PartitionKey eq 'a'", "ranges: ['a' .. 'a']; residual: none"},
      {"'a' eq PartitionKey", "ranges: ['a' .. 'a']; residual: none"},
      {"PartitionKey eq ''", "ranges: (-inf .. '']; residual: none"},
      {"PartitionKey eq '' and RowKey eq ''", "ranges: ['' .. '','']; residual: none"},
      // Starts-with within a partition.
      {"PartitionKey eq 'M' and RowKey ge 'METABOLIS' and RowKey lt 'METABOLIT'",
       "ranges: ['M','METABOLIS' .. 'M','METABOLIT'); residual: none"},
      {"(PartitionKey eq 'M') and (RowKey ge 'METABOLIS') and (RowKey lt 'METABOLIT')",
       "ranges: ['M','METABOLIS' .. 'M','METABOLIT'); residual: none"},
      {"PartitionKey eq 'p1' and RowKey ge 'A' and RowKey lt 'B'",
       "ranges: ['p1','A' .. 'p1','B'); residual: none"},
      // Composite prefix: within a partition a range; across partitions the
      // RowKey bound cannot be a key range.
      {"PartitionKey eq 'orders' and RowKey ge 'p1_' and RowKey lt 'p1`'",
       "ranges: ['orders','p1_' .. 'orders','p1`'); residual: none"},
      {"RowKey ge 'p1_' and RowKey lt 'p1`'",
       "ranges: (-inf .. +inf); residual: (and (ge RowKey 'p1_') (lt RowKey 'p1`'))"},
      // Reverse ticks, newest N: RowKey = (max ticks - ticks), zero-padded.
      {"PartitionKey eq 'dev1' and RowKey lt '2516000000000000000'",
       "ranges: ['dev1' .. 'dev1','2516000000000000000'); residual: none"},
      {"PartitionKey eq 'dev1' and RowKey gt '2516000000000000000' and RowKey le "
       "'2517999999999999999'",
       "ranges: ('dev1','2516000000000000000' .. 'dev1','2517999999999999999']; residual: none"},
      // Numeric zero-padded ranges.
      {"(PartitionKey eq 'p1') and (RowKey ge '0000000001') and (RowKey le '0000000009')",
       "ranges: ['p1','0000000001' .. 'p1','0000000009']; residual: none"},
      {"PartitionKey ge '0010' and PartitionKey lt '0020'",
       "ranges: ['0010' .. '0020'); residual: none"},
      {"PartitionKey gt 'a' and PartitionKey le 'c'", "ranges: ('a' .. 'c']; residual: none"},
      {"PartitionKey lt 'm'", "ranges: (-inf .. 'm'); residual: none"},
      {"PartitionKey ge 'm'", "ranges: ['m' .. +inf); residual: none"},
      {"PartitionKey ge ''", "ranges: (-inf .. +inf); residual: none"},
      // Residuals keep only what the ranges do not decide.
      {"PartitionKey eq 'a' and RowKey ge 'b' and RowKey lt 'c' and Amount gt 5",
       "ranges: ['a','b' .. 'a','c'); residual: (gt Amount 5)"},
      {"PartitionKey eq 'a' and (Age gt 10 or Name eq 'x')",
       "ranges: ['a' .. 'a']; residual: (or (gt Age 10) (eq Name 'x'))"},
      {"Amount gt 5 and PartitionKey eq 'a' and Flag",
       "ranges: ['a' .. 'a']; residual: (and (gt Amount 5) Flag)"},
      {"Amount gt 5", "ranges: (-inf .. +inf); residual: (gt Amount 5)"},
      {"Timestamp gt datetime'2024-01-01T00:00:00Z' and PartitionKey eq 'a'",
       "ranges: ['a' .. 'a']; residual: (gt Timestamp datetime'2024-01-01T00:00:00Z')"},
      // or: several sorted, merged ranges.
      {"PartitionKey eq 'c' or PartitionKey eq 'a'",
       "ranges: ['a' .. 'a'], ['c' .. 'c']; residual: none"},
      {"PartitionKey eq 'a' or PartitionKey eq 'a'", "ranges: ['a' .. 'a']; residual: none"},
      {"(PartitionKey eq 'a' and RowKey eq '2') or (PartitionKey eq 'a' and RowKey eq '1') or "
       "(PartitionKey eq 'b' and RowKey eq '1')",
       "ranges: ['a','1' .. 'a','1'], ['a','2' .. 'a','2'], ['b','1' .. 'b','1']; residual: none"},
      {"PartitionKey ge 'a' and PartitionKey lt 'c' or PartitionKey ge 'b' and PartitionKey lt 'd'",
       "ranges: ['a' .. 'd'); residual: none"},
      {"PartitionKey eq 'a' or (PartitionKey gt 'a' and PartitionKey lt 'b')",
       "ranges: ['a' .. 'b'); residual: none"},
      {"(PartitionKey eq 'a' and RowKey ge 'm') or PartitionKey gt 'a'",
       "ranges: ['a','m' .. +inf); residual: none"},
      {"(PartitionKey eq 'a' and Amount gt 1) or PartitionKey eq 'b'",
       "ranges: ['a' .. 'a'], ['b' .. 'b']; residual: (or (and (eq PartitionKey 'a') (gt Amount "
       "1)) "
       "(eq PartitionKey 'b'))"},
      {"PartitionKey eq 'a' or Amount gt 1",
       "ranges: (-inf .. +inf); residual: (or (eq PartitionKey 'a') (gt Amount 1))"},
      // not.
      {"not (PartitionKey lt 'm')", "ranges: ['m' .. +inf); residual: none"},
      {"not (PartitionKey ne 'a')", "ranges: ['a' .. 'a']; residual: none"},
      {"PartitionKey ne 'a'", "ranges: (-inf .. 'a'), ('a' .. +inf); residual: none"},
      {"PartitionKey eq 'a' and not (RowKey eq 'x')",
       "ranges: ['a' .. 'a','x'), ('a','x' .. 'a']; residual: none"},
      {"PartitionKey eq 'a' and RowKey ne 'x'",
       "ranges: ['a' .. 'a','x'), ('a','x' .. 'a']; residual: none"},
      {"not (PartitionKey eq 'a' or PartitionKey eq 'b')",
       "ranges: (-inf .. 'a'), ('a' .. 'b'), ('b' .. +inf); residual: none"},
      {"PartitionKey eq 'a' and not (Amount gt 5)",
       "ranges: ['a' .. 'a']; residual: (not (gt Amount 5))"},
      {"not (PartitionKey eq 'a' and Amount gt 5)",
       "ranges: (-inf .. +inf); residual: (not (and (eq PartitionKey 'a') (gt Amount 5)))"},
      {"not (PartitionKey ne 'a' or Amount gt 5)",
       "ranges: ['a' .. 'a']; residual: (not (or (ne PartitionKey 'a') (gt Amount 5)))"},
      // Constants and key misuse (.NET expression builders).
      {"(true and RowKey eq 'settings') or (false or PartitionKey eq 'x')",
       "ranges: (-inf .. +inf); residual: (or (and true (eq RowKey 'settings')) false (eq "
       "PartitionKey 'x'))"},
      {"(true and PartitionKey eq 's') or (false or PartitionKey eq 'x')",
       "ranges: ['s' .. 's'], ['x' .. 'x']; residual: none"},
      {"true", "ranges: (-inf .. +inf); residual: none"},
      {"PartitionKey eq 1", "ranges: none; residual: none"},
      {"PartitionKey ne 1", "ranges: (-inf .. +inf); residual: none"},
      // Contradictions: nothing to scan.
      {"false", "ranges: none; residual: none"},
      {"PartitionKey eq 'a' and PartitionKey eq 'b'", "ranges: none; residual: none"},
      {"PartitionKey eq 'a' and RowKey gt 'b' and RowKey lt 'a' and Amount gt 1",
       "ranges: none; residual: none"},
      {"PartitionKey lt ''", "ranges: none; residual: none"},
      {"PartitionKey eq 'a' and not (PartitionKey eq 'a')", "ranges: none; residual: none"},
      // Several partitions with a RowKey bound: widened, whole filter kept.
      {"PartitionKey ge 'a' and PartitionKey le 'c' and RowKey ge 'x'",
       "ranges: ['a','x' .. 'c']; residual: (and (ge PartitionKey 'a') (le PartitionKey 'c') (ge "
       "RowKey 'x'))"},
      {"PartitionKey gt 'a' and PartitionKey lt 'c' and RowKey eq 'x'",
       "ranges: ('a' .. 'c'); residual: (and (gt PartitionKey 'a') (lt PartitionKey 'c') (eq "
       "RowKey 'x'))"},
      // Non-BMP and private-use keys order as UTF-16.
      {"PartitionKey eq '\xee\x80\x80' or PartitionKey eq '\xf0\x9f\x98\x80'",
       "ranges: ['\xf0\x9f\x98\x80' .. '\xf0\x9f\x98\x80'], ['\xee\x80\x80' .. '\xee\x80\x80']; "
       "residual: none"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.filter);
    CHECK(Plan(c.filter) == c.plan);
  }
}

// The plans of the benchmark's filters and of the table-design patterns
// (Azure's table design guide): the bounds on planning work must never move
// them.
TEST_CASE("planner: benchmark and table-design plans are pinned") {
  const Case cases[] = {
      // The benchmark: range-top100, chrono-newest20, filter-first-page.
      {"PartitionKey eq 'p00000' and RowKey ge 'c042-' and RowKey lt 'c042.'",
       "ranges: ['p00000','c042-' .. 'p00000','c042.'); residual: none"},
      {"PartitionKey eq 'dev0003'", "ranges: ['dev0003' .. 'dev0003']; residual: none"},
      {"Amount gt 500.0 and Active eq true",
       "ranges: (-inf .. +inf); residual: (and (gt Amount 500.0) (eq Active true))"},
      {"Amount gt 450.0 and Active eq true",
       "ranges: (-inf .. +inf); residual: (and (gt Amount 450.0) (eq Active true))"},
      // Point reads and partition scans, as query builders write them.
      {"(PartitionKey eq 'Sales') and (RowKey eq '000123')",
       "ranges: ['Sales','000123' .. 'Sales','000123']; residual: none"},
      {"((PartitionKey eq 'Sales') and (RowKey ge 'a')) and (RowKey lt 'b')",
       "ranges: ['Sales','a' .. 'Sales','b'); residual: none"},
      {"PartitionKey eq 'Sales' and Department eq 'Sales'",
       "ranges: ['Sales' .. 'Sales']; residual: (eq Department 'Sales')"},
      // Chronological RowKeys (ticks, zero-padded) and the log-tail pattern.
      {"PartitionKey eq 'dev1' and RowKey ge '0638396640000000000' and RowKey lt "
       "'0638397504000000000'",
       "ranges: ['dev1','0638396640000000000' .. 'dev1','0638397504000000000'); residual: none"},
      {"PartitionKey eq '2024-01-01' and RowKey gt '0638396640000000000'",
       "ranges: ('2024-01-01','0638396640000000000' .. '2024-01-01']; residual: none"},
      {"PartitionKey eq 'dev1' and RowKey ge '2516000000000000000'",
       "ranges: ['dev1','2516000000000000000' .. 'dev1']; residual: none"},
      // Date-bucketed partitions.
      {"PartitionKey ge '2024-01-01' and PartitionKey le '2024-01-31' and Level eq 'Error'",
       "ranges: ['2024-01-01' .. '2024-01-31']; residual: (eq Level 'Error')"},
      // Compound keys: prefix ranges within a partition, and a prefix of
      // the PartitionKey.
      {"PartitionKey eq 'Sales' and RowKey ge 'empid_' and RowKey lt 'empid`'",
       "ranges: ['Sales','empid_' .. 'Sales','empid`'); residual: none"},
      {"PartitionKey eq 'Sales' and RowKey ge 'email_' and RowKey lt 'email`'",
       "ranges: ['Sales','email_' .. 'Sales','email`'); residual: none"},
      {"PartitionKey ge 'Sales_' and PartitionKey lt 'Sales`'",
       "ranges: ['Sales_' .. 'Sales`'); residual: none"},
      {"PartitionKey eq 'email_jones@contoso.com'",
       "ranges: ['email_jones@contoso.com' .. 'email_jones@contoso.com']; residual: none"},
      // Small key lists (Contains in LINQ) and their products.
      {"PartitionKey eq 'a' and (RowKey eq '1' or RowKey eq '2' or RowKey eq '3')",
       "ranges: ['a','1' .. 'a','1'], ['a','2' .. 'a','2'], ['a','3' .. 'a','3']; residual: none"},
      {"(PartitionKey eq 'a' or PartitionKey eq 'b') and (RowKey eq '1' or RowKey eq '2')",
       "ranges: ['a','1' .. 'a','1'], ['a','2' .. 'a','2'], ['b','1' .. 'b','1'], "
       "['b','2' .. 'b','2']; residual: none"},
      {"(PartitionKey eq 'p1' and RowKey eq 'r1') or (PartitionKey eq 'p2' and RowKey eq 'r2')",
       "ranges: ['p1','r1' .. 'p1','r1'], ['p2','r2' .. 'p2','r2']; residual: none"},
      {"(PartitionKey eq 'a' or PartitionKey eq 'b') and Amount gt 5",
       "ranges: ['a' .. 'a'], ['b' .. 'b']; residual: (gt Amount 5)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.filter);
    CHECK(Plan(c.filter) == c.plan);
  }
}

// Lists of a few hundred keys (Contains over ids) keep exact plans.
TEST_CASE("planner: key lists and their small products stay exact") {
  auto list = [](const char* property, const char* prefix, int n) {
    std::string s = "(";
    for (int i = 0; i < n; ++i) {
      if (i) s += " or ";
      s += std::string(property) + " eq '" + prefix + std::to_string(1000 + i) + "'";
    }
    return s + ")";
  };
  SUBCASE("1000 partitions") {
    auto f = ParseFilter(list("PartitionKey", "p", 1000));
    REQUIRE(f.ok());
    QueryPlan p = Compile(&*f);
    CHECK_FALSE(p.residual);
    REQUIRE(p.ranges.size() == 1000);
    CHECK(p.ranges.front().ToString() == "['p1000' .. 'p1000']");
    CHECK(p.ranges.back().ToString() == "['p1999' .. 'p1999']");
  }
  SUBCASE("a partition and 1000 rows") {
    auto f = ParseFilter("PartitionKey eq 'a' and " + list("RowKey", "r", 1000));
    REQUIRE(f.ok());
    QueryPlan p = Compile(&*f);
    CHECK_FALSE(p.residual);
    REQUIRE(p.ranges.size() == 1000);
    CHECK(p.ranges.back().ToString() == "['a','r1999' .. 'a','r1999']");
  }
  SUBCASE("10 partitions times 10 rows") {
    auto f = ParseFilter(list("PartitionKey", "p", 10) + " and " + list("RowKey", "r", 10));
    REQUIRE(f.ok());
    QueryPlan p = Compile(&*f);
    CHECK_FALSE(p.residual);
    REQUIRE(p.ranges.size() == 100);
    CHECK(p.ranges.front().ToString() == "['p1000','r1000' .. 'p1000','r1000']");
    CHECK(p.ranges.back().ToString() == "['p1009','r1009' .. 'p1009','r1009']");
  }
  SUBCASE("not of a list") {
    auto f = ParseFilter("not " + list("PartitionKey", "p", 500));
    REQUIRE(f.ok());
    QueryPlan p = Compile(&*f);
    CHECK_FALSE(p.residual);
    REQUIRE(p.ranges.size() == 501);
    CHECK(p.ranges.front().ToString() == "(-inf .. 'p1000')");
    CHECK(p.ranges.back().ToString() == "('p1499' .. +inf)");
  }
}

TEST_CASE("planner: long or-chains of keys stay exact") {
  std::string filter;
  for (int i = 999; i >= 0; --i) {
    if (!filter.empty()) filter += " or ";
    char buf[64];
    std::snprintf(buf, sizeof buf, "(PartitionKey eq 'p%04d' and RowKey eq 'r')", i);
    filter += buf;
  }
  auto f = ParseFilter(filter);
  REQUIRE(f.ok());
  QueryPlan p = Compile(&*f);
  CHECK_FALSE(p.residual);
  REQUIRE(p.ranges.size() == 1000);
  CHECK(p.ranges.front().ToString() == "['p0000','r' .. 'p0000','r']");
  CHECK(p.ranges.back().ToString() == "['p0999','r' .. 'p0999','r']");
}

std::string KeyList(const char* property, const char* prefix, int n) {
  std::string s = "(";
  for (int i = 0; i < n; ++i) {
    if (i) s += " or ";
    s += std::string(property) + " eq '" + prefix + std::to_string(i) + "'";
  }
  return s + ")";
}

TEST_CASE("planner: a product of key lists is one range per partition") {
  // (PK in 1000 values) and (RK in 1000 values): a million keys. The plan
  // keeps one range per partition, the RowKey hull, and the RowKey list as
  // the residual.
  auto f = ParseFilter(KeyList("PartitionKey", "p", 1000) + " and " + KeyList("RowKey", "r", 1000));
  REQUIRE(f.ok());
  QueryPlan p = Compile(&*f);
  REQUIRE(p.ranges.size() == 1000);
  CHECK(p.ranges.front().ToString() == "['p0','r0' .. 'p0','r999']");
  CHECK(p.ranges.back().ToString() == "['p999','r0' .. 'p999','r999']");
  REQUIRE(p.residual);
  CHECK(p.residual->ToString() == ParseFilter(KeyList("RowKey", "r", 1000))->ToString());

  // With a property test too, both residual conjuncts stay.
  f = ParseFilter(KeyList("PartitionKey", "p", 1000) + " and Amount gt 5 and " +
                  KeyList("RowKey", "r", 1000));
  REQUIRE(f.ok());
  p = Compile(&*f);
  CHECK(p.ranges.size() == 1000);
  REQUIRE(p.residual);
  CHECK(p.residual->ToString().starts_with("(and (gt Amount 5) (or (eq RowKey 'r0')"));
}

TEST_CASE("planner: lists too long for a map are merged into neighbouring ranges") {
  // 3000 partitions: more than a map holds, so neighbouring partitions
  // share a range and the list is the residual.
  auto f = ParseFilter(KeyList("PartitionKey", "p", 3000));
  REQUIRE(f.ok());
  QueryPlan p = Compile(&*f);
  CHECK(p.ranges.size() < 3000);
  CHECK(p.ranges.size() > 100);
  REQUIRE(p.residual);
  CHECK(p.residual->ToString() == f->ToString());
  // not of such a list: no range can be excluded for sure but the ends.
  f = ParseFilter("not " + KeyList("PartitionKey", "p", 3000));
  REQUIRE(f.ok());
  p = Compile(&*f);
  REQUIRE(p.residual);
  CHECK(p.residual->ToString() == f->ToString());
}

// Filters up to the length limit, of the shapes that cost the planner most.
// Their plans stay within the bounds; each subcase also serves to measure
// the planner (odata/README.md, "Planner rules").
TEST_CASE("planner: filters up to the size limit plan within the bounds") {
  auto plan = [](const std::string& text) {
    REQUIRE(text.size() <= kMaxFilterBytes);
    auto f = ParseFilter(text);
    REQUIRE_MESSAGE(f.ok(), f.status().message());
    QueryPlan p = Compile(&*f);
    CHECK(p.ranges.size() <= kPlanLimits.max_map_entries);
    return p;
  };
  auto gave_up = [](const QueryPlan& p) {
    return p.ranges.size() == 1 && p.ranges.front() == storage::KeyRange::All();
  };
  SUBCASE("product of two lists of 1000 keys") {
    QueryPlan p = plan(KeyList("PartitionKey", "p", 1000) + " and " + KeyList("RowKey", "r", 1000));
    CHECK(p.ranges.size() == 1000);
  }
  SUBCASE("product of two lists of 2000 keys") {
    QueryPlan p = plan(KeyList("PartitionKey", "p", 2000) + " and " + KeyList("RowKey", "r", 2000));
    CHECK_FALSE(gave_up(p));
  }
  SUBCASE("or of 2500 composite keys") {
    std::string s;
    for (int i = 0; i < 2500; ++i) {
      if (i) s += " or ";
      s += "(PartitionKey eq 'p" + std::to_string(1000 + i) + "' and RowKey eq 'r')";
    }
    QueryPlan p = plan(s);
    CHECK_FALSE(gave_up(p));
  }
  SUBCASE("and of 2600 (PartitionKey or RowKey) pairs") {
    std::string s;
    for (int i = 0; i < 2600; ++i) {
      if (i) s += " and ";
      s += "(PartitionKey eq 'p" + std::to_string(i) + "' or RowKey eq 'r" + std::to_string(i) +
           "')";
    }
    plan(s);
  }
  SUBCASE("or of 2600 staircase ranges") {
    std::string s;
    for (int i = 0; i < 2600; ++i) {
      if (i) s += " or ";
      s += "(PartitionKey ge 'p" + std::to_string(i) + "' and RowKey lt 'r" + std::to_string(i) +
           "')";
    }
    plan(s);
  }
  SUBCASE("95 levels of alternating lists") {
    std::string s = KeyList("PartitionKey", "a", 30);
    for (int d = 0; d < 95; ++d) {
      std::string list =
          KeyList(d % 2 ? "PartitionKey" : "RowKey", ("x" + std::to_string(d) + "_").c_str(), 30);
      s = "(" + s + (d % 2 ? " or " : " and ") + list + ")";
    }
    plan(s);
  }
  SUBCASE("not of a product of lists") {
    QueryPlan p = plan("not (" + KeyList("PartitionKey", "p", 2000) + " and " +
                       KeyList("RowKey", "r", 2000) + ")");
    CHECK(p.residual);
  }
}

TEST_CASE("key sets: interval algebra") {
  IntervalSet ab = StringsWhere(CmpOp::kGe, "a");
  ab = Intersect(ab, StringsWhere(CmpOp::kLt, "b"));
  CHECK(Contains(ab, "a"));
  CHECK(Contains(ab, "azzz"));
  CHECK_FALSE(Contains(ab, "b"));
  CHECK_FALSE(Contains(ab, ""));
  IntervalSet not_ab = Complement(ab);
  CHECK(Contains(not_ab, ""));
  CHECK(Contains(not_ab, "b"));
  CHECK_FALSE(Contains(not_ab, "a"));
  CHECK(Union(ab, not_ab) == AllStrings());
  CHECK(Intersect(ab, not_ab).empty());
  CHECK(Complement(AllStrings()).empty());
  CHECK(Complement(IntervalSet{}) == AllStrings());
  CHECK(StringsWhere(CmpOp::kLt, "").empty());
  CHECK(StringsWhere(CmpOp::kGe, "") == AllStrings());
  CHECK(StringsWhere(CmpOp::kNe, "").size() == 1);
  CHECK_FALSE(Contains(StringsWhere(CmpOp::kNe, ""), ""));
  CHECK(Contains(StringsWhere(CmpOp::kGt, ""), "\x01"));
  // Touching intervals merge.
  CHECK(Union(StringsWhere(CmpOp::kLt, "m"), StringsWhere(CmpOp::kGe, "m")) == AllStrings());
  CHECK(Union(StringsWhere(CmpOp::kLe, "m"), StringsWhere(CmpOp::kGt, "m")) == AllStrings());
}

TEST_CASE("key sets: maps") {
  MapBudget budget(1000, 100000);
  bool widened = false;
  KeyMap a = PartitionMap(StringsWhere(CmpOp::kEq, "a"));
  KeyMap r = UniformMap(StringsWhere(CmpOp::kGe, "x"));
  auto ar = MapAnd(a, r, &budget, &widened);
  REQUIRE(ar);
  CHECK(MapContains(*ar, "a", "x"));
  CHECK_FALSE(MapContains(*ar, "a", "w"));
  CHECK_FALSE(MapContains(*ar, "b", "x"));
  auto n = MapNot(*ar, &budget, &widened);
  REQUIRE(n);
  CHECK(MapContains(*n, "a", "w"));
  CHECK(MapContains(*n, "b", "x"));
  CHECK_FALSE(MapContains(*n, "a", "x"));
  auto all = MapOr(*ar, *n, &budget, &widened);
  REQUIRE(all);
  CHECK(*all == UniformMap(AllStrings()));
  CHECK_FALSE(widened);
  CHECK(MapWithin(*ar, a, &budget));
  CHECK_FALSE(MapWithin(a, *ar, &budget));
  MapBudget tiny(1000, 1);
  CHECK_FALSE(MapAnd(a, r, &tiny, &widened));
  CHECK(tiny.exhausted());
}

TEST_CASE("key sets: a result too large is coarsened to a superset") {
  // 20 partitions and 20 row keys: 400 keys, more entries than allowed.
  std::vector<std::string> names;
  for (int i = 0; i < 20; ++i) names.push_back("k" + std::to_string(10 + i));
  IntervalSet pks, rks;
  for (const auto& n : names) {
    pks = Union(pks, StringsWhere(CmpOp::kEq, n));
    rks = Union(rks, StringsWhere(CmpOp::kEq, n));
  }
  KeyMap p = PartitionMap(pks);
  KeyMap r = UniformMap(rks);
  bool widened = false;
  MapBudget budget(64, 100000);
  auto pr = MapAnd(p, r, &budget, &widened);
  REQUIRE(pr);
  CHECK(widened);
  CHECK(MapSize(*pr) <= 64);
  // Still every key of the exact product, one row hull per partition.
  for (const auto& pk : names) {
    for (const auto& rk : names) CHECK(MapContains(*pr, pk, rk));
  }
  CHECK_FALSE(MapContains(*pr, "k09", "k10"));
  CHECK(MapContains(*pr, "k10", "k105"));  // inside the hull, not a key
  CHECK_FALSE(MapContains(*pr, "k10", "k30"));
  CHECK(MapWithin(*pr, p, &budget));
  CHECK_FALSE(MapWithin(*pr, r, &budget));

  // Too many partitions even for hulls: neighbouring partitions merge.
  KeyMap small = Coarsen(p, 16);
  CHECK(MapSize(small) <= 16);
  for (const auto& pk : names) CHECK(MapContains(small, pk, "any"));
  CHECK_FALSE(MapContains(small, "a", "any"));
  CHECK_FALSE(MapContains(small, "z", "any"));
  bool lossy = false;
  RangeHull(small, &lossy);
  CHECK_FALSE(lossy);  // whole partitions: still key ranges
}

TEST_CASE("key sets: range hulls") {
  bool widened = false;
  // PartitionKey in ['a','c'] with RowKey >= 'x': the first partition keeps
  // its bound, the rest is whole.
  KeyMap m = PartitionMap(Intersect(StringsWhere(CmpOp::kGe, "a"), StringsWhere(CmpOp::kLe, "c")));
  MapBudget budget(1000, 100000);
  auto mr = MapAnd(m, UniformMap(StringsWhere(CmpOp::kGe, "x")), &budget, &widened);
  REQUIRE(mr);
  KeyMap hull = RangeHull(*mr, &widened);
  CHECK(widened);
  CHECK(MapWithin(*mr, hull, &budget));
  CHECK(MapContains(hull, "a", "x"));
  CHECK_FALSE(MapContains(hull, "a", "w"));
  CHECK(MapContains(hull, "b", "w"));
  CHECK(MapContains(hull, "c", "w"));
  CHECK_FALSE(MapContains(hull, "d", "x"));
  bool exact = false;
  CHECK(MapToRanges(hull, &exact).size() == 1);
  CHECK(exact);
}

}  // namespace
}  // namespace cerulean::odata
