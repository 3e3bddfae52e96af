#include "server/devtools/fixtures.h"

#include <map>
#include <nlohmann/json.hpp>

#include "server/formats/ascii.h"
#include "server/formats/entity_json.h"
#include "server/formats/entity_rules.h"
#include "server/formats/escape.h"

namespace cerulean::server {

storage::Status ExportTables(storage::Store& store, const std::string& account,
                             const std::vector<std::string>& tables, std::ostream& out,
                             size_t* count) {
  *count = 0;
  std::vector<std::string> names = tables;
  if (names.empty()) {
    storage::Status s = store.ScanTables(account, "", [&](const std::string& name) {
      names.push_back(name);
      return true;
    });
    if (!s.ok()) return s;
  }
  for (const auto& table : names) {
    auto stored_name = store.GetTable(account, table);
    if (!stored_name.ok()) return stored_name.status();
    // An empty table still appears, so that import recreates it.
    std::string header = "{\"table\":";
    AppendJsonString(&header, *stored_name);
    out << header << "}\n";
    storage::ScanRequest scan;
    scan.limit = 1000;
    while (true) {
      storage::ScanResult page;
      storage::Status s = store.Scan(account, *stored_name, scan, &page);
      if (!s.ok()) return s;
      JsonContext ctx{"", account, *stored_name, Metadata::kMinimal};
      for (const auto& e : page.entities) {
        std::string line = header + ",\"entity\":";
        AppendEntityJson(&line, e, ctx, false, nullptr);
        line += "}\n";
        out << line;
        ++*count;
      }
      if (!page.next) break;
      scan.start = std::move(page.next);
    }
  }
  out.flush();
  if (!out) return storage::Status::IOError("write failed");
  return storage::Status::Ok();
}

namespace {

// Objects and arrays a line may nest: the line's object and its entity.
constexpr int kMaxFixtureDepth = 2;

// Pending upserts of one table and partition.
struct PendingBatch {
  std::string table;
  std::vector<storage::WriteOp> ops;
};

storage::Status Flush(storage::Store& store, const std::string& account, PendingBatch* batch) {
  if (batch->ops.empty()) return storage::Status::Ok();
  storage::ApplyResult result;
  storage::ApplyError error;
  storage::Status s = store.Apply(account, batch->table, batch->ops, &result, &error);
  batch->ops.clear();
  return s;
}

}  // namespace

storage::Status ImportJsonLines(storage::Store& store, const std::string& account, std::istream& in,
                                size_t* count) {
  *count = 0;
  std::string line;
  size_t line_no = 0;
  PendingBatch batch;
  std::map<std::string, bool> known_tables;
  while (std::getline(in, line)) {
    ++line_no;
    if (Trim(line).empty()) continue;
    auto fail = [&](const std::string& why) {
      return storage::Status::InvalidArgument("line " + std::to_string(line_no) + ": " + why);
    };
    // A line holds an object holding a flat entity object: anything nested
    // deeper is refused while it is parsed (nlohmann's parser is iterative,
    // but a deep tree would be walked recursively afterwards).
    bool too_deep = false;
    auto limit_depth = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
      const bool opens = event == nlohmann::json::parse_event_t::object_start ||
                         event == nlohmann::json::parse_event_t::array_start;
      if (opens && depth >= kMaxFixtureDepth) too_deep = true;
      return !too_deep;
    };
    nlohmann::json doc = nlohmann::json::parse(line, limit_depth, false);
    if (too_deep) {
      return fail("nested deeper than " + std::to_string(kMaxFixtureDepth) +
                  " levels (an entity's properties are plain values)");
    }
    if (doc.is_discarded() || !doc.is_object() || !doc.contains("table") ||
        !doc["table"].is_string()) {
      return fail("expected {\"table\":...,\"entity\":{...}}");
    }
    std::string table = doc["table"].get<std::string>();
    if (auto err = ValidateTableName(table)) {
      return fail("table name \"" + table.substr(0, 80) + (table.size() > 80 ? "...\"" : "\"") +
                  ": " + std::string(Describe(err->error).code) + ": " +
                  std::string(err->Message()));
    }
    if (!known_tables.count(ToLower(table))) {
      storage::Status s = store.CreateTable(account, table);
      if (!s.ok() && s.code() != storage::StatusCode::kTableAlreadyExists) return s;
      known_tables[ToLower(table)] = true;
    }
    if (!doc.contains("entity")) continue;
    // Re-parse the entity's own text so that numbers keep their JSON form.
    std::string entity_text = doc["entity"].dump();
    storage::WriteOp op;
    op.kind = storage::WriteKind::kInsertOrReplace;
    if (auto err = ParseEntityBody(entity_text, true, &op.entity)) {
      return fail(std::string(Describe(err->error).code) + ": " + std::string(err->Message()));
    }
    bool same_group = !batch.ops.empty() && IEquals(batch.table, table) &&
                      batch.ops.front().entity.partition_key == op.entity.partition_key &&
                      batch.ops.size() < 100;
    for (const auto& pending : batch.ops) {
      if (same_group && pending.entity.row_key == op.entity.row_key) same_group = false;
    }
    if (!same_group) {
      storage::Status s = Flush(store, account, &batch);
      if (!s.ok()) return s;
      batch.table = table;
    }
    batch.ops.push_back(std::move(op));
    ++*count;
  }
  return Flush(store, account, &batch);
}

}  // namespace cerulean::server
