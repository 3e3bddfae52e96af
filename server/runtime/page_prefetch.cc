#include "server/runtime/page_prefetch.h"

#include <exception>
#include <thread>
#include <utility>

#include "server/runtime/blocking_pool.h"

namespace cerulean::server {

void PagePrefetcher::Arm(BlockingPool& pool, const storage::Store& store, std::string key,
                         Render render) {
  if (stopping_.load() || !store.WriteEpoch()) return;
  // Requests that arrive from now on stop this rendering.
  const uint64_t requests = requests_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t generation = generation_.fetch_add(1) + 1;
  held_.reset();
  pool_ = &pool;
  armed_ = [this, &store, requests, generation, key = std::move(key),
            render = std::move(render)]() mutable {
    Page page;
    auto stop = [&] {
      // Lets a request that has just arrived have the core first, so that
      // it is noted before the rendering goes on. The rendering runs in the
      // pool at the same priority as the I/O thread; on one core the
      // scheduler left the woken I/O thread waiting for the rendering's time
      // slice, so without this yield a page rendered ahead would delay the
      // next request by up to its whole rendering.
      std::this_thread::yield();
      return stopping_.load() || requests_.load(std::memory_order_relaxed) != requests ||
             generation_.load() != generation || page.body.size() > kMaxPageBytes;
    };
    if (stop()) {
      stopped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    // Read before the rendering's read transaction begins: a write visible
    // to it but not counted yet makes the page look stale, never current.
    const uint64_t epoch = store.WriteEpoch().value_or(0);
    storage::Status s;
    try {
      s = render(stop, &page);
    } catch (const std::exception&) {
      s = storage::Status::IOError("page rendering failed");
    }
    // A request that arrived once the page was done may be the one for it:
    // the page is kept (Take checks that it is still current).
    if (!s.ok() || page.body.size() > kMaxPageBytes) {
      stopped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (generation_.load() != generation) return;
    held_ = Held{std::move(key), epoch, std::move(page)};
  };
  have_armed_.store(true);
}

void PagePrefetcher::Kick() {
  if (!have_armed_.load()) return;
  std::function<void()> run;
  BlockingPool* pool;
  {
    std::lock_guard<std::mutex> lock(mu_);
    run.swap(armed_);
    have_armed_.store(false);
    pool = pool_;
  }
  if (!run || pool == nullptr) return;
  started_.fetch_add(1, std::memory_order_relaxed);
  pool->Post(std::move(run));
}

std::pair<uint64_t, uint64_t> PagePrefetcher::Memory() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!held_) return {0, 0};
  uint64_t bytes = held_->key.capacity() + held_->page.body.capacity();
  if (held_->page.next) {
    bytes += held_->page.next->partition_key.capacity() + held_->page.next->row_key.capacity();
  }
  return {bytes, 1};
}

std::optional<PagePrefetcher::Page> PagePrefetcher::Take(const storage::Store& store,
                                                         std::string_view key) {
  std::optional<Held> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!held_ || held_->key != key) return std::nullopt;
    held.swap(held_);
  }
  if (store.WriteEpoch() != held->epoch) {
    stale_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  served_.fetch_add(1, std::memory_order_relaxed);
  return std::move(held->page);
}

std::string PagePrefetcher::RenderMetrics() const {
  std::string out =
      "# HELP cerulean_page_prefetch_total Query Entities pages rendered ahead of their request: "
      "started, served, dropped because a write came first (stale), or stopped by another "
      "request.\n"
      "# TYPE cerulean_page_prefetch_total counter\n";
  auto line = [&](const char* result, const std::atomic<uint64_t>& n) {
    out += "cerulean_page_prefetch_total{result=\"";
    out += result;
    out += "\"} ";
    out += std::to_string(n.load(std::memory_order_relaxed));
    out += '\n';
  };
  line("started", started_);
  line("served", served_);
  line("stale", stale_);
  line("stopped", stopped_);
  return out;
}

}  // namespace cerulean::server
