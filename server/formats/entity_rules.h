// Azure's rules for table names and entities, whatever the body format (errors-limits.md §4,
// payload.md §2.3): property names, key characters, value and entity sizes,
// the 252-property limit, the EDM types a body may name, and which
// properties of a body are stored. The JSON and Atom codecs
// (server/formats/entity_json.h, entity_atom.h) apply them, so that both
// formats refuse the same input with the same error.
// Thread-safety: pure functions; an EntityBodyRules belongs to one parse.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/formats/azure_error.h"
#include "storage/value.h"

namespace cerulean::server {

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
// Validates a key value read from a body: PropertyValueTooLarge beyond 1 KiB
// (UTF-16 units), OutOfRangeInput naming key `name` for a character keys may
// not hold ('/', '\', '#', '?', controls).
std::optional<ErrorReply> ValidateBodyKey(std::string_view name, std::string_view value);
// Validates a table name as Create Table does: InvalidInput for "Tables",
// InvalidResourceName unless alphanumeric starting with a letter,
// OutOfRangeInput outside 3..63 characters.
std::optional<ErrorReply> ValidateTableName(std::string_view name);
// Validates an entity's property count (TooManyProperties beyond 252) and
// size (EntityTooLarge beyond 1 MiB as Azure counts it).
std::optional<ErrorReply> ValidateEntityLimits(const storage::Entity& entity);

// What a property read from an entity body is.
enum class BodyProperty {
  kIgnored,       // Timestamp, a key when the keys come from the URL, or null
  kPartitionKey,  // the PartitionKey of a body that carries its keys
  kRowKey,        // likewise the RowKey
  kValue,         // a property to convert (to its annotated type) and store
};

// The rules of an entity body's properties. A codec reads each property,
// asks Classify what it is, sets the keys and converts the values as told,
// then calls Finish on the entity it built.
class EntityBodyRules {
 public:
  // Keys are read from the body iff `keys_from_body` (insert); otherwise
  // the caller sets them from the URL.
  explicit EntityBodyRules(bool keys_from_body) : keys_from_body_(keys_from_body) {}

  // Classifies property `name`, annotated with type `type_name` (nullopt:
  // none), whose value is null iff `is_null` and a string iff `is_string`,
  // and sets *type to the annotated type (nullopt: none). Errors:
  // InvalidInput for a type that is not a Table type or a key that is not a
  // string, PropertiesNeedValue for a null key, and ValidatePropertyName's.
  std::optional<ErrorReply> Classify(std::string_view name,
                                     std::optional<std::string_view> type_name, bool is_null,
                                     bool is_string, BodyProperty* kind,
                                     std::optional<storage::EdmType>* type);

  // The checks that end every body: both keys present (PropertiesNeedValue)
  // and valid (ValidateBodyKey) when they come from the body, and the entity
  // within Azure's limits (ValidateEntityLimits).
  std::optional<ErrorReply> Finish(const storage::Entity& entity) const;

 private:
  bool keys_from_body_;
  bool have_partition_key_ = false;
  bool have_row_key_ = false;
};

// True iff a $select of `select` (null: no $select) returns property `name`.
bool IsSelected(const std::vector<std::string>* select, std::string_view name);

}  // namespace cerulean::server
