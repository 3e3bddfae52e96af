// Tests of the small text helpers that run on every request.
#include "server/formats/text.h"

#include <doctest/doctest.h>

#include <boost/url/parse.hpp>
#include <boost/url/pct_string_view.hpp>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
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

TEST_CASE("AppendJsonString writes every string so that a JSON parser reads it back") {
  // Pieces at random offsets, so that each lands at every position of the
  // eight-byte blocks the plain-text scan reads; invalid UTF-8 reads back
  // as U+FFFD.
  struct Piece {
    std::string in, back;
  };
  const std::vector<Piece> pieces = {
      {"a", "a"},
      {"Z", "Z"},
      {" ", " "},
      {"~", "~"},
      {"\x7f", "\x7f"},
      {"\"", "\""},
      {"\\", "\\"},
      {"/", "/"},
      {std::string(1, '\0'), std::string(1, '\0')},
      {"\x01", "\x01"},
      {"\x1f", "\x1f"},
      {"\n", "\n"},
      {"\t", "\t"},
      {"\xc3\xa9", "\xc3\xa9"},
      {"\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"},
      {"\x80", "\xef\xbf\xbd"},
      {"\xff", "\xef\xbf\xbd"},
      {"\xc3", "\xef\xbf\xbd"},
  };
  std::mt19937 rng(7);
  for (int round = 0; round < 20000; ++round) {
    std::string in, back;
    int n = static_cast<int>(rng() % 40);
    bool mostly_plain = rng() % 2 == 0;
    for (int k = 0; k < n; ++k) {
      const Piece& p =
          mostly_plain && rng() % 8 != 0 ? pieces[rng() % 3] : pieces[rng() % pieces.size()];
      // A lone lead byte followed by a continuation byte would form a
      // sequence: keep the invalid pieces apart from what follows.
      if (!in.empty() && static_cast<unsigned char>(in.back()) == 0xc3 &&
          (static_cast<unsigned char>(p.in[0]) & 0xC0) == 0x80)
        continue;
      in += p.in;
      back += p.back;
    }
    std::string out = "prefix";
    AppendJsonString(&out, in);
    REQUIRE(out.compare(0, 6, "prefix") == 0);
    auto parsed = nlohmann::json::parse(out.substr(6), nullptr, false);
    REQUIRE_FALSE(parsed.is_discarded());
    REQUIRE(parsed.is_string());
    CHECK(parsed.get<std::string>() == back);
    // WriteJsonString writes the same within its bound.
    std::string raw(JsonStringBound(in.size()), '\0');
    char* end = WriteJsonString(raw.data(), in);
    REQUIRE(end <= raw.data() + raw.size());
    CHECK(std::string_view(raw.data(), static_cast<size_t>(end - raw.data())) == out.substr(6));
  }
}

TEST_CASE("HasLineBreak and HasControlChar agree with a byte-by-byte check") {
  std::mt19937 rng(4242);
  // Mostly printable text with the occasional byte of interest, at every
  // position and length around the eight-byte words.
  const std::string interesting = std::string("\r\n\t\x7f\x00\x1f\x20\x80\xff\x7e", 10);
  for (int iter = 0; iter < 50000; ++iter) {
    std::string s(rng() % 40, 'a');
    for (char& c : s) {
      c = rng() % 12 == 0 ? interesting[rng() % interesting.size()]
                          : static_cast<char>(0x20 + rng() % 0x5f);
    }
    bool breaks = false, control = false;
    for (unsigned char c : s) {
      breaks |= c == '\r' || c == '\n';
      control |= (c < 0x20 && c != '\t') || c == 0x7f;
    }
    CAPTURE(s);
    REQUIRE(HasLineBreak(s) == breaks);
    REQUIRE(HasControlChar(s) == control);
  }
}

TEST_CASE("Base64Decode reads back Base64Encode and refuses what is not base64") {
  std::mt19937 rng(77);
  for (int iter = 0; iter < 20000; ++iter) {
    std::string bytes(rng() % 70, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    const std::string text = Base64Encode(bytes);
    CAPTURE(text);
    REQUIRE(Base64Decode(text) == bytes);
    // Unpadded input decodes the same.
    std::string bare = text;
    while (!bare.empty() && bare.back() == '=') bare.pop_back();
    REQUIRE(Base64Decode(bare) == bytes);
    if (!bare.empty()) {
      // A character outside the alphabet anywhere, or one quad character too many.
      std::string bad = bare;
      bad[rng() % bad.size()] = "!-_ .\n\0"[rng() % 7];
      REQUIRE(Base64Decode(bad) == std::nullopt);
      if (bare.size() % 4 == 0) REQUIRE(Base64Decode(bare + "A") == std::nullopt);
    }
  }
  CHECK(Base64Decode("") == "");
  CHECK(Base64Decode("TWE=") == "Ma");
  CHECK(Base64Decode("TWE") == "Ma");
  CHECK(Base64Decode("TQ==") == "M");
  CHECK(Base64Decode("TQ=") == std::nullopt);   // padded, but not to a whole quad
  CHECK(Base64Decode("T===") == std::nullopt);  // three padding characters
  CHECK(Base64Decode("TWE=TWE=") == std::nullopt);
  CHECK(Base64Decode("TW=E") == std::nullopt);
}

TEST_CASE("HttpDateNow is an RFC 1123 date that ParseHttpDate reads back") {
  std::string now = HttpDateNow();
  CHECK(now.size() == 29);
  CHECK(now.ends_with(" GMT"));
  CHECK(ParseHttpDate(now).has_value());
  CHECK(HttpDateNow().size() == 29);  // cached within the second
}

TEST_CASE("NewRequestId is a lowercase GUID, different every time") {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string id = NewRequestId();
    CAPTURE(id);
    REQUIRE(id.size() == 36);
    for (size_t k = 0; k < id.size(); ++k) {
      if (k == 8 || k == 13 || k == 18 || k == 23) {
        CHECK(id[k] == '-');
      } else {
        CHECK(((id[k] >= '0' && id[k] <= '9') || (id[k] >= 'a' && id[k] <= 'f')));
      }
    }
    seen.insert(id);
  }
  CHECK(seen.size() == 1000);
}

}  // namespace cerulean::server
