// Tests of the operating-system seam (platform.h).
#include "storage/platform.h"

#include <doctest/doctest.h>

#include <bit>
#include <set>

namespace cerulean::storage {
namespace {

TEST_CASE("platform: UsableCpus counts at least one CPU") { CHECK(UsableCpus() >= 1); }

TEST_CASE("platform: RandomU64 gives distinct, well-mixed values") {
  std::set<uint64_t> seen;
  int ones = 0;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t v = RandomU64();
    seen.insert(v);
    ones += std::popcount(v);
  }
  CHECK(seen.size() == 1000);
  // 64,000 fair bits: 32,000 ones, standard deviation ~126.
  CHECK(ones > 31000);
  CHECK(ones < 33000);
}

}  // namespace
}  // namespace cerulean::storage
