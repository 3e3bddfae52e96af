// Evaluator tests: query.md §3 semantics and the §8 worked examples.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "odata/query.h"
#include "storage/edm_text.h"

namespace cerulean::odata {
namespace {

using storage::Entity;
using storage::Value;

Entity Make(std::string pk, std::string rk, std::vector<storage::Property> props = {},
            int64_t ts = 0) {
  Entity e;
  e.partition_key = std::move(pk);
  e.row_key = std::move(rk);
  e.timestamp = ts;
  e.properties = std::move(props);
  return e;
}

bool M(std::string_view filter, const Entity& e) {
  auto f = ParseFilter(filter);
  REQUIRE_MESSAGE(f.ok(), f.status().message());
  return Matches(*f, e);
}

// The keys of `entities` that match `filter`, as "pk/rk" joined by spaces.
std::string Which(std::string_view filter, const std::vector<Entity>& entities) {
  auto f = ParseFilter(filter);
  REQUIRE_MESSAGE(f.ok(), f.status().message());
  std::string out;
  for (const Entity& e : entities) {
    if (!Matches(*f, e)) continue;
    if (!out.empty()) out += ' ';
    out += e.partition_key + "/" + e.row_key;
  }
  return out;
}

TEST_CASE("evaluator: a list of equalities is a set") {
  // Ten names: long enough for the sorted list (Expr::eq_strings).
  std::string list, keys;
  for (int i = 0; i < 10; ++i) {
    if (i) {
      list += " or ";
      keys += " or ";
    }
    list += "Name eq 'n" + std::to_string(i) + "'";
    keys += "RowKey eq 'r" + std::to_string(i) + "'";
  }
  std::vector<Entity> t = {
      Make("a", "r3", {{"Name", Value::String("n3")}}),
      Make("a", "r10", {{"Name", Value::String("n10")}}),
      Make("b", "r9", {{"Name", Value::Int32(3)}}),
      Make("b", "r", {}),
      Make("c", "r0", {{"Name", Value::String("")}}),
  };
  CHECK(Which(list, t) == "a/r3");
  CHECK(Which("not (" + list + ")", t) == "a/r10 b/r9 b/r c/r0");
  CHECK(Which(keys, t) == "a/r3 b/r9 c/r0");
  CHECK(Which(list + " or Name eq 3", t) == "a/r3 b/r9");  // mixed: not a set, same answer
  CHECK(EvaluationCost(*ParseFilter(list)) == 5);          // 10 names: 1 + 4 halvings
  CHECK(EvaluationCost(*ParseFilter(list + " or Name eq 3")) == 12);
  CHECK(EvaluationCost(*ParseFilter("A eq 1 and not B")) == 4);
  CHECK(MatchesTable(*ParseFilter("TableName eq 't1' or TableName eq 't2' or TableName eq 't3' or "
                                  "TableName eq 't4' or TableName eq 't5' or TableName eq 't6' or "
                                  "TableName eq 't7' or TableName eq 't8'"),
                     "t8"));
}

TEST_CASE("evaluator: worked examples of query.md §8") {
  std::vector<Entity> t = {
      Make("a", "1", {{"Age", Value::Int32(30)}, {"Name", Value::String("Ann")}}),
      Make("a", "2", {{"Age", Value::String("30")}}),
      Make("b", "1", {{"Age", Value::Int64(30)}, {"Name", Value::String("bob")}}),
  };
  CHECK(Which("Age eq 30", t) == "a/1 b/1");
  CHECK(Which("Age eq 30L", t) == "b/1");
  CHECK(Which("Age eq '30'", t) == "a/2");
  CHECK(Which("Name ne 'Ann'", t) == "b/1");
  CHECK(Which("not (Name eq 'Ann')", t) == "a/2 b/1");
  CHECK(Which("Name ge 'B'", t) == "b/1");
  CHECK(Which("PartitionKey eq 'a' and (Age gt 10 or Name eq 'x')", t) == "a/1");
  CHECK(Which("'a' eq PartitionKey", t) == "a/1 a/2");
  CHECK(Which("30 eq Age", t) == "a/1 b/1");
  CHECK(Which("25 lt Age", t) == "a/1 b/1");
  CHECK(Which("Age ne 30", t) == "a/2");  // incompatible String vs Int32: ne is true
}

TEST_CASE("evaluator: missing properties") {
  Entity e = Make("p", "r", {{"Other", Value::Int32(1)}});
  for (const char* op : {"eq", "ne", "gt", "ge", "lt", "le"}) {
    CAPTURE(op);
    CHECK_FALSE(M(std::string("Foo ") + op + " ''", e));
    CHECK_FALSE(M(std::string("Foo ") + op + " 1", e));
    CHECK(M(std::string("not (Foo ") + op + " 1)", e));
  }
  CHECK_FALSE(M("Foo", e));
  CHECK(M("not Foo", e));
}

TEST_CASE("evaluator: type compatibility and widening (§3.3)") {
  Entity e = Make("p", "r",
                  {{"I32", Value::Int32(3)},
                   {"I64", Value::Int64(3)},
                   {"D", Value::Double(3.0)},
                   {"Big", Value::Int64(int64_t{1} << 40)},
                   {"S", Value::String("3")},
                   {"B", Value::Boolean(true)}});
  // Int32 literal: Int32, Int64, Double.
  CHECK(M("I32 eq 3", e));
  CHECK(M("I64 eq 3", e));
  CHECK(M("D eq 3", e));
  CHECK(M("Big gt 2147483647", e));
  CHECK(M("D lt 4", e));
  // Int64 literal: Int64, Double, not Int32.
  CHECK(M("I64 eq 3L", e));
  CHECK(M("D eq 3L", e));
  CHECK_FALSE(M("I32 eq 3L", e));
  CHECK(M("I32 ne 3L", e));
  CHECK_FALSE(M("I32 lt 4L", e));
  CHECK_FALSE(M("I32 gt 2L", e));
  // Double literal: Double only.
  CHECK(M("D eq 3.0", e));
  CHECK(M("D eq 3e0", e));
  CHECK_FALSE(M("I64 eq 3.0", e));
  CHECK_FALSE(M("I32 eq 3.0", e));
  CHECK(M("I32 ne 3.0", e));
  // Other mismatches: eq false, ne true, ordering false.
  CHECK_FALSE(M("S eq 3", e));
  CHECK(M("S ne 3", e));
  CHECK_FALSE(M("S gt 3", e));
  CHECK_FALSE(M("S lt 3", e));
  CHECK_FALSE(M("S le '3' and I32 eq '3'", e));
  CHECK_FALSE(M("B eq 1", e));
  CHECK(M("B eq true", e));
  CHECK(M("B gt false", e));
  CHECK_FALSE(M("B lt false", e));
  CHECK(M("B", e));
  CHECK_FALSE(M("S", e));  // a non-Boolean as a term is false
  CHECK(M("not S", e));
}

TEST_CASE("evaluator: doubles") {
  Entity e = Make("p", "r",
                  {{"NaN", Value::Double(std::numeric_limits<double>::quiet_NaN())},
                   {"NegZero", Value::Double(-0.0)},
                   {"Inf", Value::Double(std::numeric_limits<double>::infinity())},
                   {"X", Value::Double(2.5)}});
  CHECK_FALSE(M("NaN eq 1.0", e));
  CHECK(M("NaN ne 1.0", e));
  CHECK_FALSE(M("NaN gt 1.0", e));
  CHECK_FALSE(M("NaN le 1.0", e));
  CHECK_FALSE(M("NaN eq 1", e));
  CHECK(M("NegZero eq 0.0", e));
  CHECK(M("NegZero eq 0", e));
  CHECK(M("NegZero eq -0.0", e));
  CHECK(M("Inf gt 1e308", e));
  CHECK(M("X gt 2", e));
  CHECK(M("X lt 3L", e));
  CHECK(M("X eq 2.5d", e));
  CHECK(M("X ge 25e-1", e));
}

TEST_CASE("evaluator: strings are ordinal in UTF-16 order") {
  Entity e = Make("p", "r",
                  {{"B", Value::String("B")},
                   {"Emoji", Value::String("\xf0\x9f\x98\x80")},  // U+1F600
                   {"Private", Value::String("\xee\x80\x80")},    // U+E000
                   {"Repl", Value::String("\xef\xbf\xbd")},       // U+FFFD
                   {"Q", Value::String("it's")}});
  CHECK(M("B lt 'a'", e));
  CHECK(M("B lt 'BB'", e));
  CHECK_FALSE(M("B eq 'b'", e));
  CHECK(M("B ge 'B'", e));
  // Surrogates (D83D) sort below U+E000 and U+FFFD.
  CHECK(M("Emoji lt '\xee\x80\x80'", e));
  CHECK(M("Private gt '\xf0\x9f\x98\x80'", e));
  CHECK(M("Repl gt '\xf4\x8f\xbf\xbf'", e));
  CHECK(M("Emoji gt '\xed\x9f\xbf'", e));  // U+D7FF < surrogates
  CHECK(M("Q eq 'it''s'", e));
  CHECK(M("RowKey eq 'r' and PartitionKey eq 'p'", e));
  CHECK(M("RowKey gt ''", e));
  CHECK_FALSE(M("RowKey lt ''", e));
  CHECK_FALSE(M("PartitionKey eq 1", e));
  CHECK(M("PartitionKey ne 1", e));
}

TEST_CASE("evaluator: DateTime, Timestamp, Guid, Binary") {
  const int64_t t0 = *storage::ParseDateTime("2024-01-01T00:00:00Z");
  Entity e =
      Make("p", "r",
           {{"When", Value::DateTimeTicks(t0 + 1)},
            {"Id", Value::FromGuid(*storage::ParseGuid("c9da6455-213d-42c9-9a79-3e9149a57833"))},
            {"Data", Value::FromBinary(std::string("\x01\x02", 2))},
            {"High", Value::FromBinary(std::string("\xff", 1))}},
           t0 + 5);
  CHECK(M("When gt datetime'2024-01-01T00:00:00Z'", e));
  CHECK(M("When eq datetime'2024-01-01T00:00:00.0000001Z'", e));
  CHECK_FALSE(M("When eq datetime'2024-01-01T00:00:00Z'", e));
  CHECK(M("When lt datetime'2024-01-01T00:00:00.0000002Z'", e));
  CHECK(M("When eq datetime'2024-01-01T01:00:00.0000001+01:00'", e));
  CHECK_FALSE(M("When eq '2024-01-01T00:00:00.0000001Z'", e));
  CHECK(M("Timestamp eq datetime'2024-01-01T00:00:00.0000005Z'", e));
  CHECK(M("Timestamp gt datetime'2024-01-01T00:00:00.0000001Z'", e));
  CHECK_FALSE(M("Timestamp lt datetime'2024-01-01T00:00:00Z'", e));
  CHECK_FALSE(M("Timestamp eq 5", e));
  CHECK(M("Timestamp ne 5", e));

  CHECK(M("Id eq guid'C9DA6455-213D-42C9-9A79-3E9149A57833'", e));
  CHECK(M("Id gt guid'c9da6455-213d-42c9-9a79-3e9149a57832'", e));
  CHECK(M("Id lt guid'd0000000-0000-0000-0000-000000000000'", e));
  CHECK_FALSE(M("Id eq 'c9da6455-213d-42c9-9a79-3e9149a57833'", e));

  CHECK(M("Data eq X'0102'", e));
  CHECK(M("Data eq binary'0102'", e));
  CHECK(M("Data lt X'010203'", e));
  CHECK(M("Data gt X'01'", e));
  CHECK(M("Data lt X'02'", e));
  CHECK(M("High gt X'7f'", e));  // unsigned bytes
  CHECK(M("Data gt X''", e));
}

TEST_CASE("evaluator: boolean structure") {
  Entity e = Make("p", "r", {{"Flag", Value::Boolean(false)}, {"N", Value::Int32(5)}});
  CHECK(M("true", e));
  CHECK_FALSE(M("false", e));
  CHECK(M("not false", e));
  CHECK_FALSE(M("Flag", e));
  CHECK(M("not Flag", e));
  CHECK(M("Flag eq false", e));
  CHECK(M("(true and RowKey eq 'r') or (false or PartitionKey eq 'x')", e));
  CHECK(M("N gt 1 and N lt 10 and not (N eq 7)", e));
  CHECK(M("N eq 1 or N eq 2 or N eq 5", e));
  CHECK_FALSE(M("N eq 1 or N eq 2 and N eq 5", e));
  CHECK(M("(N eq 1 or N eq 2) or N eq 5", e));
  CHECK(M("not not (N eq 5)", e));
}

TEST_CASE("evaluator: Query Tables filters") {
  auto f = ParseFilter("TableName ge 'log2024' and TableName lt 'log2025'");
  REQUIRE(f.ok());
  CHECK(MatchesTable(*f, "log2024x"));
  CHECK_FALSE(MatchesTable(*f, "log2025"));
  CHECK_FALSE(MatchesTable(*f, "Log2024"));
  auto g = ParseFilter("PartitionKey eq 'a' or not (Other eq 1)");
  REQUIRE(g.ok());
  CHECK(MatchesTable(*g, "t"));  // PartitionKey is missing for tables
  auto h = ParseFilter("PartitionKey ne 'a'");
  REQUIRE(h.ok());
  CHECK_FALSE(MatchesTable(*h, "t"));
}

}  // namespace
}  // namespace cerulean::odata
