// Helpers shared by the Store suite (storage/sqlite/*_test.cc): the
// backends it runs on, opening a store of each, and terse readers and
// writers. Test-only.
// Thread-safety: as the Store they use.
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "storage/postgres/pg_test_util.h"
#include "storage/sqlite/sqlite_store.h"
#include "storage/test_util.h"

namespace cerulean::storage::test {

struct FileBackend {
  static constexpr bool kFile = true;
};
struct MemoryBackend {
  static constexpr bool kFile = false;
};
// PostgresStore on CERULEAN_TEST_DATABASE (storage/postgres/pg_test_util.h); its
// cases skip without one.
struct PostgresBackend {
  static constexpr bool kFile = false;
};

// Options for this suite: no fsync per commit, which only costs time here;
// sqlite_store_crash_test.cc covers durability with the default.
inline SqliteStoreOptions TestOptions() {
  SqliteStoreOptions options;
  options.fsync_commits = false;
  return options;
}

// The store of backend B; null for PostgresBackend without a test database.
template <typename B>
auto OpenStore(const TempDir& dir, SqliteStoreOptions options = TestOptions()) {
  if constexpr (std::is_same_v<B, PostgresBackend>) {
    return test::OpenPgTestStore();
  } else {
    options.in_memory = !B::kFile;
    options.path = dir.path() + "/sub/dir/store.db";
    auto store = SqliteStore::Open(options);
    REQUIRE_MESSAGE(store.ok(), store.status().ToString());
    return std::move(store).value();
  }
}

// Work done by `fn`, as counted by the store. REQUIRES: no reaper thread and
// no other thread using the store, so the difference is fn's alone.
template <typename Fn>
SqliteStoreStats WorkOf(SqliteStore& store, Fn&& fn) {
  SqliteStoreStats before = store.GetStats();
  fn();
  SqliteStoreStats after = store.GetStats();
  return SqliteStoreStats{after.statements_prepared - before.statements_prepared,
                          after.statements_run - before.statements_run,
                          after.vm_steps - before.vm_steps};
}

inline void InsertRows(Store& store, const std::string& table, const std::string& pk, int from,
                       int to) {
  std::vector<WriteOp> ops;
  auto flush = [&] {
    REQUIRE(store.Apply("acct", table, ops, nullptr, nullptr).ok());
    ops.clear();
  };
  for (int i = from; i < to; ++i) {
    char rk[16];
    std::snprintf(rk, sizeof rk, "r%05d", i);
    ops.push_back(Insert(pk, rk, {{"n", Value::Int32(i)}}));
    if (ops.size() == 2000) flush();
  }
  if (!ops.empty()) flush();
}

inline SqliteStoreOptions NoReaper() {
  SqliteStoreOptions options = TestOptions();
  options.background_reaping = false;
  return options;
}

}  // namespace cerulean::storage::test

namespace cerulean::storage {
// The Store suite's files name these unqualified.
using test::Ent;
using test::FileBackend;
using test::Insert;
using test::InsertRows;
using test::Keys;
using test::MemoryBackend;
using test::NoReaper;
using test::Op;
using test::OpenStore;
using test::PostgresBackend;
using test::ScanAll;
using test::TableNames;
using test::TempDir;
using test::TestOptions;
using test::WorkOf;
}  // namespace cerulean::storage
