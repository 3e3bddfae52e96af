// Query Entities pages rendered before they are asked for.
//
// A client reading a table page by page (an export, an SDK's page
// iterator) asks for the next page only once it has parsed the last one,
// and the server idles meanwhile: a client parses ~600 KB of JSON per
// 1,000-entity page while the server waits. After a JSON page with a
// continuation has been written, the next page of the same query is rendered
// on the blocking pool, and the request for it is answered from that
// rendering if
//   * every input of the rendering is the same (the caller's key: account,
//     table as written, base URL, metadata level, $filter, $select, $top,
//     continuation), and
//   * no write has become visible since the rendering began reading
//     (Store::WriteEpoch), so the page is what reading now would give.
// A rendering stops as soon as any other request arrives (NoteRequest), so
// it only uses time the server would otherwise spend idle, and one that is
// not taken is dropped when the next one starts: one page is held at most.
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "storage/store.h"

namespace cerulean::server {

class BlockingPool;

class PagePrefetcher {
 public:
  struct Page {
    std::string body;
    std::optional<storage::EntityKey> next;
  };
  // Renders a page into *out; polls `stop` every few rows it reads and,
  // when it returns true, gives up with a non-ok status.
  using Render = std::function<storage::Status(const std::function<bool()>& stop, Page* out)>;

  // A rendering larger than this is dropped (the request renders its page
  // itself): bounds the memory a held page takes.
  static constexpr size_t kMaxPageBytes = size_t{16} << 20;

  // Called when a request arrives: stops the rendering under way, if any.
  void NoteRequest() { requests_.fetch_add(1, std::memory_order_relaxed); }

  // Arms the rendering of `key`'s page with `render` on `pool`, replacing
  // any page held, armed or under way; Kick starts it. Does nothing if
  // `store` keeps no WriteEpoch.
  void Arm(BlockingPool& pool, const storage::Store& store, std::string key, Render render);
  // Starts the armed rendering, if any. Called once a response has been
  // written: started earlier, the rendering would compete with the writing
  // of the page before it for the core (on one core, that page's headers
  // would wait for the whole rendering).
  void Kick();

  // The page rendered for `key`, if it is ready and still current; the
  // page is handed over (a second Take finds nothing).
  std::optional<Page> Take(const storage::Store& store, std::string_view key);

  // No rendering starts or continues after this (shutdown).
  void Stop() { stopping_.store(true); }

  // Prometheus text: renderings started, pages served, pages dropped as
  // stale, renderings stopped.
  std::string RenderMetrics() const;
  // The bytes of the page held (/_metrics "page_prefetch"), and 1 if one is
  // held, else 0. At most one page of kMaxPageBytes (and its key) is held;
  // a rendering under way holds up to that much more until it ends.
  std::pair<uint64_t, uint64_t> Memory();

 private:
  struct Held {
    std::string key;
    uint64_t epoch = 0;
    Page page;
  };

  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> generation_{0};  // of the newest Arm
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::optional<Held> held_;             // guarded by mu_
  BlockingPool* pool_ = nullptr;         // guarded by mu_
  std::function<void()> armed_;          // guarded by mu_
  std::atomic<bool> have_armed_{false};  // armed_ is set: Kick's fast path

  std::atomic<uint64_t> started_{0};
  std::atomic<uint64_t> served_{0};
  std::atomic<uint64_t> stale_{0};
  std::atomic<uint64_t> stopped_{0};
};

}  // namespace cerulean::server
