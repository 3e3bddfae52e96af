#include "storage/store.h"

#include "storage/codec.h"

namespace cerulean::storage {

Status DecodeRow(const EntityRow& row, Entity* out) {
  out->partition_key.assign(row.partition_key);
  out->row_key.assign(row.row_key);
  out->timestamp = row.timestamp;
  return DecodeProperties(row.properties, &out->properties);
}

Status Store::Scan(const std::string& account, const std::string& table, const ScanRequest& request,
                   ScanResult* result) {
  result->entities.clear();
  result->next.reset();
  return ScanRows(
      account, table, request,
      [result](EntityRow& row) {
        if (row.decoded != nullptr) {
          result->entities.push_back(std::move(*row.decoded));
          return Status::Ok();
        }
        return DecodeRow(row, &result->entities.emplace_back());
      },
      &result->next);
}

Result<Entity> Store::GetEntity(const std::string& account, const std::string& table,
                                const std::string& partition_key, const std::string& row_key) {
  Entity entity;
  Status s = GetEntityRow(account, table, partition_key, row_key,
                          [&](EntityRow& row) { return DecodeRow(row, &entity); });
  if (!s.ok()) return s;
  return entity;
}

}  // namespace cerulean::storage
