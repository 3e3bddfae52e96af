// Tests of the memory figures /_metrics reports (Metrics::RenderMemory).
#include "server/devtools/metrics.h"

#include <doctest/doctest.h>

#include <string>

#include "storage/sqlite/sqlite_store.h"

namespace cerulean::server {
namespace {

TEST_CASE("metrics: memory by structure, the server's and the store's, in name order") {
  storage::SqliteStoreOptions options;
  options.in_memory = true;
  auto store = storage::SqliteStore::Open(options);
  REQUIRE(store.ok());
  Metrics metrics;
  metrics.TrackMemory("zeta", [] { return MemoryUse{10, 2}; });
  metrics.TrackMemory("alpha", [] { return MemoryUse{7, 1}; });
  const std::string text = metrics.RenderMemory(**store);
  CHECK(text.find("# TYPE cerulean_memory_bytes gauge\n"
                  "cerulean_memory_bytes{structure=\"alpha\"} 7\n"
                  "cerulean_memory_bytes{structure=\"key_log\"} 0\n"
                  "cerulean_memory_bytes{structure=\"write_counts\"} ") != std::string::npos);
  CHECK(text.find("cerulean_memory_bytes{structure=\"zeta\"} 10\n") != std::string::npos);
  CHECK(text.find("cerulean_memory_entries{structure=\"zeta\"} 2\n") != std::string::npos);
  CHECK(text.find("cerulean_memory_entries{structure=\"key_log\"} 0\n") != std::string::npos);
  // The store's memory gauges are not repeated as store figures.
  CHECK(metrics.RenderUsage(**store, true, "").find("_memory_") == std::string::npos);
}

}  // namespace
}  // namespace cerulean::server
