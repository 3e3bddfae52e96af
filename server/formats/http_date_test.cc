#include "server/formats/http_date.h"

#include <doctest/doctest.h>

#include <string>

namespace cerulean::server {

TEST_CASE("HttpDateNow is an RFC 1123 date that ParseHttpDate reads back") {
  std::string now(HttpDateNow());
  CHECK(now.size() == 29);
  CHECK(now.ends_with(" GMT"));
  CHECK(ParseHttpDate(now).has_value());
  CHECK(HttpDateNow().size() == 29);  // cached within the second
}

}  // namespace cerulean::server
