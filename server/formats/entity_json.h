// JSON codec for entities and tables: request bodies -> storage::Entity with
// Azure's validation, and entities -> JSON at each OData metadata level.
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/protocol/azure_error.h"
#include "storage/status.h"
#include "storage/store.h"
#include "storage/value.h"

namespace cerulean::server {

enum class Metadata { kNone, kMinimal, kFull };

// "application/json;odata=minimalmetadata;streaming=true;charset=utf-8" etc.
std::string_view JsonContentType(Metadata level);

// Parses and validates an entity body (payload.md §2.3, errors-limits.md
// §4). Keys are read from the body iff `keys_from_body` (insert); otherwise
// the caller sets them from the URL. Returns the error to answer, if any.
std::optional<ErrorReply> ParseEntityBody(std::string_view body, bool keys_from_body,
                                          storage::Entity* entity);

// Validates a key value (body form: OutOfRangeInput naming the key, or
// PropertyValueTooLarge).
std::optional<ErrorReply> ValidateBodyKey(std::string_view name, std::string_view value);

// Validates an entity's size and property count after parsing.
std::optional<ErrorReply> ValidateEntityLimits(const storage::Entity& entity);
// The checks that end the parsing of any entity body (JSON or Atom): both
// keys present (`have_keys`) and valid when they come from the body, and
// the entity within Azure's limits.
std::optional<ErrorReply> CheckParsedEntity(const storage::Entity& entity, bool keys_from_body,
                                            bool have_keys);

// Rules shared with the Atom codec (entity_atom.h), so that both body
// formats refuse the same input with the same error.
// The type named by an annotation ("Edm.Int64"), or nullopt for any other
// name (Edm.Single, Edm.Decimal... are not Table types).
std::optional<storage::EdmType> ParseEdmTypeName(std::string_view name);
// PropertyNameInvalid / PropertyNameTooLong unless `name` is an identifier of
// at most 255 UTF-16 units (errors-limits.md §4.3).
std::optional<ErrorReply> ValidatePropertyName(std::string_view name);
// PropertyValueTooLarge iff a string or binary value exceeds its limit.
std::optional<ErrorReply> ValidateValueSize(const storage::Value& value);
// OutOfRangeInput naming property `name` iff `ticks` is before 1601.
std::optional<ErrorReply> ValidateDateTimeRange(std::string_view name, int64_t ticks);

// Parses {"TableName":"..."} (Create Table body).
std::optional<ErrorReply> ParseTableBody(std::string_view body, std::string* table_name);

// W/"datetime'2021-10-15T16%3A13%3A24.0914302Z'"
std::string ETagFor(int64_t ticks);
// Appends ETagFor(ticks) to *out.
void AppendETag(std::string* out, int64_t ticks);
// The ticks of a canonical ETag produced by ETagFor, or nullopt. The weak prefix may be
// written `w/`, as HTTP stacks such as .NET's accept it.
std::optional<int64_t> ParseETag(std::string_view etag);

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

// Key path "t(PartitionKey='a',RowKey='b')" with quotes doubled.
std::string EntityPath(std::string_view table, std::string_view pk, std::string_view rk);
// Appends EntityPath(table, pk, rk) to *out.
void AppendEntityPath(std::string* out, std::string_view table, std::string_view pk,
                      std::string_view rk);

}  // namespace cerulean::server
