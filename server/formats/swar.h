// Eight bytes at a time: the word tests the text scanners use (escape.cc,
// ascii.cc, url.cc) to skip runs of ordinary bytes.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <cstring>

namespace cerulean::server::swar {

inline constexpr uint64_t kOnes = 0x0101010101010101ULL;
inline constexpr uint64_t kHigh = 0x8080808080808080ULL;

// The eight bytes at p as one word (any alignment).
inline uint64_t Load(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}

// Nonzero iff some byte of w is zero (exact for the word as a whole).
constexpr uint64_t HasZero(uint64_t w) { return (w - kOnes) & ~w & kHigh; }

// Nonzero iff some byte of w is c.
constexpr uint64_t HasByte(uint64_t w, unsigned char c) { return HasZero(w ^ (kOnes * c)); }

}  // namespace cerulean::server::swar
