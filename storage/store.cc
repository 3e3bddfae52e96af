#include "storage/store.h"

#include "storage/codec.h"

namespace cerulean::storage {

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
        Entity& e = result->entities.emplace_back();
        e.partition_key.assign(row.partition_key);
        e.row_key.assign(row.row_key);
        e.timestamp = row.timestamp;
        return DecodeProperties(row.properties, &e.properties);
      },
      &result->next);
}

}  // namespace cerulean::storage
