#include "server/formats/ascii.h"

#include <cstdint>
#include <cstring>

#include "server/formats/swar.h"

namespace cerulean::server {

namespace {

using swar::kHigh;
using swar::kOnes;

// Whether some byte of `s` satisfies `byte`, eight bytes at a time: `word`
// must be nonzero for every 8-byte word holding such a byte (it may be
// nonzero for others too: those words are checked byte by byte).
template <typename WordTest, typename ByteTest>
bool SwarAny(std::string_view s, WordTest word, ByteTest byte) {
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    const uint64_t w = swar::Load(s.data() + i);
    if (word(w) == 0) continue;
    for (size_t j = i; j < i + 8; ++j) {
      if (byte(static_cast<unsigned char>(s[j]))) return true;
    }
  }
  // The last partial word: the string's last eight bytes as one (they
  // overlap bytes already checked), so that only a word that holds a match
  // is checked byte by byte.
  if (i < s.size() && s.size() >= 8) {
    const uint64_t w = swar::Load(s.data() + s.size() - 8);
    if (word(w) == 0) return false;
  }
  for (; i < s.size(); ++i) {
    if (byte(static_cast<unsigned char>(s[i]))) return true;
  }
  return false;
}

}  // namespace

bool HasLineBreak(std::string_view s) {
  return SwarAny(
      s,
      [](uint64_t w) {
        return swar::HasZero(w ^ (kOnes * '\r')) | swar::HasZero(w ^ (kOnes * '\n'));
      },
      [](unsigned char c) { return c == '\r' || c == '\n'; });
}

bool HasControlChar(std::string_view s) {
  return SwarAny(
      s,
      // A byte below 0x20 (tabs included: checked exactly below) or 0x7F.
      [](uint64_t w) {
        return ((w - kOnes * 0x20) & ~w & kHigh) | swar::HasZero(w ^ (kOnes * 0x7F));
      },
      [](unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7F; });
}

namespace {

// `w` with its bytes A-Z lowered, eight at a time: a byte gets 0x20 iff it
// is below 0x80, at least 'A' and not above 'Z' (the sums do not carry
// from one byte into the next: each byte's low seven bits plus 0x3F stay
// below 0x100).
constexpr uint64_t SwarToLower(uint64_t w) {
  const uint64_t low7 = w & ~kHigh;
  const uint64_t at_least_a = low7 + kOnes * (0x80 - 'A');
  const uint64_t above_z = low7 + kOnes * (0x80 - 'Z' - 1);
  const uint64_t upper = at_least_a & ~above_z & ~w & kHigh;
  return w | (upper >> 2);
}

}  // namespace

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  const size_t n = a.size();
  if (n >= 8) {
    // Whole words, then the last eight bytes as one (overlapping bytes
    // compared already).
    auto word = [](std::string_view s, size_t at) {
      uint64_t w;
      std::memcpy(&w, s.data() + at, 8);
      return SwarToLower(w);
    };
    for (size_t i = 0; i + 8 <= n; i += 8) {
      if (word(a, i) != word(b, i)) return false;
    }
    return word(a, n - 8) == word(b, n - 8);
  }
  for (size_t i = 0; i < n; ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x += 32;
    if (y >= 'A' && y <= 'Z') y += 32;
    if (x != y) return false;
  }
  return true;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c += 32;
  }
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace cerulean::server
