#include "server/formats/entity_id.h"

#include <doctest/doctest.h>

#include <string>

#include "storage/edm_text.h"

namespace cerulean::server {

TEST_CASE("ETags") {
  int64_t t = *storage::ParseDateTime("2021-10-15T16:13:24.0914302Z");
  CHECK(ETagFor(t) == "W/\"datetime'2021-10-15T16%3A13%3A24.0914302Z'\"");
  CHECK(ParseETag(ETagFor(t)) == t);
  CHECK_FALSE(ParseETag("W/\"wrong\"").has_value());
  // A lower-case weak prefix names the same ETag.
  std::string lower = ETagFor(t);
  lower[0] = 'w';
  CHECK(ParseETag(lower) == t);
  CHECK_FALSE(ParseETag("x/" + ETagFor(t).substr(2)).has_value());
  CHECK_FALSE(ParseETag("").has_value());
  CHECK_FALSE(ParseETag("W/\"datetime'2021-10-15T16%3A13%3A24.09143020Z'\"").has_value());
  std::string appended = "x";
  AppendETag(&appended, t);
  CHECK(appended == "x" + ETagFor(t));
}

TEST_CASE("entity key paths double the quotes in keys") {
  CHECK(EntityPath("t", "a", "b") == "t(PartitionKey='a',RowKey='b')");
  CHECK(EntityPath("t", "", "") == "t(PartitionKey='',RowKey='')");
  CHECK(EntityPath("Orders", "O'Brien", "''") == "Orders(PartitionKey='O''Brien',RowKey='''''')");
  std::string appended = "base/";
  AppendEntityPath(&appended, "t", "it's", "x");
  CHECK(appended == "base/t(PartitionKey='it''s',RowKey='x')");
}

TEST_CASE("entity key paths percent-encode what Azure encodes") {
  // A recorded Azure response (the JS SDK's special-characters test).
  CHECK(EntityPath("SpecialChars", "A'aaa_bbbb2\"", "\"A'aaa_bbbb2") ==
        "SpecialChars(PartitionKey='A''aaa_bbbb2%22',RowKey='%22A''aaa_bbbb2')");
  CHECK(EntityPath("t", "<a>{b}", "a b%c") ==
        "t(PartitionKey='%3Ca%3E%7Bb%7D',RowKey='a%20b%25c')");
  CHECK(EntityPath("t", "-_.!~*()", "&=+$,;:@[]|^`") ==
        "t(PartitionKey='-_.!~*()',RowKey='%26%3D%2B%24%2C%3B%3A%40%5B%5D%7C%5E%60')");
  CHECK(EntityPath("t", "\xC3\xA9", "\xF0\x9F\x98\x80") ==
        "t(PartitionKey='%C3%A9',RowKey='%F0%9F%98%80')");
}

}  // namespace cerulean::server
