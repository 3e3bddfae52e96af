// Tests of Header and QueryParams.
#include "server/protocol/request.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <string_view>

namespace cerulean::server {

TEST_CASE("Header: the first field of a name, in any case, among few fields or thousands") {
  for (int fields : {3, 31, 32, 33, 2000}) {
    CAPTURE(fields);
    HttpRequest req;
    for (int i = 0; i < fields; ++i) req.insert("X-Field-" + std::to_string(i), std::to_string(i));
    req.insert("X-Ms-Version", "first");
    req.insert("x-ms-version", "second");
    CHECK(Header(req, "x-ms-version") == "first");
    CHECK(Header(req, "X-FIELD-0") == "0");
    CHECK(Header(req, "x-field-" + std::to_string(fields - 1)) == std::to_string(fields - 1));
    CHECK(Header(req, "x-field-none").empty());
    CHECK(Header(req, "x-field").empty());
  }
}

TEST_CASE("QueryParams: decoded views, of the target where nothing needs decoding") {
  const std::string target =
      "sv=2021-12-02&se=2026-01-01T00%3A00%3AZ&sig=ab%2Bc%3D&x=a+b&$top=5&e=";
  QueryParams q;
  q.Reserve(2, 8);  // smaller than the decoded values: further chunks
  size_t start = 0;
  while (start <= target.size()) {
    size_t amp = std::min(target.find('&', start), target.size());
    std::string_view param(target.data() + start, amp - start);
    size_t eq = param.find('=');
    REQUIRE(q.AddEncoded(param.substr(0, eq), param.substr(eq + 1)));
    start = amp + 1;
  }
  // Moved, as a Request may be: the views stay valid.
  QueryParams moved = std::move(q);
  CHECK(moved.Get("sv") == "2021-12-02");
  CHECK(moved.Get("se") == "2026-01-01T00:00:Z");
  CHECK(moved.Get("sig") == "ab+c=");
  CHECK(moved.Get("x") == "a b");
  CHECK(moved.Get("$top") == "5");
  CHECK(moved.Get("e") == "");
  CHECK_FALSE(moved.Get("missing").has_value());
  CHECK(moved.all().size() == 6);
  // Parameters that need no decoding are views of the target itself.
  const char* sv = moved.Get("sv")->data();
  CHECK((sv >= target.data() && sv < target.data() + target.size()));

  CHECK_FALSE(moved.AddEncoded("bad", "%4"));
  CHECK_FALSE(moved.AddEncoded("%zz", "v"));
  CHECK(moved.all().size() == 6);
  REQUIRE(moved.AddEncoded("sv", "dup%20"));
  CHECK(moved.Count("sv") == 2);
  CHECK(moved.Get("sv") == "2021-12-02");  // the first
  CHECK(moved.all().back().second == "dup ");
}

TEST_CASE("QueryParams: a '+' or an escape is decoded wherever it is, other bytes stay views") {
  // Values of 1 to 20 bytes: within, across and after eight-byte words.
  for (size_t size = 1; size <= 20; ++size) {
    for (size_t at = 0; at < size; ++at) {
      std::string plus(size, 'a'), escape(size, 'a');
      plus[at] = '+';
      escape.replace(at, 1, "%41");
      QueryParams q;
      REQUIRE(q.AddEncoded("p", plus));
      REQUIRE(q.AddEncoded("e", escape));
      std::string want_plus(size, 'a'), want_escape(size, 'a');
      want_plus[at] = ' ';
      want_escape[at] = 'A';
      CHECK(q.Get("p") == want_plus);
      CHECK(q.Get("e") == want_escape);
    }
    // Bytes a bit away from '%' (0x25) and '+' (0x2B), and above 0x7F.
    const std::string near = "$*,-e\xA5\xAB)";
    std::string plain;
    while (plain.size() < size) plain += near[plain.size() % near.size()];
    QueryParams q;
    REQUIRE(q.AddEncoded("k", plain));
    CHECK(q.Get("k")->data() == plain.data());
    CHECK(q.Get("k") == plain);
  }
}

}  // namespace cerulean::server
