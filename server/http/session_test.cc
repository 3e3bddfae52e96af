// Tests of the connection registry behind --maxConnections (without
// sockets: connections here only record their eviction).
#include "server/http/session.h"

#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <thread>

namespace cerulean::server {

namespace {

class FakeConnection : public Connection, public std::enable_shared_from_this<FakeConnection> {
 public:
  void Wait(bool waiting) { SetWaiting(waiting); }
  bool evicted_now() const { return evicted(); }
  int evictions = 0;

 private:
  std::shared_ptr<Connection> Share() override { return weak_from_this().lock(); }
  void Evict() override { ++evictions; }
};

// Lets the coarse clock (a few ms per tick) move on.
void Tick() { std::this_thread::sleep_for(std::chrono::milliseconds(30)); }

}  // namespace

TEST_CASE("connections are counted while they exist") {
  size_t before = Connection::Count();
  {
    auto a = std::make_shared<FakeConnection>();
    auto b = std::make_shared<FakeConnection>();
    CHECK(Connection::Count() == before + 2);
    a.reset();
    CHECK(Connection::Count() == before + 1);
  }
  CHECK(Connection::Count() == before);
}

TEST_CASE("eviction picks the connection that has waited longest, never a busy one") {
  auto busy = std::make_shared<FakeConnection>();
  auto old_waiter = std::make_shared<FakeConnection>();
  auto new_waiter = std::make_shared<FakeConnection>();
  CHECK_FALSE(Connection::EvictLongestWaiting());  // nobody waits
  old_waiter->Wait(true);
  Tick();
  new_waiter->Wait(true);
  CHECK(Connection::EvictLongestWaiting());
  CHECK(old_waiter->evictions == 1);
  CHECK(old_waiter->evicted_now());
  CHECK(new_waiter->evictions == 0);
  // The evicted one is not picked twice; then nobody is left.
  CHECK(Connection::EvictLongestWaiting());
  CHECK(new_waiter->evictions == 1);
  CHECK_FALSE(Connection::EvictLongestWaiting());
  CHECK(busy->evictions == 0);
  // A connection that started answering a request since is no longer marked.
  new_waiter->Wait(false);
  CHECK_FALSE(new_waiter->evicted_now());
}

}  // namespace cerulean::server
