#include "server/formats/base64.h"

#include <doctest/doctest.h>

#include <random>
#include <string>

namespace cerulean::server {

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
  // Bits past the last whole byte are dropped, whatever they are.
  CHECK(Base64Decode("TR==") == "M");
  CHECK(Base64Decode("TR") == "M");
  CHECK(Base64Decode("TWF=") == "Ma");
  CHECK(Base64Decode("TWF") == "Ma");
  CHECK(Base64Decode("////") == "\xff\xff\xff");
  CHECK(Base64Decode("+/+/") == "\xfb\xff\xbf");
}

}  // namespace cerulean::server
