// Parser tests: table-driven input -> S-expression, and input -> error.
#include "odata/parser.h"

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "odata/lexer.h"
#include "odata/query.h"

namespace cerulean::odata {
namespace {

std::string Sexpr(std::string_view text) {
  auto f = ParseFilter(text);
  if (!f.ok()) return "ERROR: " + f.status().message();
  return f->ToString();
}

struct Case {
  const char* input;
  const char* expected;
};

TEST_CASE("parser: filters to S-expressions") {
  const Case cases[] = {
      // Comparisons and every operator.
      {"PartitionKey eq 'a'", "(eq PartitionKey 'a')"},
      {"A ne 1", "(ne A 1)"},
      {"A gt 1", "(gt A 1)"},
      {"A ge 1", "(ge A 1)"},
      {"A lt 1", "(lt A 1)"},
      {"A le 1", "(le A 1)"},
      // Precedence: comparison > not > and > or; left-associative chains.
      {"A eq 1 or B eq 2 and C eq 3", "(or (eq A 1) (and (eq B 2) (eq C 3)))"},
      {"A eq 1 and B eq 2 or C eq 3", "(or (and (eq A 1) (eq B 2)) (eq C 3))"},
      {"(A eq 1 or B eq 2) and C eq 3", "(and (or (eq A 1) (eq B 2)) (eq C 3))"},
      {"A eq 1 and B eq 2 and C eq 3", "(and (eq A 1) (eq B 2) (eq C 3))"},
      {"A eq 1 or B eq 2 or C eq 3", "(or (eq A 1) (eq B 2) (eq C 3))"},
      {"not A eq 1", "(not (eq A 1))"},
      {"not (A eq 1) and B eq 2", "(and (not (eq A 1)) (eq B 2))"},
      {"not not A", "(not (not A))"},
      {"not(A eq 1)", "(not (eq A 1))"},
      {"((A eq 1))", "(eq A 1)"},
      // LINQ / WCF forms and tight parentheses.
      {"(PartitionKey eq 'M') and (RowKey ge 'METABOLIS')",
       "(and (eq PartitionKey 'M') (ge RowKey 'METABOLIS'))"},
      {"(PartitionKey eq 'a')and(RowKey eq 'b')", "(and (eq PartitionKey 'a') (eq RowKey 'b'))"},
      {"PartitionKey eq'a'", "(eq PartitionKey 'a')"},
      {"'a'eq PartitionKey", "(eq PartitionKey 'a')"},
      {"A eq 'x'and B eq 'y'", "(and (eq A 'x') (eq B 'y'))"},
      // Whitespace variants.
      {"  A\teq\r\n1  ", "(eq A 1)"},
      {"A  eq   1", "(eq A 1)"},
      // Literal on the left flips the operator.
      {"'abc' eq PartitionKey", "(eq PartitionKey 'abc')"},
      {"5 lt Age", "(gt Age 5)"},
      {"5 ge Age", "(le Age 5)"},
      {"5 ne Age", "(ne Age 5)"},
      // Bool terms and constants.
      {"IsActive", "IsActive"},
      {"not IsActive", "(not IsActive)"},
      {"true", "true"},
      {"false or IsActive", "(or false IsActive)"},
      {"(true and RowKey eq 'settings') or (false or PartitionKey eq 'x')",
       "(or (and true (eq RowKey 'settings')) false (eq PartitionKey 'x'))"},
      {"Flag eq true", "(eq Flag true)"},
      {"false ne Flag", "(ne Flag false)"},
      // Boolean constants in any letter case (Azure Storage Explorer writes `True`).
      {"Flag eq True", "(eq Flag true)"},
      {"Flag eq TRUE", "(eq Flag true)"},
      {"Flag ne False", "(ne Flag false)"},
      {"FALSE or Flag eq fAlSe", "(or false (eq Flag false))"},
      {"not TRUE", "(not true)"},
      // Literals of every type.
      {"A eq 'it''s'", "(eq A 'it''s')"},
      {"A eq ''", "(eq A '')"},
      {"A eq ''''", "(eq A '''')"},
      {"A eq 'caf\xc3\xa9 \xf0\x9f\x98\x80'", "(eq A 'caf\xc3\xa9 \xf0\x9f\x98\x80')"},
      {"A eq 42", "(eq A 42)"},
      {"A eq -5", "(eq A -5)"},
      {"A eq 0", "(eq A 0)"},
      {"A eq 007", "(eq A 7)"},
      {"A eq 2147483647", "(eq A 2147483647)"},
      {"A eq -2147483648", "(eq A -2147483648)"},
      {"A eq 42L", "(eq A 42L)"},
      {"A eq 42l", "(eq A 42L)"},
      {"A eq 9223372036854775807L", "(eq A 9223372036854775807L)"},
      {"A eq -9223372036854775808L", "(eq A -9223372036854775808L)"},
      {"A eq 2147483648L", "(eq A 2147483648L)"},
      {"A eq 1.5", "(eq A 1.5)"},
      {"A eq 3.0", "(eq A 3.0)"},
      {"A eq -2.5", "(eq A -2.5)"},
      {"A eq 1e3", "(eq A 1000.0)"},
      {"A eq 1E+20", "(eq A 1E+20)"},
      {"A eq 1e+20", "(eq A 1E+20)"},
      {"A eq 1e-7", "(eq A 1E-07)"},
      {"A eq 2.5d", "(eq A 2.5)"},
      {"A eq 2D", "(eq A 2.0)"},
      {"A eq 1e-400", "(eq A 0.0)"},
      {"A eq -1e-400", "(eq A -0.0)"},
      {"A eq datetime'2020-01-01T00:00:00Z'", "(eq A datetime'2020-01-01T00:00:00Z')"},
      {"A eq datetime'2024-01-01T00:00:00.1234567Z'",
       "(eq A datetime'2024-01-01T00:00:00.1234567Z')"},
      {"A eq datetime'2024-01-01T00:00:00.123Z'", "(eq A datetime'2024-01-01T00:00:00.123Z')"},
      {"A eq datetime'2024-01-01T00:00:00.000000Z'", "(eq A datetime'2024-01-01T00:00:00Z')"},
      {"A eq datetime'2024-01-01T00:00:00'", "(eq A datetime'2024-01-01T00:00:00Z')"},
      {"A eq datetime'2024-01-01T02:00:00+02:00'", "(eq A datetime'2024-01-01T00:00:00Z')"},
      {"A eq datetimeoffset'2024-01-01T00:00:00Z'", "(eq A datetime'2024-01-01T00:00:00Z')"},
      {"A eq guid'C9DA6455-213D-42C9-9A79-3E9149A57833'",
       "(eq A guid'c9da6455-213d-42c9-9a79-3e9149a57833')"},
      {"A eq X'0A1b'", "(eq A X'0a1b')"},
      {"A eq x'0a1b'", "(eq A X'0a1b')"},
      {"A eq binary'ff00'", "(eq A X'ff00')"},
      {"A eq X''", "(eq A X'')"},
      // Property names: underscores, digits, non-ASCII, keyword prefixes.
      {"_a1 eq 1", "(eq _a1 1)"},
      {"Pr\xc3\xa9is eq 1", "(eq Pr\xc3\xa9is 1)"},
      {"andy eq 1", "(eq andy 1)"},
      {"notes", "notes"},
      {"X eq 1", "(eq X 1)"},
      {"TRUE", "true"},  // a Boolean constant in any case, not a property
      {"Timestamp gt datetime'2024-01-01T00:00:00.0000001Z'",
       "(gt Timestamp datetime'2024-01-01T00:00:00.0000001Z')"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.input);
    CHECK(Sexpr(c.input) == c.expected);
  }
}

TEST_CASE("parser: errors carry a position") {
  const Case cases[] = {
      {"", "expected property or literal at 0"},
      {"   ", "expected property or literal at 3"},
      {"(A eq 1", "expected ')' at 7"},
      {"A eq 1)", "expected 'and', 'or' or end of filter at 6"},
      {"(PartitionKey eq 'M') and (RowKey ge 'METABOLIS'", "expected ')' at 48"},
      {"A eq", "expected property or literal at 4"},
      {"A eq 'abc", "unterminated string literal at 5"},
      {"A eq null", "null literal is not supported at 5"},
      {"A eq B", "cannot compare property 'A' with a property at 2"},
      {"1 eq 1", "comparison needs a property at 2"},
      {"A eq 2147483648", "Unrecognized 'Edm.Int32' literal '2147483648' at 5"},
      {"A eq -2147483649", "Unrecognized 'Edm.Int32' literal '-2147483649' at 5"},
      {"A eq 9223372036854775808L", "Unrecognized 'Edm.Int64' literal '9223372036854775808' at 5"},
      {"A eq 1e400", "Unrecognized 'Edm.Double' literal '1e400' at 5"},
      {"A eq .5", "unexpected character '.' at 5"},
      {"A eq 5.", "invalid number literal at 5"},
      {"A eq 1.5L", "invalid number literal at 5"},
      {"A eq 1e", "invalid number literal at 5"},
      {"A eq 5and B", "invalid number literal at 5"},
      {"A eq 5m", "invalid number literal at 5"},
      {"A eq --5", "invalid number literal at 5"},
      {"A eq +5", "unexpected character '+' at 5"},
      {"A eq datetime'2024-13-01T00:00:00Z'",
       "Unrecognized 'Edm.DateTime' literal '2024-13-01T00:00:00Z' at 5"},
      {"A eq datetime'2024-01-01T00:00:00.12345678Z'",
       "Unrecognized 'Edm.DateTime' literal '2024-01-01T00:00:00.12345678Z' at 5"},
      {"A eq guid'xyz'", "Unrecognized 'Edm.Guid' literal 'xyz' at 5"},
      {"A eq X'0a1'", "Unrecognized 'Edm.Binary' literal at 5"},
      {"A eq X'zz'", "Unrecognized 'Edm.Binary' literal at 5"},
      {"A eq DateTime'2024-01-01T00:00:00Z'", "cannot compare property 'A' with a property at 2"},
      {"DateTime'2024-01-01T00:00:00Z' eq A", "expected 'and', 'or' or end of filter at 8"},
      {"A EQ 1", "expected 'and', 'or' or end of filter at 2"},
      {"A eq 1 AND B eq 2", "expected 'and', 'or' or end of filter at 7"},
      {"A eq 1 eq 2", "expected 'and', 'or' or end of filter at 7"},
      {"A eq NULL", "cannot compare property 'A' with a property at 2"},
      {"startswith(RowKey,'a')", "function 'startswith' is not supported at 0"},
      {"Age add 1 gt 5", "expected 'and', 'or' or end of filter at 4"},
      {"not", "expected property or literal at 3"},
      {"A eq 1 and", "expected property or literal at 10"},
      {"and eq 1", "expected property or literal at 0"},
      {"'a'", "expected comparison operator at 3"},
      {"42", "expected comparison operator at 2"},
      {"A eq 1 # x", "unexpected character '#' at 7"},
      {"A eq 1 \x01", "unexpected byte 0x01 at 7"},
      {"()", "expected property or literal at 1"},
      {"A eq (1)", "expected property or literal at 5"},
      {"A eq 'a' eq B", "expected 'and', 'or' or end of filter at 9"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.input);
    auto f = ParseFilter(c.input);
    REQUIRE_FALSE(f.ok());
    CHECK(f.status().code() == storage::StatusCode::kInvalidArgument);
    CHECK(f.status().message() == c.expected);
  }
}

// A predicate must be able to be a Boolean: the keys and Timestamp (and
// TableName in Query Tables) never are, wherever they stand as a term.
TEST_CASE("parser: a property of a known non-Boolean type is no predicate") {
  const Case entity_cases[] = {
      {"not PartitionKey", "ERROR: 'PartitionKey' is Edm.String, not a Boolean at 4"},
      {"PartitionKey", "ERROR: 'PartitionKey' is Edm.String, not a Boolean at 0"},
      {"not RowKey", "ERROR: 'RowKey' is Edm.String, not a Boolean at 4"},
      {"A eq 1 and Timestamp", "ERROR: 'Timestamp' is Edm.DateTime, not a Boolean at 11"},
      {"(RowKey) or A", "ERROR: 'RowKey' is Edm.String, not a Boolean at 1"},
      {"not (not Timestamp)", "ERROR: 'Timestamp' is Edm.DateTime, not a Boolean at 9"},
      // Other properties have no known type: a bare one is a Boolean test.
      {"not TableName", "(not TableName)"},
      {"not Flag", "(not Flag)"},
      {"partitionkey", "partitionkey"},
      // Comparisons of any types stay valid (query.md §3.2): no match.
      {"PartitionKey eq 1", "(eq PartitionKey 1)"},
      {"Timestamp eq 'x'", "(eq Timestamp 'x')"},
      {"RowKey ne true", "(ne RowKey true)"},
      {"Flag eq 'true'", "(eq Flag 'true')"},
  };
  for (const Case& c : entity_cases) {
    CAPTURE(c.input);
    CHECK(Sexpr(c.input) == c.expected);
  }
  auto table = [](std::string_view text) {
    auto f = ParseFilter(text, FilterScope::kTables);
    return f.ok() ? f->ToString() : "ERROR: " + f.status().message();
  };
  CHECK(table("not TableName") == "ERROR: 'TableName' is Edm.String, not a Boolean at 4");
  CHECK(table("TableName eq 'a' or TableName") ==
        "ERROR: 'TableName' is Edm.String, not a Boolean at 20");
  CHECK(table("not PartitionKey") == "(not PartitionKey)");  // refused by Query Tables itself
  CHECK(table("TableName ge 'a'") == "(ge TableName 'a')");
}

TEST_CASE("parser: depth and length limits") {
  // Redundant parentheses add no depth to the tree; kMaxFilterParens may be
  // open at once.
  auto parens = [](size_t n) { return std::string(n, '(') + "A eq 1" + std::string(n, ')'); };
  CHECK(Sexpr(parens(kMaxFilterParens)) == "(eq A 1)");
  CHECK(Sexpr(parens(kMaxFilterParens + 1)) == "ERROR: filter nested too deeply at 1000");
  CHECK(Sexpr(parens(60000)) == "ERROR: filter nested too deeply at 1000");

  // Alternating and/or groups: kMaxFilterDepth levels are fine, one more is not.
  auto alternating = [](int levels) {
    std::string f = "A eq 1";
    for (int i = 1; i < levels; ++i)
      f = "A eq 1 " + std::string(i % 2 ? "and" : "or") + " (" + f + ")";
    return f;
  };
  CHECK(ParseFilter(alternating(kMaxFilterDepth)).ok());
  auto f = ParseFilter(alternating(kMaxFilterDepth + 1));
  REQUIRE_FALSE(f.ok());
  CHECK(f.status().message().starts_with("filter nested too deeply at "));

  // Query builders nest each added condition: ((a and b) and c) and ... is
  // one flat `and`, at any length.
  std::string linq = std::string(900, '(') + "(PartitionKey eq 'p')";
  for (int i = 0; i < 900; ++i) linq += " and (RowKey ne '" + std::to_string(i) + "'))";
  auto l = ParseFilter(linq);
  REQUIRE(l.ok());
  CHECK(l->root().kind() == cerulean::odata::ExprKind::kAnd);
  CHECK(l->root().children().size() == 901);
  CHECK(Sexpr("(A eq 1 or B eq 2) or (C eq 3 or (D eq 4))") ==
        "(or (eq A 1) (eq B 2) (eq C 3) (eq D 4))");
  CHECK(Sexpr("A and ((B and C) and D) and (E or F) and ((G or H) or I)") ==
        "(and A B C D (or E F) (or G H I))");
  CHECK(Sexpr("(A or B) or C and (D or E) or (F and G)") == "(or A B (and C (or D E)) (and F G))");
  // Nested the other way round, and in both directions at once: still
  // flat, and (merging the shorter list into the longer) not quadratic.
  std::string right;
  for (int i = 0; i < 999; ++i) right += "B" + std::to_string(i) + " or (";
  right += "A" + std::string(999, ')');
  auto r = ParseFilter(right);
  REQUIRE(r.ok());
  CHECK(r->root().children().size() == 1000);
  std::string both;
  for (int i = 0; i < 499; ++i) both += "(B and (";
  both += "A";
  for (int i = 0; i < 499; ++i) both += ")) and C";
  auto b = ParseFilter(both);
  REQUIRE(b.ok());
  CHECK(b->root().children().size() == 999);
  CHECK(Sexpr("not (not (A eq 1 and B eq 2) and C eq 3)") ==
        "(not (and (not (and (eq A 1) (eq B 2))) (eq C 3)))");

  std::string deep_nots;
  for (int i = 0; i < 100000; ++i) deep_nots += "not ";
  deep_nots += "A";
  CHECK_FALSE(ParseFilter(deep_nots).ok());
  std::string deep_paren_nots;
  for (int i = 0; i < 500; ++i) deep_paren_nots += "not (";
  CHECK_FALSE(ParseFilter(deep_paren_nots + "A" + std::string(500, ')')).ok());

  std::string nots;
  for (int i = 0; i < 1000; ++i) nots += "not ";
  nots += "A";
  CHECK_FALSE(ParseFilter(nots).ok());

  // A huge unbalanced input fails fast instead of recursing.
  CHECK_FALSE(ParseFilter(std::string(100000, '(')).ok());

  // Long flat chains are fine (one n-ary node, no recursion per term).
  std::string chain = "PartitionKey eq 'p0'";
  for (int i = 1; i < 2000; ++i) chain += " or PartitionKey eq 'p" + std::to_string(i) + "'";
  auto c = ParseFilter(chain);
  REQUIRE(c.ok());
  CHECK(c->root().children().size() == 2000);

  CHECK_FALSE(ParseFilter(std::string(kMaxFilterBytes + 1, ' ')).ok());
}

TEST_CASE("parser: referenced properties") {
  auto f = ParseFilter("TableName eq 'a' or (B gt 1 and not TableName lt 'c') or Flag");
  REQUIRE(f.ok());
  CHECK(ReferencedProperties(*f) == std::vector<std::string>{"B", "Flag", "TableName"});
}

TEST_CASE("lexer: tokens and offsets") {
  auto t = Lex("(A eq 'x''y')and X'0a'");
  REQUIRE(t.ok());
  REQUIRE(t->size() == 8);
  CHECK((*t)[0].kind == TokenKind::kLParen);
  CHECK((*t)[1].text == "A");
  CHECK((*t)[2].text == "eq");
  CHECK((*t)[3].kind == TokenKind::kLiteral);
  CHECK((*t)[3].value.string() == "x'y");
  CHECK((*t)[3].begin == 6);
  CHECK((*t)[3].end == 12);
  CHECK((*t)[4].kind == TokenKind::kRParen);
  CHECK((*t)[5].text == "and");
  CHECK((*t)[6].value.binary() == std::string("\x0a", 1));
  CHECK((*t)[7].kind == TokenKind::kEnd);
  CHECK((*t)[7].begin == 22);
}

TEST_CASE("key path: any keys round-trip through the quoting clients use") {
  // Pieces that look like the path's own syntax, so that both the direct
  // read of quote-free keys and the token walk are exercised.
  const std::string_view pieces[] = {"a",       "'",          "''", ",",       "=",
                                     "RowKey=", "',RowKey='", " ",  "\xc3\xa9"};
  std::mt19937 rng(7);
  auto random_key = [&] {
    std::string k;
    for (int n = static_cast<int>(rng() % 5); n > 0; --n) k += pieces[rng() % std::size(pieces)];
    return k;
  };
  auto quote = [](const std::string& k) {
    std::string q = "'";
    for (char c : k) q += c == '\'' ? std::string("''") : std::string(1, c);
    return q + "'";
  };
  for (int i = 0; i < 2000; ++i) {
    std::string pk = random_key(), rk = random_key();
    std::string path = "PartitionKey=" + quote(pk) + ",RowKey=" + quote(rk);
    CAPTURE(path);
    auto k = ParseKeyPath(path);
    REQUIRE(k.ok());
    CHECK(k->partition_key == pk);
    CHECK(k->row_key == rk);
  }
}

TEST_CASE("key path") {
  auto k = ParseKeyPath("PartitionKey='a',RowKey='b'");
  REQUIRE(k.ok());
  CHECK(k->partition_key == "a");
  CHECK(k->row_key == "b");

  k = ParseKeyPath("PartitionKey='',RowKey=''");
  REQUIRE(k.ok());
  CHECK(k->partition_key.empty());
  CHECK(k->row_key.empty());

  k = ParseKeyPath("PartitionKey='O''Brien',RowKey='a b,c=(d)'");
  REQUIRE(k.ok());
  CHECK(k->partition_key == "O'Brien");
  CHECK(k->row_key == "a b,c=(d)");

  k = ParseKeyPath("PartitionKey='\xf0\x9f\x98\x80',RowKey='''x'''");
  REQUIRE(k.ok());
  CHECK(k->partition_key == "\xf0\x9f\x98\x80");
  CHECK(k->row_key == "'x'");

  const Case bad[] = {
      {"", "expected 'PartitionKey' at 0"},
      {"RowKey='r',PartitionKey='p'", "expected 'PartitionKey' at 0"},
      {" PartitionKey='a',RowKey='b'", "expected 'PartitionKey' at 0"},
      {"PartitionKey = 'a',RowKey='b'", "expected '=' at 12"},
      {"PartitionKey='a', RowKey='b'", "expected 'RowKey' at 17"},
      {"PartitionKey='a',RowKey='b' ", "expected end of key at 27"},
      {"PartitionKey='a',RowKey='b',", "expected end of key at 27"},
      {"PartitionKey=1,RowKey='b'", "expected quoted key at 13"},
      {"PartitionKey='a'", "expected ',' at 16"},
      {"'a'", "expected 'PartitionKey' at 0"},
      {"PartitionKey='a',RowKey='b", "unterminated string literal at 24"},
      {"partitionkey='a',rowkey='b'", "expected 'PartitionKey' at 0"},
  };
  for (const Case& c : bad) {
    CAPTURE(c.input);
    auto r = ParseKeyPath(c.input);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == storage::StatusCode::kInvalidArgument);
    CHECK(r.status().message() == c.expected);
  }
}

}  // namespace
}  // namespace cerulean::odata
