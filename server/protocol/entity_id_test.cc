#include "server/protocol/entity_id.h"

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

}  // namespace cerulean::server
