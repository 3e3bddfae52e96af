// StoreWrapper: a Store that forwards every call to a target Store, so that
// a test double derives from it and overrides only the calls it changes
// (watches, counts, fails) — as LevelDB's EnvWrapper does for Env. A method
// added to Store is added here once, not to every double.
// Thread-safety: as the target's; the wrapper itself keeps no state.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "storage/store.h"

namespace cerulean::storage {

class StoreWrapper : public Store {
 public:
  // REQUIRES: `target` outlives the wrapper.
  explicit StoreWrapper(Store* target) : target_(target) {}

  Store* target() const { return target_; }

  Status CreateTable(const std::string& account, const std::string& table) override {
    return target_->CreateTable(account, table);
  }
  Status DeleteTable(const std::string& account, const std::string& table) override {
    return target_->DeleteTable(account, table);
  }
  Result<std::string> GetTable(const std::string& account, const std::string& table) override {
    return target_->GetTable(account, table);
  }
  Status ScanTables(const std::string& account, const std::string& start,
                    const std::function<bool(const std::string&)>& visit) override {
    return target_->ScanTables(account, start, visit);
  }
  Result<std::string> GetTableAcl(const std::string& account, const std::string& table) override {
    return target_->GetTableAcl(account, table);
  }
  Status SetTableAcl(const std::string& account, const std::string& table,
                     const std::string& acl) override {
    return target_->SetTableAcl(account, table, acl);
  }
  Result<std::string> GetServiceProperties(const std::string& account) override {
    return target_->GetServiceProperties(account);
  }
  Status SetServiceProperties(const std::string& account, const std::string& props) override {
    return target_->SetServiceProperties(account, props);
  }
  Status GetEntityRow(const std::string& account, const std::string& table,
                      const std::string& partition_key, const std::string& row_key,
                      const RowVisitor& visit) override {
    return target_->GetEntityRow(account, table, partition_key, row_key, visit);
  }
  Status ScanRows(const std::string& account, const std::string& table, const ScanRequest& request,
                  const RowVisitor& visit, std::optional<EntityKey>* next) override {
    return target_->ScanRows(account, table, request, visit, next);
  }
  Status Apply(const std::string& account, const std::string& table,
               const std::vector<WriteOp>& ops, ApplyResult* result, ApplyError* error) override {
    return target_->Apply(account, table, ops, result, error);
  }
  void ApplyAsync(std::string account, std::string table, std::vector<WriteOp> ops,
                  ApplyCallback done) override {
    target_->ApplyAsync(std::move(account), std::move(table), std::move(ops), std::move(done));
  }
  void Flush() override { target_->Flush(); }
  Status ResetAccount(const std::string& account) override {
    return target_->ResetAccount(account);
  }
  Status SaveSnapshot(const std::string& account, const std::string& name,
                      SnapshotInfo* info) override {
    return target_->SaveSnapshot(account, name, info);
  }
  Status RestoreSnapshot(const std::string& account, const std::string& name,
                         RestoreStats* stats) override {
    return target_->RestoreSnapshot(account, name, stats);
  }
  Status ListSnapshots(const std::string& account, std::vector<SnapshotInfo>* out) override {
    return target_->ListSnapshots(account, out);
  }
  Status DeleteSnapshot(const std::string& account, const std::string& name) override {
    return target_->DeleteSnapshot(account, name);
  }
  bool Healthy() override { return target_->Healthy(); }
  std::string HealthProblem() override { return target_->HealthProblem(); }
  bool ReadsWaitOnNetwork() const override { return target_->ReadsWaitOnNetwork(); }
  std::optional<uint64_t> WriteEpoch() const override { return target_->WriteEpoch(); }
  Status GetUsage(std::vector<AccountUsage>* accounts, uint64_t* bytes) override {
    return target_->GetUsage(accounts, bytes);
  }
  std::vector<StoreGauge> Gauges() const override { return target_->Gauges(); }

 private:
  Store* const target_;
};

}  // namespace cerulean::storage
