// JSON codec for entities and tables: request bodies -> storage::Entity
// (entity_json_reader.cc), checked by Azure's rules
// (server/formats/entity_rules.h), and entities -> JSON at each OData
// metadata level (entity_json_writer.cc).
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/formats/azure_error.h"
#include "storage/status.h"
#include "storage/store.h"
#include "storage/value.h"

namespace cerulean::server {

enum class Metadata { kNone, kMinimal, kFull };

// "application/json;odata=minimalmetadata;streaming=true;charset=utf-8" etc.
std::string_view JsonContentType(Metadata level);

// Parses and validates an entity body (payload.md §2.3, errors-limits.md
// §4, by the rules of EntityBodyRules). Keys are read from the body iff
// `keys_from_body` (insert); otherwise the caller sets them from the URL.
// Returns the error to answer, if any.
std::optional<ErrorReply> ParseEntityBody(std::string_view body, bool keys_from_body,
                                          storage::Entity* entity);

// Parses {"TableName":"..."} (Create Table body).
std::optional<ErrorReply> ParseTableBody(std::string_view body, std::string* table_name);

// Where an entity or table lives, for odata.metadata/id/editLink.
struct JsonContext {
  std::string_view base;     // "http://127.0.0.1:10002/devstoreaccount1"
  std::string_view account;  // "devstoreaccount1"
  std::string_view table;    // table name as written in the request URL
  Metadata level = Metadata::kMinimal;
};

// Appends one entity object. `element` adds the top-level odata.metadata of a
// single entity; `select` (may be null) restricts the members, missing
// selected properties written as null.
void AppendEntityJson(std::string* out, const storage::Entity& entity, const JsonContext& ctx,
                      bool element, const std::vector<std::string>* select);

// AppendEntityJson (no $select) straight from a stored row, its properties
// read from their encoding as they are written. Corruption if they do not
// decode.
storage::Status AppendEntityRowJson(std::string* out, const storage::EntityRow& row,
                                    const JsonContext& ctx, bool element);

// The most bytes AppendEntityJson(out, entity, ctx, element, select)
// appends, and AppendEntityRowJson(out, row, ctx, element) for a row of
// `property_count` properties: the size of the buffer each is written in
// (exposed for the tests that check them).
size_t EntityJsonBound(const storage::Entity& entity, const JsonContext& ctx, bool element,
                       const std::vector<std::string>* select);
size_t EntityRowJsonBound(const storage::EntityRow& row, size_t property_count,
                          const JsonContext& ctx, bool element);

// Appends one table object ({"TableName":..} plus metadata members).
void AppendTableJson(std::string* out, std::string_view name, const JsonContext& ctx, bool element);

}  // namespace cerulean::server
