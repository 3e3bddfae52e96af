// memcmp, memchr, memcpy and memmove that work eight or sixteen bytes at a
// time, for the C libraries whose own work a byte at a time (musl's memcmp,
// the `rep movs` of its x86-64 memcpy and memmove). storage/platform_string.cc
// defines the C library's names with them in the builds that link such a C
// library statically (CMake option CERULEAN_STRING_FUNCTIONS: the static musl
// servers of scripts/cross.sh); the unit test compares them with the host's C
// library under the names below.
//
// Every load and store stays inside the caller's buffers: the bytes short of
// a whole word at the end are handled by one more word that overlaps the
// previous one, never by reading past the end. Loads and stores go through
// __builtin_memcpy of a fixed size, which compiles to one unaligned move and
// never to a call. The file that defines the C names is compiled with
// -fno-builtin, so that the compiler does not turn these loops back into
// calls of the functions they define.
// Thread-safety: pure functions of their arguments.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace cerulean::storage {

static_assert(std::endian::native == std::endian::little,
              "platform_string.h: the word tricks below assume little-endian loads");

namespace string_detail {

inline std::uint64_t Load64(const unsigned char* p) {
  std::uint64_t v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

inline std::uint32_t Load32(const unsigned char* p) {
  std::uint32_t v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

inline void Store64(unsigned char* p, std::uint64_t v) { __builtin_memcpy(p, &v, sizeof v); }

inline void Store32(unsigned char* p, std::uint32_t v) { __builtin_memcpy(p, &v, sizeof v); }

// Sixteen bytes, moved as one unit (one SSE or NEON register where there is one).
struct Block16 {
  std::uint64_t lo, hi;
};

inline Block16 Load128(const unsigned char* p) {
  Block16 v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

inline void Store128(unsigned char* p, const Block16& v) { __builtin_memcpy(p, &v, sizeof v); }

// The memcmp order of two different words loaded from memory: the first
// byte in memory is the most significant once byte-swapped.
inline int OrderOfWords(std::uint64_t l, std::uint64_t r) {
  return __builtin_bswap64(l) < __builtin_bswap64(r) ? -1 : 1;
}

constexpr std::uint64_t kOnes = 0x0101010101010101u;
constexpr std::uint64_t kHighs = 0x8080808080808080u;

// Nonzero iff word `v` has a zero byte; its lowest set bit is in the first
// zero byte in memory (a borrow can only mark bytes after a zero one).
inline std::uint64_t ZeroBytes(std::uint64_t v) { return (v - kOnes) & ~v & kHighs; }

// Copies n > 32 bytes forward, 32 at a time; the last 32 bytes are read
// before anything is written, so it also moves overlapping ranges with
// dst < src.
inline void CopyForward(unsigned char* d, const unsigned char* s, std::size_t n) {
  const Block16 tail0 = Load128(s + n - 32);
  const Block16 tail1 = Load128(s + n - 16);
  for (std::size_t i = 0; i < n - 32; i += 32) {
    const Block16 a = Load128(s + i);
    const Block16 b = Load128(s + i + 16);
    Store128(d + i, a);
    Store128(d + i + 16, b);
  }
  Store128(d + n - 32, tail0);
  Store128(d + n - 16, tail1);
}

// Copies n > 32 bytes backward, 32 at a time, for overlapping ranges with
// dst > src; the first 32 bytes are read before anything is written.
inline void CopyBackward(unsigned char* d, const unsigned char* s, std::size_t n) {
  const Block16 head0 = Load128(s);
  const Block16 head1 = Load128(s + 16);
  for (std::size_t i = n; i > 32; i -= 32) {
    const Block16 a = Load128(s + i - 32);
    const Block16 b = Load128(s + i - 16);
    Store128(d + i - 32, a);
    Store128(d + i - 16, b);
  }
  Store128(d, head0);
  Store128(d + 16, head1);
}

// Copies n <= 32 bytes, reading all of them before writing any, so that the
// ranges may overlap.
inline void CopySmall(unsigned char* d, const unsigned char* s, std::size_t n) {
  if (n >= 16) {
    const Block16 a = Load128(s);
    const Block16 b = Load128(s + n - 16);
    Store128(d, a);
    Store128(d + n - 16, b);
  } else if (n >= 8) {
    const std::uint64_t a = Load64(s);
    const std::uint64_t b = Load64(s + n - 8);
    Store64(d, a);
    Store64(d + n - 8, b);
  } else if (n >= 4) {
    const std::uint32_t a = Load32(s);
    const std::uint32_t b = Load32(s + n - 4);
    Store32(d, a);
    Store32(d + n - 4, b);
  } else if (n > 0) {
    // 1 to 3 bytes: the first, the middle and the last (some the same byte).
    const unsigned char a = s[0], b = s[n / 2], c = s[n - 1];
    d[0] = a;
    d[n / 2] = b;
    d[n - 1] = c;
  }
}

}  // namespace string_detail

// memcmp: <0, 0 or >0 as the first differing byte (as unsigned char) of
// `a` is less than, absent from or greater than that of `b`, over n bytes.
inline int CompareBytes(const void* a, const void* b, std::size_t n) {
  using namespace string_detail;
  const auto* l = static_cast<const unsigned char*>(a);
  const auto* r = static_cast<const unsigned char*>(b);
  if (n >= 8) {
    // Whole words, two at a time, then the last word (overlapping bytes
    // already found equal).
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
      const std::uint64_t l0 = Load64(l + i), r0 = Load64(r + i);
      const std::uint64_t l1 = Load64(l + i + 8), r1 = Load64(r + i + 8);
      if (((l0 ^ r0) | (l1 ^ r1)) != 0)
        return l0 != r0 ? OrderOfWords(l0, r0) : OrderOfWords(l1, r1);
    }
    if (i + 8 < n) {
      const std::uint64_t l0 = Load64(l + i), r0 = Load64(r + i);
      if (l0 != r0) return OrderOfWords(l0, r0);
    }
    if (i == n) return 0;
    const std::uint64_t lt = Load64(l + n - 8), rt = Load64(r + n - 8);
    return lt == rt ? 0 : OrderOfWords(lt, rt);
  }
  if (n >= 4) {
    // The first and the last four bytes (overlapping for n < 8), as one
    // word in memcmp order.
    const std::uint64_t lw =
        std::uint64_t{__builtin_bswap32(Load32(l))} << 32 | __builtin_bswap32(Load32(l + n - 4));
    const std::uint64_t rw =
        std::uint64_t{__builtin_bswap32(Load32(r))} << 32 | __builtin_bswap32(Load32(r + n - 4));
    return lw == rw ? 0 : (lw < rw ? -1 : 1);
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (l[i] != r[i]) return l[i] < r[i] ? -1 : 1;
  }
  return 0;
}

// memchr: the first of the n bytes at `s` equal to (unsigned char)c, or
// nullptr iff there is none.
inline const void* FindByte(const void* s, int c, std::size_t n) {
  using namespace string_detail;
  const auto* p = static_cast<const unsigned char*>(s);
  const auto byte = static_cast<unsigned char>(c);
  if (n >= 8) {
    const std::uint64_t pattern = kOnes * byte;
    std::size_t i = 0;
    for (; i + 8 < n; i += 8) {
      const std::uint64_t hits = ZeroBytes(Load64(p + i) ^ pattern);
      if (hits != 0) return p + i + std::countr_zero(hits) / 8;
    }
    // The last word: its bytes before i hold no match, so none is marked.
    const std::uint64_t hits = ZeroBytes(Load64(p + n - 8) ^ pattern);
    return hits != 0 ? p + n - 8 + std::countr_zero(hits) / 8 : nullptr;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] == byte) return p + i;
  }
  return nullptr;
}

// memcpy: copies n bytes from `src` to `dst`. REQUIRES: the ranges do not
// overlap.
inline void CopyBytes(void* dst, const void* src, std::size_t n) {
  using namespace string_detail;
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  if (n <= 32) {
    CopySmall(d, s, n);
  } else {
    CopyForward(d, s, n);
  }
}

// memmove: copies n bytes from `src` to `dst`, which may overlap.
inline void MoveBytes(void* dst, const void* src, std::size_t n) {
  using namespace string_detail;
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  if (n <= 32) {
    CopySmall(d, s, n);
  } else if (reinterpret_cast<std::uintptr_t>(d) - reinterpret_cast<std::uintptr_t>(s) >= n) {
    // dst before src, or past its end: forward never overwrites a byte yet to be read.
    CopyForward(d, s, n);
  } else {
    CopyBackward(d, s, n);
  }
}

}  // namespace cerulean::storage
