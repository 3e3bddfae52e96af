// Helpers shared by the storage tests: temporary directories, terse
// constructors for write ops, and readers of a whole table or catalog.
// Test-only; not part of the storage library.
// Thread-safety: TempDir is not shared between threads; the readers are as
// safe as the Store they read, the other functions pure.
#pragma once

#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "storage/store.h"

namespace cerulean::storage::test {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents when
// the object dies.
class TempDir {
 public:
  TempDir() {
    std::error_code ec;
    std::string base = std::filesystem::temp_directory_path(ec).string();
    if (ec || base.empty()) base = "/tmp";
    std::string templ = base + "/cerulean_storage_XXXXXX";
    if (mkdtemp(templ.data()) != nullptr) path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // Empty if the directory could not be made.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline Entity Ent(std::string pk, std::string rk, std::vector<Property> props = {}) {
  Entity e;
  e.partition_key = std::move(pk);
  e.row_key = std::move(rk);
  e.properties = std::move(props);
  return e;
}

inline WriteOp Op(WriteKind kind, std::string pk, std::string rk, std::vector<Property> props,
                  std::optional<int64_t> if_match = std::nullopt) {
  return WriteOp{kind, Ent(std::move(pk), std::move(rk), std::move(props)), if_match};
}

inline WriteOp Insert(std::string pk, std::string rk, std::vector<Property> props = {}) {
  return Op(WriteKind::kInsert, std::move(pk), std::move(rk), std::move(props));
}

// "pk/rk" of each entity, in order.
inline std::vector<std::string> Keys(const std::vector<Entity>& entities) {
  std::vector<std::string> keys;
  for (const auto& e : entities) keys.push_back(e.partition_key + "/" + e.row_key);
  return keys;
}

// The account's tables (names as created) from `start` on, in ScanTables order.
inline Result<std::vector<std::string>> TableNames(Store& store, const std::string& account,
                                                   const std::string& start = "") {
  std::vector<std::string> names;
  Status s = store.ScanTables(account, start, [&](const std::string& t) {
    names.push_back(t);
    return true;
  });
  if (!s.ok()) return s;
  return names;
}

// Every entity of account "acct"'s `table` that the request admits, in key
// order, following continuations.
inline std::vector<Entity> ScanAll(Store& store, const std::string& table, ScanRequest req = {}) {
  std::vector<Entity> all;
  for (int pages = 0; pages < 100000; ++pages) {
    ScanResult res;
    Status s = store.Scan("acct", table, req, &res);
    REQUIRE_MESSAGE(s.ok(), s.ToString());
    all.insert(all.end(), res.entities.begin(), res.entities.end());
    if (!res.next) return all;
    req.start = res.next;
  }
  FAIL("too many pages");
  return all;
}

}  // namespace cerulean::storage::test
