// Tests of the small text helpers that run on every request.
#include "server/text.h"

#include <doctest/doctest.h>

#include <boost/url/pct_string_view.hpp>
#include <random>
#include <string>

namespace cerulean::server {

TEST_CASE("PercentDecode agrees with Boost.URL on valid and malformed input") {
  CHECK(PercentDecode("a%20b+c") == "a b+c");
  CHECK(PercentDecode("a%20b+c", true) == "a b c");
  CHECK(PercentDecode("%2B%2b%3D") == "++=");
  CHECK(PercentDecode("") == "");
  CHECK_FALSE(PercentDecode("%").has_value());
  CHECK_FALSE(PercentDecode("%2").has_value());
  CHECK_FALSE(PercentDecode("%zz").has_value());
  CHECK_FALSE(PercentDecode("abc%4").has_value());

  // Differential: random strings over an alphabet rich in escapes.
  const char alphabet[] = {'%', '%', '2', '0', 'f', 'F', 'g', '+', 'a', ' ', '\xc3', '\xa9'};
  std::mt19937 rng(11);
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    for (int n = static_cast<int>(rng() % 10); n > 0; --n) s += alphabet[rng() % sizeof alphabet];
    for (bool plus : {false, true}) {
      CAPTURE(s);
      CAPTURE(plus);
      auto pct = boost::urls::make_pct_string_view(s);
      auto ours = PercentDecode(s, plus);
      REQUIRE(ours.has_value() == pct.has_value());
      if (!ours) continue;
      boost::urls::encoding_opts opts;
      opts.space_as_plus = plus;
      CHECK(*ours == pct->decode(opts));
    }
  }
}

TEST_CASE("HttpDateNow is an RFC 1123 date that ParseHttpDate reads back") {
  std::string now = HttpDateNow();
  CHECK(now.size() == 29);
  CHECK(now.ends_with(" GMT"));
  CHECK(ParseHttpDate(now).has_value());
  CHECK(HttpDateNow().size() == 29);  // cached within the second
}

}  // namespace cerulean::server
