#include "server/formats/url.h"

#include <doctest/doctest.h>

#include <boost/url/parse.hpp>
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

  // Differential: random strings over an alphabet rich in escapes, of up
  // to three eight-byte words (the decoder looks for escapes a word at a
  // time).
  const char alphabet[] = {'%', '%', '2', '0', 'f', 'F', 'g', '+', 'a', ' ', '\xc3', '\xa9'};
  std::mt19937 rng(11);
  for (int i = 0; i < 40000; ++i) {
    std::string s;
    for (int n = static_cast<int>(rng() % 25); n > 0; --n) s += alphabet[rng() % sizeof alphabet];
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

TEST_CASE("SplitPlainOriginForm agrees with Boost.URL on every target it accepts") {
  // Targets drawn from pieces that matter to either parser: delimiters,
  // escapes (valid and not), characters RFC 3986 does not allow unescaped.
  const std::vector<std::string> pieces = {"/",        "/",          "a",
                                           "Tables",   "(",          ")",
                                           "'",        "?",          "?",
                                           "&",        "&",          "=",
                                           "=",        "%27",        "%2B",
                                           "%2b",      "%",          "%4",
                                           "%zz",      "+",          " ",
                                           "#",        "[",          "]",
                                           "\"",       "{",          "|",
                                           "^",        "~",          "@",
                                           ":",        ";",          ",",
                                           "!",        "$",          "*",
                                           "\xc3\xa9", "sig=abc%3D", "se=2026-01-01T00%3A00%3A00Z"};
  std::mt19937 rng(11);
  int accepted = 0;
  for (int round = 0; round < 50000; ++round) {
    std::string target = rng() % 8 == 0 ? "" : "/";
    int n = static_cast<int>(rng() % 12);
    for (int k = 0; k < n; ++k) target += pieces[rng() % pieces.size()];
    std::string_view path;
    std::vector<std::pair<std::string_view, std::string_view>> params;
    if (!SplitPlainOriginForm(target, &path, &params)) continue;
    ++accepted;
    auto url = boost::urls::parse_origin_form(target);
    REQUIRE_MESSAGE(url.has_value(), target);
    CHECK(std::string_view(url->encoded_path().data(), url->encoded_path().size()) == path);
    std::vector<std::pair<std::string, std::string>> theirs, ours;
    if (url->has_query()) {
      for (auto p : url->encoded_params()) {
        theirs.emplace_back(std::string(p.key.data(), p.key.size()),
                            std::string(p.value.data(), p.value.size()));
      }
    }
    for (const auto& [k, v] : params) ours.emplace_back(std::string(k), std::string(v));
    CHECK_MESSAGE(ours == theirs, target);
  }
  // The generator reaches both sides.
  CHECK(accepted > 5000);
  CHECK(accepted < 45000);
}

TEST_CASE("SplitPlainAbsoluteUrl agrees with Boost.URL on every URL it accepts") {
  const std::vector<std::string> schemes = {"http",  "https", "HTTP",  "h2+x-y.z",
                                            "1http", "",      "ht tp", "ht%74p"};
  const std::vector<std::string> authorities = {"127.0.0.1:10002", "acct.table.core.windows.net",
                                                "localhost",       "host:",
                                                "host:12a",        "user@host",
                                                "[::1]:10002",     "",
                                                "h%41st",          "a_b",
                                                "x:1:2",           "h-1.example"};
  const std::vector<std::string> pieces = {"/",
                                           "/",
                                           "devstoreaccount1",
                                           "t",
                                           "(",
                                           ")",
                                           "'",
                                           "%27",
                                           "%2",
                                           "%zz",
                                           "?",
                                           "#",
                                           "=",
                                           "&",
                                           " ",
                                           "[",
                                           "@",
                                           ":",
                                           "$",
                                           "\xc3\xa9",
                                           "%24batch",
                                           "~",
                                           "\\",
                                           "\"",
                                           "PartitionKey="};
  std::mt19937 rng(5);
  int accepted = 0;
  for (int round = 0; round < 50000; ++round) {
    std::string url = schemes[rng() % schemes.size()];
    url += rng() % 10 == 0 ? ":/" : "://";
    url += authorities[rng() % authorities.size()];
    if (rng() % 5 != 0) url += "/";
    int n = static_cast<int>(rng() % 8);
    for (int k = 0; k < n; ++k) url += pieces[rng() % pieces.size()];
    std::string_view scheme, host_port, path;
    if (!SplitPlainAbsoluteUrl(url, &scheme, &host_port, &path)) continue;
    ++accepted;
    auto parsed = boost::urls::parse_absolute_uri(url);
    REQUIRE_MESSAGE(parsed.has_value(), url);
    CHECK_MESSAGE(!parsed->has_userinfo(), url);
    CHECK_MESSAGE(!parsed->has_query(), url);
    CHECK_MESSAGE(!parsed->has_fragment(), url);
    CHECK_MESSAGE(std::string_view(parsed->scheme().data(), parsed->scheme().size()) == scheme,
                  url);
    CHECK_MESSAGE(std::string_view(parsed->encoded_host_and_port().data(),
                                   parsed->encoded_host_and_port().size()) == host_port,
                  url);
    CHECK_MESSAGE(
        std::string_view(parsed->encoded_path().data(), parsed->encoded_path().size()) == path,
        url);
  }
  // The generator reaches both sides.
  CHECK(accepted > 1000);
  CHECK(accepted < 45000);
}

}  // namespace cerulean::server
