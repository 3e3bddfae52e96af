// Test-only: PostgresStores on the database named by the environment
// variable CERULEAN_TEST_DATABASE (scripts/test.sh's `postgres` suite starts
// a throw-away cluster and sets it), each in a schema of its own that is
// dropped with the store. Without the variable the PostgreSQL cases skip
// (saying so once on stderr).
// Thread-safety: as PostgresStore.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "storage/postgres/postgres_store.h"

namespace cerulean::storage::test {

// The test database URL, or null (then says once that PostgreSQL cases skip).
inline const char* PgTestUrl() {
  const char* url = std::getenv("CERULEAN_TEST_DATABASE");
  if (url == nullptr || *url == '\0') {
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) {
      std::fprintf(stderr,
                   "storage_test: CERULEAN_TEST_DATABASE not set: PostgreSQL cases skipped\n");
    }
    return nullptr;
  }
  return url;
}

// A schema name no other store of this run (or of a concurrent run) uses.
inline std::string NewPgTestSchema() {
  static std::atomic<int> counter{0};
  return "cerulean_test_" + std::to_string(getpid()) + "_" + std::to_string(++counter);
}

// Destroys the store, then drops its schema if it owns it.
struct PgTestStoreDeleter {
  std::string url, schema;
  bool drop = true;
  void operator()(PostgresStore* store) const {
    delete store;
    if (!drop) return;
    std::unique_ptr<PgConnection> c;
    if (PgConnection::Open(url, "", &c).ok()) {
      static_cast<void>(c->Command("DROP SCHEMA IF EXISTS \"" + schema + "\" CASCADE"));
    }
  }
};
using PgTestStore = std::unique_ptr<PostgresStore, PgTestStoreDeleter>;

// A store in a new schema (or in `schema`, which it then does not drop: a
// second "node" over another store's data). Null without a test database.
inline PgTestStore OpenPgTestStore(PostgresStoreOptions options = {},
                                   const std::string& schema = "") {
  const char* url = PgTestUrl();
  if (url == nullptr) return PgTestStore(nullptr, PgTestStoreDeleter{});
  options.url = url;
  options.schema = schema.empty() ? NewPgTestSchema() : schema;
  options.pool_size = 8;
  auto store = PostgresStore::Open(options);
  if (!store.ok()) {
    std::fprintf(stderr, "cannot open the test database: %s\n", store.status().ToString().c_str());
    std::abort();
  }
  return PgTestStore(store->release(), PgTestStoreDeleter{url, options.schema, schema.empty()});
}

}  // namespace cerulean::storage::test
