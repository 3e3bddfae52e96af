#include "server/formats/ascii.h"

#include <doctest/doctest.h>

#include <random>
#include <string>

namespace cerulean::server {

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

TEST_CASE("IEquals agrees with a byte-by-byte ASCII case fold") {
  auto fold = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
  auto reference = [&](std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (fold(a[i]) != fold(b[i])) return false;
    }
    return true;
  };
  // Every pair of bytes at a position of a short name, of a whole word, and
  // of the last partial word of a longer one.
  for (size_t size : {5u, 8u, 13u}) {
    for (size_t at : {size_t{0}, size - 1, size / 2}) {
      std::string a(size, 'k'), b(size, 'K');
      for (int x = 0; x < 256; ++x) {
        for (int y = 0; y < 256; ++y) {
          a[at] = static_cast<char>(x);
          b[at] = static_cast<char>(y);
          CAPTURE(size);
          CAPTURE(at);
          CAPTURE(x);
          CAPTURE(y);
          REQUIRE(IEquals(a, b) == reference(a, b));
        }
      }
    }
  }
  CHECK(IEquals("x-ms-client-request-id", "X-MS-Client-Request-ID"));
  CHECK_FALSE(IEquals("x-ms-client-request-id", "X-MS-Client-Request-IE"));
  CHECK_FALSE(IEquals("Content-Type", "Content-Typ"));
  CHECK(IEquals("", ""));
}

}  // namespace cerulean::server
