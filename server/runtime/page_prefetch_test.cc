#include "server/runtime/page_prefetch.h"

#include <doctest/doctest.h>

#include <atomic>
#include <memory>
#include <string>

#include "server/runtime/blocking_pool.h"
#include "storage/sqlite/sqlite_store.h"

namespace cerulean::server {
namespace {

std::unique_ptr<storage::SqliteStore> MemoryStore() {
  storage::SqliteStoreOptions options;
  options.in_memory = true;
  auto store = storage::SqliteStore::Open(options);
  REQUIRE(store.ok());
  return std::move(store).value();
}

// A rendering that writes `body` (polling `stop` once before and once
// after) and counts its calls.
struct FakeRender {
  std::string body = "{\"value\":[]}";
  std::atomic<int> calls{0};
  std::function<void()> midway;  // runs between the two polls

  PagePrefetcher::Render Get() {
    return [this](const std::function<bool()>& stop, PagePrefetcher::Page* page) {
      ++calls;
      if (stop()) return storage::Status::Busy("stopped");
      page->body = body;
      page->next = storage::EntityKey{"p", "r"};
      if (midway) midway();
      if (stop()) return storage::Status::Busy("stopped");
      return storage::Status::Ok();
    };
  }
};

// Arms `render` under `key`, kicks it and waits until it has run.
void RenderAhead(PagePrefetcher& prefetcher, const storage::Store& store, const std::string& key,
                 FakeRender& render, bool kick = true) {
  BlockingPool pool(1, 1);
  prefetcher.Arm(pool, store, key, render.Get());
  if (kick) prefetcher.Kick();
  pool.Join();
}

bool HasLine(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

TEST_CASE("PagePrefetcher: a kicked page goes to the request with its key, once") {
  auto store = MemoryStore();
  PagePrefetcher prefetcher;
  FakeRender render;
  RenderAhead(prefetcher, *store, "k1", render);
  CHECK(render.calls == 1);
  CHECK_FALSE(prefetcher.Take(*store, "k2").has_value());  // another query: kept
  auto page = prefetcher.Take(*store, "k1");
  REQUIRE(page.has_value());
  CHECK(page->body == render.body);
  REQUIRE(page->next.has_value());
  CHECK(page->next->partition_key == "p");
  CHECK(page->next->row_key == "r");
  CHECK_FALSE(prefetcher.Take(*store, "k1").has_value());  // handed over
  std::string metrics = prefetcher.RenderMetrics();
  CHECK(HasLine(metrics, "cerulean_page_prefetch_total{result=\"started\"} 1"));
  CHECK(HasLine(metrics, "cerulean_page_prefetch_total{result=\"served\"} 1"));
}

TEST_CASE("PagePrefetcher: nothing renders until Kick, and a newer Arm replaces an older") {
  auto store = MemoryStore();
  PagePrefetcher prefetcher;
  FakeRender first, second;
  RenderAhead(prefetcher, *store, "k1", first, /*kick=*/false);
  CHECK(first.calls == 0);
  CHECK_FALSE(prefetcher.Take(*store, "k1").has_value());
  RenderAhead(prefetcher, *store, "k2", second);
  CHECK(first.calls == 0);
  CHECK(second.calls == 1);
  CHECK_FALSE(prefetcher.Take(*store, "k1").has_value());
  CHECK(prefetcher.Take(*store, "k2").has_value());
  // A page held is dropped by the next Arm.
  RenderAhead(prefetcher, *store, "k3", first);
  RenderAhead(prefetcher, *store, "k4", second, /*kick=*/false);
  CHECK_FALSE(prefetcher.Take(*store, "k3").has_value());
}

TEST_CASE("PagePrefetcher: a write made after the rendering began makes its page stale") {
  auto store = MemoryStore();
  PagePrefetcher prefetcher;
  FakeRender render;
  SUBCASE("after it was rendered") {
    RenderAhead(prefetcher, *store, "k", render);
    REQUIRE(store->CreateTable("acct", "t").ok());
  }
  SUBCASE("while it was rendered") {
    render.midway = [&] { CHECK(store->CreateTable("acct", "t").ok()); };
    RenderAhead(prefetcher, *store, "k", render);
  }
  CHECK(render.calls == 1);
  CHECK_FALSE(prefetcher.Take(*store, "k").has_value());
  CHECK(HasLine(prefetcher.RenderMetrics(), "cerulean_page_prefetch_total{result=\"stale\"} 1"));
  // Rendered again with nothing written since, it is current.
  render.midway = nullptr;
  RenderAhead(prefetcher, *store, "k", render);
  CHECK(prefetcher.Take(*store, "k").has_value());
}

TEST_CASE("PagePrefetcher: a request arriving stops the rendering") {
  auto store = MemoryStore();
  PagePrefetcher prefetcher;
  FakeRender render;
  SUBCASE("before it starts") {
    BlockingPool pool(1, 1);
    prefetcher.Arm(pool, *store, "k", render.Get());
    prefetcher.NoteRequest();
    prefetcher.Kick();
    pool.Join();
    CHECK(render.calls == 0);
  }
  SUBCASE("while it runs") {
    render.midway = [&] { prefetcher.NoteRequest(); };
    RenderAhead(prefetcher, *store, "k", render);
    CHECK(render.calls == 1);
  }
  CHECK_FALSE(prefetcher.Take(*store, "k").has_value());
  CHECK(HasLine(prefetcher.RenderMetrics(), "cerulean_page_prefetch_total{result=\"stopped\"} 1"));
}

TEST_CASE("PagePrefetcher: a page past the size bound is dropped; after Stop nothing renders") {
  auto store = MemoryStore();
  PagePrefetcher prefetcher;
  FakeRender render;
  render.body.assign(PagePrefetcher::kMaxPageBytes + 1, 'x');
  RenderAhead(prefetcher, *store, "k", render);
  CHECK(render.calls == 1);
  CHECK_FALSE(prefetcher.Take(*store, "k").has_value());

  render.body = "{}";
  prefetcher.Stop();
  RenderAhead(prefetcher, *store, "k", render);
  CHECK(render.calls == 1);
  CHECK_FALSE(prefetcher.Take(*store, "k").has_value());
}

}  // namespace
}  // namespace cerulean::server
