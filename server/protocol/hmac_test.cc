#include "server/protocol/hmac.h"

#include <doctest/doctest.h>

#include <string>

namespace cerulean::server {

namespace {

std::string Hex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (char c : bytes) {
    out.push_back(kHex[static_cast<unsigned char>(c) >> 4]);
    out.push_back(kHex[static_cast<unsigned char>(c) & 15]);
  }
  return out;
}

}  // namespace

TEST_CASE("HmacSha256 gives the RFC 4231 values, whichever key it signed with before") {
  const std::string key1(20, '\x0b');
  const std::string mac1 = "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7";
  const std::string mac2 = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
  // Alternating keys: the per-thread context is re-keyed each time, and
  // reused when the key repeats.
  for (int i = 0; i < 3; ++i) {
    CHECK(Hex(HmacSha256(key1, "Hi There")) == mac1);
    CHECK(Hex(HmacSha256(key1, "Hi There")) == mac1);
    CHECK(Hex(HmacSha256("Jefe", "what do ya want for nothing?")) == mac2);
  }
  CHECK(HmacSha256("", "").size() == 32);
}

TEST_CASE("SecureEquals is equality") {
  CHECK(SecureEquals("", ""));
  CHECK(SecureEquals("abc", "abc"));
  CHECK_FALSE(SecureEquals("abc", "abd"));
  CHECK_FALSE(SecureEquals("abc", "ab"));
  CHECK_FALSE(SecureEquals("", "a"));
}

}  // namespace cerulean::server
