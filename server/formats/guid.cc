#include "server/formats/guid.h"

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
  static constexpr char kHex[] = "0123456789abcdef";
  // Composed in place (appending 36 characters one by one was ~1k
  // instructions per request).
  char out[36];
  char* p = out;
  for (int i = 0; i < 32; ++i) {
    if (i == 8 || i == 12 || i == 16 || i == 20) *p++ = '-';
    const uint64_t word = i < 16 ? hi : lo;
    *p++ = kHex[(word >> (60 - 4 * (i % 16))) & 0xF];
  }
  return std::string(out, sizeof out);
}

}  // namespace cerulean::server
