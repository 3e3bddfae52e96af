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

}  // namespace cerulean::server
