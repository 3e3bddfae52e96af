#include "server/formats/guid.h"

#include <array>
#include <cstdint>
#include <random>

#include "storage/platform.h"

namespace cerulean::server {

std::string NewGuid() {
  thread_local std::mt19937_64 generator = [] {
    const uint64_t a = storage::RandomU64(), b = storage::RandomU64();
    std::seed_seq seed{static_cast<uint32_t>(a), static_cast<uint32_t>(a >> 32),
                       static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32)};
    return std::mt19937_64(seed);
  }();
  uint64_t hi = generator();
  uint64_t lo = generator();
  hi = (hi & ~uint64_t{0xF000}) | uint64_t{0x4000};            // version 4
  lo = (lo & ~(uint64_t{0xC} << 60)) | (uint64_t{0x8} << 60);  // RFC 4122 variant
  // Two hex digits per byte, looked up: composing the text costs more than
  // drawing the random numbers.
  static constexpr std::array<std::array<char, 2>, 256> kHexPairs = [] {
    constexpr char kHex[] = "0123456789abcdef";
    std::array<std::array<char, 2>, 256> t{};
    for (int b = 0; b < 256; ++b) t[b] = {kHex[b >> 4], kHex[b & 15]};
    return t;
  }();
  char out[36];
  char* p = out;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) *p++ = '-';
    const uint64_t word = i < 8 ? hi : lo;
    const auto& pair = kHexPairs[(word >> (56 - 8 * (i % 8))) & 0xFF];
    *p++ = pair[0];
    *p++ = pair[1];
  }
  return std::string(out, sizeof out);
}

}  // namespace cerulean::server
