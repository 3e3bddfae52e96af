// Tests of ParseQueryOptions: limits, and work linear in the query's size.
#include "server/protocol/query_options.h"

#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

namespace cerulean::server {

namespace {

// Parses the options of a request whose query holds `params` (decoded).
std::optional<ErrorReply> ParseOptions(
    const std::vector<std::pair<std::string, std::string>>& params, QueryOptions* out,
    bool loose = false) {
  HttpRequest http;
  Request req(http);
  for (const auto& [k, v] : params) REQUIRE(req.query.AddEncoded(k, v));
  ServerContext ctx;
  ctx.options.loose = loose;
  return ParseQueryOptions(ctx, req, out);
}

QueryOptions* Fresh(QueryOptions* o) {
  *o = QueryOptions();
  return o;
}

}  // namespace

TEST_CASE("$select: de-duplicated, at most 255 distinct names, linear in its length") {
  QueryOptions o;
  REQUIRE_FALSE(ParseOptions({{"$select", "A,B, A,RowKey,B"}}, &o));
  REQUIRE(o.select);
  CHECK(*o.select == std::vector<std::string>{"A", "B", "RowKey"});

  REQUIRE_FALSE(ParseOptions({{"$select", "*,A"}}, Fresh(&o)));
  CHECK_FALSE(o.select);

  std::string names;
  for (size_t i = 0; i < kMaxSelectNames; ++i) names += "P" + std::to_string(i) + ",";
  REQUIRE_FALSE(ParseOptions({{"$select", names + "P0"}}, Fresh(&o)));
  CHECK(o.select->size() == kMaxSelectNames);
  auto err = ParseOptions({{"$select", names + "Extra"}}, Fresh(&o));
  REQUIRE(err);
  CHECK(err->error == AzureError::kInvalidInput);
  CHECK(ParseOptions({{"$select", "A,,B"}}, Fresh(&o)));

  // 200,000 distinct names (an O(n^2) check would take minutes) and as many
  // repeats of one name: both answered at once.
  std::string many;
  for (int i = 0; i < 200000; ++i) many += "N" + std::to_string(i) + ",";
  many += "Z";
  CHECK(ParseOptions({{"$select", many}}, Fresh(&o)));
  std::string repeats = "A";
  for (int i = 0; i < 200000; ++i) repeats += ",A";
  REQUIRE_FALSE(ParseOptions({{"$select", repeats}}, Fresh(&o)));
  CHECK(o.select->size() == 1);
}

TEST_CASE("$select= and $top=0 as Azure Storage Explorer sends them") {
  QueryOptions o;
  REQUIRE_FALSE(
      ParseOptions({{"$select", ""}, {"$filter", "PartitionKey eq '0'"}, {"$top", "0"}}, &o));
  CHECK_FALSE(o.select);  // every property
  CHECK(o.has_top);
  CHECK(o.top == 0);
  REQUIRE_FALSE(ParseOptions({{"$select", " "}}, Fresh(&o)));
  CHECK_FALSE(o.select);
  for (const char* top : {"-1", "1001", "", "1x"}) {
    CAPTURE(top);
    auto err = ParseOptions({{"$top", top}}, Fresh(&o));
    REQUIRE(err);
    CHECK(err->error == AzureError::kInvalidInput);
  }
}

TEST_CASE("repeated query options: one pass over the parameters") {
  QueryOptions o;
  CHECK(ParseOptions({{"$top", "1"}, {"$top", "2"}}, &o));
  CHECK(ParseOptions({{"$filter", "A eq 1"}, {"x", "y"}, {"$filter", "A eq 1"}}, Fresh(&o)));
  CHECK(ParseOptions({{"$select", "A"}, {"$select", "A"}}, Fresh(&o)));
  REQUIRE_FALSE(ParseOptions(
      {{"$top", "7"}, {"$select", "A"}, {"$filter", "A eq 1"}, {"$format", "json"}}, Fresh(&o)));
  CHECK(o.top == 7);
  CHECK(o.filter);
  CHECK(ParseOptions({{"$orderby", "A"}}, Fresh(&o)));
  CHECK_FALSE(ParseOptions({{"$orderby", "A"}}, Fresh(&o), /*loose=*/true));

  // 100,000 parameters, most of them the same unknown one (a count per
  // parameter would be quadratic).
  std::vector<std::pair<std::string, std::string>> params(100000, {"x", "1"});
  params.emplace_back("$top", "5");
  REQUIRE_FALSE(ParseOptions(params, Fresh(&o)));
  CHECK(o.top == 5);
  params.emplace_back("$top", "6");
  CHECK(ParseOptions(params, Fresh(&o)));
}

TEST_CASE("continuation tokens: round trip and malformed tokens") {
  const std::string key = std::string("pk\0'\xff", 5);
  CHECK(DecodeContinuation(EncodeContinuation(key)) == key);
  CHECK_FALSE(DecodeContinuation("1!99999999999999999999999!x"));
  CHECK_FALSE(DecodeContinuation("1!4!cGs"));
  CHECK_FALSE(DecodeContinuation("2!4!cGs-"));
  CHECK_FALSE(DecodeContinuation("1!-4!cGs-"));
  CHECK_FALSE(DecodeContinuation(""));
}

}  // namespace cerulean::server
