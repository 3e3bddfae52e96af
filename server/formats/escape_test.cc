#include "server/formats/escape.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>

namespace cerulean::server {

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

}  // namespace cerulean::server
