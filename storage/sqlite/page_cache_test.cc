#include "storage/sqlite/page_cache.h"

#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <random>
#include <string>

namespace cerulean::storage {
namespace {

constexpr int kPage = 64;

std::string Bytes(char fill) { return std::string(kPage, fill); }

std::string Get(PageCache& cache, int64_t page) {
  std::string out(kPage, '\0');
  uint64_t epoch = 0;
  return cache.Lookup(page, out.data(), &epoch) ? out : std::string();
}

// The epoch a reader missing `page` (not cached) takes.
uint64_t MissEpoch(PageCache& cache, int64_t page) {
  std::string out(kPage, '\0');
  uint64_t epoch = 0;
  REQUIRE_FALSE(cache.Lookup(page, out.data(), &epoch));
  return epoch;
}

void Put(PageCache& cache, int64_t page, char fill) {
  cache.Offer(page, Bytes(fill).data(), MissEpoch(cache, page));
}

TEST_CASE("page cache: a page offered is found, others are not") {
  PageCache cache(kPage, 4);
  CHECK(Get(cache, 3).empty());
  const uint64_t epoch = MissEpoch(cache, 3);  // a second reader missed it too
  Put(cache, 3, 'a');
  CHECK(Get(cache, 3) == Bytes('a'));
  CHECK(Get(cache, 4).empty());
  // A second offer of a cached page changes nothing.
  cache.Offer(3, Bytes('b').data(), epoch);
  CHECK(Get(cache, 3) == Bytes('a'));
  const PageCache::Stats stats = cache.GetStats();
  CHECK(stats.hits == 2);
  CHECK(stats.misses == 4);  // Get(3), the two readers' misses of 3 (MissEpoch, Put), Get(4)
  CHECK(stats.pages == 1);
}

TEST_CASE("page cache: a read that overlapped a write or truncate does not store what it read") {
  PageCache cache(kPage, 4);
  SUBCASE("write") {
    const uint64_t epoch = MissEpoch(cache, 0);  // the reader's pread starts
    cache.DropWritten(0, kPage);                 // a writer changes the page meanwhile
    cache.DropWritten(0, kPage);
    cache.Offer(0, Bytes('o').data(), epoch);  // old bytes, possibly
  }
  SUBCASE("a write that began before the read and ended after it") {
    cache.DropWritten(0, kPage);
    const uint64_t epoch = MissEpoch(cache, 0);
    cache.DropWritten(0, kPage);
    cache.Offer(0, Bytes('o').data(), epoch);
  }
  SUBCASE("truncate") {
    const uint64_t epoch = MissEpoch(cache, 0);
    cache.DropFrom(0);
    cache.DropFrom(0);
    cache.Offer(0, Bytes('o').data(), epoch);
  }
  CHECK(Get(cache, 0).empty());
}

TEST_CASE("page cache: writes drop the pages they touch, truncation the pages past the end") {
  PageCache cache(kPage, 16);
  for (int p = 0; p < 10; ++p) Put(cache, p, static_cast<char>('a' + p));
  // Bytes 70..139 touch pages 1 and 2.
  cache.DropWritten(70, 70);
  cache.DropWritten(70, 70);
  CHECK(Get(cache, 0) == Bytes('a'));
  CHECK(Get(cache, 1).empty());
  CHECK(Get(cache, 2).empty());
  CHECK(Get(cache, 3) == Bytes('d'));
  // A new end inside page 6: it and all after it go.
  cache.DropFrom(6 * kPage + 10);
  cache.DropFrom(6 * kPage + 10);
  CHECK(Get(cache, 5) == Bytes('f'));
  for (int p = 6; p < 10; ++p) CHECK(Get(cache, p).empty());
  CHECK(cache.GetStats().pages == 4);  // 0, 3, 4, 5
}

TEST_CASE("page cache: at capacity, recently used pages outlast the others") {
  PageCache cache(kPage, 4);
  for (int p = 0; p < 4; ++p) Put(cache, p, 'x');
  CHECK(!Get(cache, 0).empty());  // used: survives the next eviction
  Put(cache, 10, 'y');
  CHECK(cache.GetStats().pages == 4);
  CHECK(Get(cache, 0) == Bytes('x'));
  CHECK(Get(cache, 10) == Bytes('y'));
}

TEST_CASE("page cache: random offers, writes and truncations agree with a plain map") {
  // A model of what the cache may hold: whatever it returns must be the
  // latest bytes offered for that page since the page was last dropped.
  for (int64_t capacity : {0, 1, 7, 64}) {
    CAPTURE(capacity);
    PageCache cache(kPage, capacity);
    std::map<int64_t, char> current;  // page -> bytes it holds in the "file"
    std::mt19937 rng(static_cast<unsigned>(capacity) + 1);
    char next = 'a';
    for (int step = 0; step < 20000; ++step) {
      const int64_t page = static_cast<int64_t>(rng() % 200);
      switch (rng() % 8) {
        case 0: {  // the file's page changes
          cache.DropWritten(page * kPage, kPage);
          current[page] = next = static_cast<char>('a' + (next - 'a' + 1) % 26);
          cache.DropWritten(page * kPage, kPage);
          break;
        }
        case 1:
          if (rng() % 50 == 0) {  // the file ends before `page`
            cache.DropFrom(page * kPage);
            current.erase(current.lower_bound(page), current.end());
            cache.DropFrom(page * kPage);
          }
          break;
        default: {  // a read: from the cache, else from the "file"
          std::string got(kPage, '\0');
          uint64_t epoch = 0;
          const bool hit = cache.Lookup(page, got.data(), &epoch);
          const auto it = current.find(page);
          const std::string want = Bytes(it == current.end() ? '0' : it->second);
          if (hit) {
            REQUIRE(got == want);
          } else {
            cache.Offer(page, want.data(), epoch);
          }
        }
      }
      REQUIRE(cache.GetStats().pages <= capacity);
    }
  }
}

}  // namespace
}  // namespace cerulean::storage
