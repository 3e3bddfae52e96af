#include "storage/value.h"

#include <doctest/doctest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "storage/key_range.h"

namespace cerulean::storage {
namespace {

int Sign(int x) { return (x > 0) - (x < 0); }

TEST_CASE("value: CompareOrdinal is a total order, also on invalid bytes") {
  const std::vector<std::string> keys = {
      "", "a", "ab", "b", "\xED\x9F\xBF", "\xF0\x90\x80\x80", "\xEE\x80\x80", "\xEF\xBF\xBF",
      // Not UTF-8, but CompareOrdinal must still be consistent on them.
      std::string("\xFE", 1), std::string("\xFF", 1), std::string("\xEE", 1),
      std::string("\x80", 1)};
  for (const auto& a : keys) {
    CHECK(CompareOrdinal(a, a) == 0);
    for (const auto& b : keys) {
      CAPTURE(a);
      CAPTURE(b);
      CHECK(Sign(CompareOrdinal(a, b)) == -Sign(CompareOrdinal(b, a)));
      if (a != b) CHECK(CompareOrdinal(a, b) != 0);
      for (const auto& c : keys) {
        if (CompareOrdinal(a, b) < 0 && CompareOrdinal(b, c) < 0) CHECK(CompareOrdinal(a, c) < 0);
      }
    }
  }
  // The motivating case: a supplementary character (surrogate pair D800..)
  // sorts before U+E000 in UTF-16, after it in UTF-8.
  CHECK(CompareOrdinal("\xF0\x90\x80\x80", "\xEE\x80\x80") < 0);
  CHECK(CompareOrdinal("\xED\x9F\xBF", "\xF0\x90\x80\x80") < 0);
  CHECK(CompareOrdinal("B", "a") < 0);
}

TEST_CASE("value: Utf16Length") {
  CHECK(Utf16Length("") == 0);
  CHECK(Utf16Length("abc") == 3);
  CHECK(Utf16Length("\xC3\xA9") == 1);
  CHECK(Utf16Length("\xEF\xBF\xBD") == 1);
  CHECK(Utf16Length("\xF0\x9F\x98\x80") == 2);
  CHECK(Utf16Length("a\xF0\x9F\x98\x80"
                    "b") == 4);
  // Invalid bytes count one each.
  CHECK(Utf16Length(std::string("\x80\xFF\xF8", 3)) == 3);

  // The eight-bytes-at-a-time ASCII path agrees with counting code points
  // of valid UTF-8 (units: 2 above U+FFFF), wherever the ASCII runs fall.
  const std::string pieces[] = {"a",        "abcdefgh",     "0123456789",
                                "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80"};
  const size_t units[] = {1, 8, 10, 1, 1, 2};
  std::mt19937 rng(3);
  for (int i = 0; i < 5000; ++i) {
    std::string s;
    size_t expected = 0;
    for (int n = static_cast<int>(rng() % 12); n > 0; --n) {
      size_t k = rng() % std::size(pieces);
      s += pieces[k];
      expected += units[k];
    }
    CAPTURE(s);
    CHECK(Utf16Length(s) == expected);
  }
}

TEST_CASE("value: Entity::Find and Value equality") {
  Entity e;
  e.properties = {{"a", Value::Int32(1)}, {"b", Value::String("x")}};
  REQUIRE(e.Find("b") != nullptr);
  CHECK(*e.Find("b") == Value::String("x"));
  CHECK(e.Find("c") == nullptr);
  CHECK_FALSE(Value::Int32(1) == Value::Int64(1));
  CHECK_FALSE(Value::Double(0.0) == Value::Double(-0.0));
  CHECK(EdmTypeName(EdmType::kDateTime) == "Edm.DateTime");
}

TEST_CASE("key_range: Contains and ToString") {
  KeyRange partition{KeyBound{"p", std::nullopt, true}, KeyBound{"p", std::nullopt, true}};
  CHECK(partition.Contains("p", ""));
  CHECK(partition.Contains("p", "\xEF\xBF\xBF"));
  CHECK_FALSE(partition.Contains("pa", ""));
  CHECK_FALSE(partition.Contains("", "p"));
  KeyRange after{KeyBound{"p", std::nullopt, false}, std::nullopt};
  CHECK_FALSE(after.Contains("p", "z"));
  CHECK(after.Contains("q", ""));
  KeyRange composite{KeyBound{"p", "b", false}, KeyBound{"q", "a", true}};
  CHECK_FALSE(composite.Contains("p", "b"));
  CHECK(composite.Contains("p", "c"));
  CHECK(composite.Contains("q", "a"));
  CHECK_FALSE(composite.Contains("q", "b"));
  CHECK(KeyRange::All().Contains("", ""));
  CHECK(composite.ToString() == "('p','b' .. 'q','a']");
  CHECK(KeyRange::All().ToString() == "(-inf .. +inf)");
}

TEST_CASE("key_range: Intersect keeps the keys in both, or gives nullopt") {
  auto text = [](const std::optional<KeyRange>& r) { return r ? r->ToString() : "none"; };
  const KeyRange partition_b{KeyBound{"b", std::nullopt, true}, KeyBound{"b", std::nullopt, true}};
  CHECK(text(Intersect(KeyRange::All(), partition_b)) == "['b' .. 'b']");
  CHECK(text(Intersect(partition_b, KeyRange::All())) == "['b' .. 'b']");
  // A composite bound inside the partition is the tighter one.
  const KeyRange from_b5{KeyBound{"b", "5", true}, std::nullopt};
  CHECK(text(Intersect(partition_b, from_b5)) == "['b','5' .. 'b']");
  const KeyRange to_b5{std::nullopt, KeyBound{"b", "5", false}};
  CHECK(text(Intersect(partition_b, to_b5)) == "['b' .. 'b','5')");
  // Inclusive against exclusive at the same key: the exclusive one.
  const KeyRange after_b5{KeyBound{"b", "5", false}, std::nullopt};
  CHECK(text(Intersect(from_b5, after_b5)) == "('b','5' .. +inf)");
  // Disjoint, touching and empty results.
  const KeyRange partition_c{KeyBound{"c", std::nullopt, true}, KeyBound{"c", std::nullopt, true}};
  CHECK(text(Intersect(partition_b, partition_c)) == "none");
  CHECK(text(Intersect(to_b5, from_b5)) == "none");
  const KeyRange after_b{KeyBound{"b", std::nullopt, false}, std::nullopt};
  CHECK(text(Intersect(partition_b, after_b)) == "none");
  const KeyRange point{KeyBound{"b", "5", true}, KeyBound{"b", "5", true}};
  CHECK(text(Intersect(point, from_b5)) == "['b','5' .. 'b','5']");
  // Every key of a sample lies in the intersection iff it lies in both.
  const std::vector<KeyRange> ranges = {KeyRange::All(), partition_b, from_b5, to_b5,
                                        after_b5,        partition_c, after_b, point};
  const std::vector<std::pair<std::string, std::string>> keys = {
      {"a", "9"}, {"b", ""}, {"b", "4"}, {"b", "5"}, {"b", "6"}, {"ba", ""}, {"c", "0"}};
  for (const KeyRange& x : ranges) {
    for (const KeyRange& y : ranges) {
      auto both = Intersect(x, y);
      for (const auto& key : keys) {
        // doctest's lambdas take no structured binding (clang 14).
        const std::string& pk = key.first;
        const std::string& rk = key.second;
        CAPTURE(x.ToString());
        CAPTURE(y.ToString());
        CAPTURE(pk + "/" + rk);
        CHECK((both && both->Contains(pk, rk)) == (x.Contains(pk, rk) && y.Contains(pk, rk)));
      }
    }
  }
}

}  // namespace
}  // namespace cerulean::storage
