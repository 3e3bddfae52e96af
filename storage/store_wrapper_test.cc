// Tests of StoreWrapper: every call reaches the target, and a double that
// overrides one call changes only that one.
#include "storage/store_wrapper.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "storage/sqlite/sqlite_test_util.h"

namespace cerulean::storage::test {
namespace {

// Counts GetTable calls; forwards everything.
class CountingStore final : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  Result<std::string> GetTable(const std::string& account, const std::string& table) override {
    ++get_tables;
    return StoreWrapper::GetTable(account, table);
  }
  int get_tables = 0;
};

TEST_CASE("StoreWrapper forwards every call to its target") {
  TempDir dir;
  auto target = OpenStore<MemoryBackend>(dir);
  CountingStore store(target.get());
  CHECK(store.target() == target.get());

  REQUIRE(store.CreateTable("acct", "Items").ok());
  CHECK(TableNames(*target, "acct").value() == std::vector<std::string>{"Items"});
  CHECK(TableNames(store, "acct").value() == std::vector<std::string>{"Items"});
  CHECK(store.GetTable("acct", "items").value() == "Items");
  CHECK(store.get_tables == 1);

  ApplyResult applied;
  ApplyError error;
  REQUIRE(store.Apply("acct", "Items", {Insert("p", "r")}, &applied, &error).ok());
  CHECK(Keys(ScanAll(store, "Items")) == std::vector<std::string>{"p/r"});
  CHECK(store.GetEntity("acct", "Items", "p", "r").ok());
  CHECK(store.WriteEpoch() == target->WriteEpoch());
  CHECK(store.ReadsWaitOnNetwork() == target->ReadsWaitOnNetwork());
  CHECK(store.Healthy() == target->Healthy());
  CHECK(store.Gauges().size() == target->Gauges().size());

  REQUIRE(store.SetTableAcl("acct", "Items", "<SignedIdentifiers/>").ok());
  CHECK(target->GetTableAcl("acct", "Items").value() == "<SignedIdentifiers/>");
  REQUIRE(store.DeleteTable("acct", "Items").ok());
  CHECK(target->GetTable("acct", "Items").status().code() == StatusCode::kTableNotFound);
}

}  // namespace
}  // namespace cerulean::storage::test
