// Tests of the body budget: what fits is taken at once, the rest waits in
// order and is granted as bytes come back, a body larger than the budget
// still gets through alone, and a waiter can leave.
#include "server/runtime/body_budget.h"

#include <doctest/doctest.h>

#include <vector>

namespace cerulean::server {

TEST_CASE("the body budget: at once if it fits, else in order as bytes come back") {
  BodyBudget budget(100);
  CHECK(budget.TryAcquire(60) == 60);
  CHECK(budget.TryAcquire(50) == 0);
  std::vector<std::pair<int, size_t>> granted;
  auto waiter = [&](int id) {
    return [&granted, id](size_t taken) { granted.emplace_back(id, taken); };
  };
  budget.Enqueue(50, waiter(1));
  budget.Enqueue(10, waiter(2));
  // Nobody jumps the queue, even what would fit.
  CHECK(budget.TryAcquire(10) == 0);
  CHECK(granted.empty());
  budget.Release(60);
  CHECK(granted == std::vector<std::pair<int, size_t>>{{1, 50}, {2, 10}});
  CHECK(budget.in_use() == 60);
  budget.Release(60);
  CHECK(budget.in_use() == 0);
  // Larger than the whole budget: it takes all of it, when nothing else
  // holds any.
  CHECK(budget.TryAcquire(500) == 100);
  budget.Release(100);
}

TEST_CASE("a waiter that leaves is not granted, and lets the next one through") {
  BodyBudget budget(100);
  REQUIRE(budget.TryAcquire(90) == 90);
  std::vector<int> granted;
  const auto big = budget.Enqueue(50, [&](size_t) { granted.push_back(1); });
  budget.Enqueue(10, [&](size_t) { granted.push_back(2); });
  CHECK(budget.Cancel(big));
  CHECK(granted == std::vector<int>{2});
  CHECK_FALSE(budget.Cancel(big));
  CHECK(budget.RenderMetrics().find("cerulean_request_body_bytes 100\n") != std::string::npos);
}

}  // namespace cerulean::server
