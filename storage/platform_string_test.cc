// Tests of the word-at-a-time string functions (platform_string.h) against
// the host's C library: every length up to 80 at every alignment, random
// contents with a few distinct byte values (so that long equal runs and
// differences at every position occur), and random lengths up to 4 KiB.
// The compared and searched ranges end where their allocation ends (plus the
// one byte memchr must not count), so that a sanitizer build catches a read
// past them; copies must leave the bytes around the destination untouched.
#include "storage/platform_string.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

namespace cerulean::storage {
namespace {

constexpr std::size_t kGuard = 64;

int Sign(int v) { return (v > 0) - (v < 0); }

// Bytes from a small alphabet, so that random buffers often agree for long.
unsigned char RandomByte(std::mt19937_64& rng, int alphabet) {
  static constexpr unsigned char kBytes[] = {0x00, 0x01, 0x7F, 0x80, 0xFF, 'a', 'b', 0xFE};
  return kBytes[rng() % static_cast<unsigned>(alphabet)];
}

std::vector<std::size_t> Lengths(std::mt19937_64& rng) {
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n <= 80; ++n) lengths.push_back(n);
  for (int i = 0; i < 200; ++i) lengths.push_back(rng() % 4097);
  return lengths;
}

TEST_CASE("platform: CompareBytes orders as memcmp for every length, alignment and difference") {
  const unsigned seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (std::size_t n : Lengths(rng)) {
    for (std::size_t off_a = 0; off_a < 8; ++off_a) {
      for (std::size_t off_b = 0; off_b < 8; off_b += 3) {
        const int alphabet = 1 + static_cast<int>(rng() % 8);
        std::vector<unsigned char> a(off_a + n), b(off_b + n);
        unsigned char* pa = a.data() + off_a;
        unsigned char* pb = b.data() + off_b;
        for (std::size_t i = 0; i < n; ++i) pa[i] = pb[i] = RandomByte(rng, alphabet);
        // Equal, then one difference at a random position, then random bytes.
        CHECK(CompareBytes(pa, pb, n) == 0);
        if (n > 0) {
          const std::size_t at = rng() % n;
          pb[at] = static_cast<unsigned char>(pa[at] + 1 + rng() % 255);
          INFO("n " << n << " at " << at);
          CHECK(Sign(CompareBytes(pa, pb, n)) == Sign(std::memcmp(pa, pb, n)));
          CHECK(Sign(CompareBytes(pb, pa, n)) == Sign(std::memcmp(pb, pa, n)));
          CHECK(CompareBytes(pa, pb, at) == 0);
          for (std::size_t i = 0; i < n; ++i) pb[i] = RandomByte(rng, alphabet);
          CHECK(Sign(CompareBytes(pa, pb, n)) == Sign(std::memcmp(pa, pb, n)));
        }
      }
    }
  }
}

TEST_CASE("platform: FindByte finds the first match as memchr does") {
  const unsigned seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (std::size_t n : Lengths(rng)) {
    for (std::size_t off = 1; off <= 8; ++off) {
      const int alphabet = 1 + static_cast<int>(rng() % 8);
      std::vector<unsigned char> buf(off + n + 1);
      unsigned char* p = buf.data() + off;
      for (std::size_t i = 0; i < n; ++i) p[i] = RandomByte(rng, alphabet);
      for (int c : {0x00, 0x01, 0x7F, 0x80, 0xFF, int{'a'}, int{'b'}, 0xFE, 0x1FF, -1, int{'z'}}) {
        // The bytes just outside the range hold the value searched for: a
        // read past either end that counted would find it.
        p[-1] = p[n] = static_cast<unsigned char>(c);
        INFO("n " << n << " off " << off << " c " << c);
        CHECK(FindByte(p, c, n) == std::memchr(p, c, n));
      }
    }
  }
}

// Copies n bytes with `copy` into a buffer at dst_at, from src_at of the
// same buffer or of another one that ends where the n bytes end, and checks
// the whole destination buffer against std::memmove's result (and that the
// other buffer is unchanged). The other buffer holds at least one byte: the
// C library's functions take no null pointer, even for 0 bytes.
template <typename Copy>
void CheckCopy(std::mt19937_64& rng, std::size_t n, std::size_t dst_at, std::size_t src_at,
               bool same_buffer, Copy copy) {
  const std::size_t size = kGuard + 4096 + 64 + kGuard;
  std::vector<unsigned char> got(size),
      other(same_buffer ? 0 : std::max<std::size_t>(src_at + n, 1));
  for (auto& byte : got) byte = static_cast<unsigned char>(rng());
  for (auto& byte : other) byte = static_cast<unsigned char>(rng());
  std::vector<unsigned char> want = got;
  const std::vector<unsigned char> other_before = other;
  const unsigned char* src_got = same_buffer ? got.data() + kGuard + src_at : other.data() + src_at;
  const unsigned char* src_want =
      same_buffer ? want.data() + kGuard + src_at : other.data() + src_at;
  copy(got.data() + kGuard + dst_at, src_got, n);
  std::memmove(want.data() + kGuard + dst_at, src_want, n);
  CHECK(got == want);
  CHECK(other == other_before);
}

TEST_CASE("platform: CopyBytes copies as memcpy, MoveBytes moves overlapping ranges") {
  const unsigned seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (std::size_t n : Lengths(rng)) {
    for (std::size_t dst_at = 0; dst_at < 8; ++dst_at) {
      for (std::size_t src_at = 0; src_at < 8; src_at += 3) {
        INFO("n " << n << " dst " << dst_at << " src " << src_at);
        CheckCopy(rng, n, dst_at, src_at, false, CopyBytes);
        CheckCopy(rng, n, dst_at, src_at, false, MoveBytes);
      }
    }
    // Overlapping moves: dst before, at and after src, by up to 40 bytes
    // (within a block, a word and beyond).
    for (std::size_t shift = 0; shift <= 40; ++shift) {
      INFO("n " << n << " shift " << shift);
      CheckCopy(rng, n, 40, 40 + shift, true, MoveBytes);
      CheckCopy(rng, n, 40 + shift, 40, true, MoveBytes);
    }
  }
}

}  // namespace
}  // namespace cerulean::storage
