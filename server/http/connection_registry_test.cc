// Tests of the connection registry behind --maxConnections, without
// sockets: connections here only record their eviction.
#include "server/http/connection_registry.h"

#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <thread>

namespace cerulean::server {

namespace {

class FakeConnection : public Connection, public std::enable_shared_from_this<FakeConnection> {
 public:
  explicit FakeConnection(std::shared_ptr<ConnectionRegistry> registry)
      : Connection(std::move(registry)) {}
  void Wait(bool waiting) { SetWaiting(waiting); }
  void Write(bool writing) { SetWriting(writing); }
  bool evicted_now() const { return evicted(); }
  int evictions = 0;

 private:
  std::shared_ptr<Connection> Share() override { return weak_from_this().lock(); }
  void Evict() override { ++evictions; }
};

// Lets the coarse clock (a few ms per tick) move on.
void Tick() { std::this_thread::sleep_for(std::chrono::milliseconds(30)); }

}  // namespace

TEST_CASE("connections are counted while they exist, in their own registry") {
  auto registry = std::make_shared<ConnectionRegistry>();
  auto other = std::make_shared<ConnectionRegistry>();
  {
    auto a = std::make_shared<FakeConnection>(registry);
    auto b = std::make_shared<FakeConnection>(registry);
    auto c = std::make_shared<FakeConnection>(other);
    CHECK(registry->Count() == 2);
    CHECK(other->Count() == 1);
    a.reset();
    CHECK(registry->Count() == 1);
    // A registry's eviction never reaches another registry's connections.
    c->Wait(true);
    CHECK_FALSE(registry->EvictLongestWaiting());
    CHECK(c->evictions == 0);
  }
  CHECK(registry->Count() == 0);
  CHECK(other->Count() == 0);
}

TEST_CASE("eviction picks the connection that has waited longest, never a busy one") {
  auto registry = std::make_shared<ConnectionRegistry>();
  auto busy = std::make_shared<FakeConnection>(registry);
  auto old_waiter = std::make_shared<FakeConnection>(registry);
  auto new_waiter = std::make_shared<FakeConnection>(registry);
  CHECK_FALSE(registry->EvictLongestWaiting());  // nobody waits
  old_waiter->Wait(true);
  Tick();
  new_waiter->Wait(true);
  CHECK(registry->EvictLongestWaiting());
  CHECK(old_waiter->evictions == 1);
  CHECK(old_waiter->evicted_now());
  CHECK(new_waiter->evictions == 0);
  // The evicted one is not picked twice; then nobody is left.
  CHECK(registry->EvictLongestWaiting());
  CHECK(new_waiter->evictions == 1);
  CHECK_FALSE(registry->EvictLongestWaiting());
  CHECK(busy->evictions == 0);
  // A connection that started answering a request since is no longer marked.
  new_waiter->Wait(false);
  CHECK_FALSE(new_waiter->evicted_now());
}

TEST_CASE("eviction takes a connection whose answer has not been read for a while") {
  auto registry = std::make_shared<ConnectionRegistry>();
  auto fresh_writer = std::make_shared<FakeConnection>(registry);
  auto stalled_writer = std::make_shared<FakeConnection>(registry);
  stalled_writer->Write(true);
  std::this_thread::sleep_for(std::chrono::milliseconds(ConnectionRegistry::kStalledWriteMs + 50));
  fresh_writer->Write(true);
  auto waiter = std::make_shared<FakeConnection>(registry);
  Tick();
  waiter->Wait(true);
  // Oldest first: the writer stalled since before the waiter began waiting.
  CHECK(registry->EvictLongestWaiting());
  CHECK(stalled_writer->evictions == 1);
  CHECK(stalled_writer->evicted_now());
  CHECK(registry->EvictLongestWaiting());
  CHECK(waiter->evictions == 1);
  // A writer whose answer has just begun is busy, not evictable.
  CHECK_FALSE(registry->EvictLongestWaiting());
  CHECK(fresh_writer->evictions == 0);
  // Done writing since: no longer marked.
  stalled_writer->Write(false);
  CHECK_FALSE(stalled_writer->evicted_now());
}

}  // namespace cerulean::server
