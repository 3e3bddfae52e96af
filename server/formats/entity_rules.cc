#include "server/formats/entity_rules.h"

#include <array>
#include <string>

#include "server/formats/ascii.h"
#include "storage/edm_text.h"

namespace cerulean::server {

using storage::EdmType;
using storage::Entity;
using storage::Value;

namespace {

constexpr size_t kMaxKeyUtf16 = 1024;
constexpr size_t kMaxStringUtf16 = 32768;
constexpr size_t kMaxBinaryBytes = 65536;
constexpr size_t kMaxEntityBytes = 1024 * 1024;
constexpr size_t kMaxPropertyName = 255;

bool IsNameStart(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c >= 0x80;
}
// IsNameStart or a digit, as a table (every byte of every name is checked).
constexpr std::array<bool, 256> kNameChars = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c) {
    t[c] = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c >= 0x80 ||
           (c >= '0' && c <= '9');
  }
  return t;
}();
bool IsNameChar(unsigned char c) { return kNameChars[c]; }

bool IsForbiddenKeyChar(unsigned char c) {
  return c == '/' || c == '\\' || c == '#' || c == '?' || c < 0x20 || c == 0x7F;
}

// U+0080..U+009F arrive as C2 80..C2 9F.
bool HasForbiddenKeyChars(std::string_view v) {
  for (size_t i = 0; i < v.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(v[i]);
    if (IsForbiddenKeyChar(c)) return true;
    if (c == 0xC2 && i + 1 < v.size()) {
      unsigned char n = static_cast<unsigned char>(v[i + 1]);
      if (n >= 0x80 && n <= 0x9F) return true;
    }
  }
  return false;
}

// A string's UTF-16 length, or its byte length when `exact` is false (an
// upper bound: never fewer bytes than UTF-16 units).
size_t Units(std::string_view s, bool exact) { return exact ? storage::Utf16Length(s) : s.size(); }

size_t ValueSize(const Value& v, bool exact) {
  switch (v.type()) {
    case EdmType::kString:
      return 4 + 2 * Units(v.string(), exact);
    case EdmType::kBinary:
      return 4 + v.binary().size();
    case EdmType::kBoolean:
      return 1;
    case EdmType::kInt32:
      return 4;
    case EdmType::kGuid:
      return 16;
    default:
      return 8;
  }
}

}  // namespace

std::optional<EdmType> ParseEdmTypeName(std::string_view name) {
  static constexpr std::pair<std::string_view, EdmType> kTypes[] = {
      {"Edm.String", EdmType::kString}, {"Edm.Boolean", EdmType::kBoolean},
      {"Edm.Int32", EdmType::kInt32},   {"Edm.Int64", EdmType::kInt64},
      {"Edm.Double", EdmType::kDouble}, {"Edm.DateTime", EdmType::kDateTime},
      {"Edm.Guid", EdmType::kGuid},     {"Edm.Binary", EdmType::kBinary},
  };
  for (const auto& [n, t] : kTypes) {
    if (n == name) return t;
  }
  return std::nullopt;
}

std::optional<ErrorReply> ValidatePropertyName(std::string_view name) {
  if (name.empty()) return ErrorReply(AzureError::kPropertyNameInvalid);
  if (name.size() > kMaxPropertyName && storage::Utf16Length(name) > kMaxPropertyName)
    return ErrorReply(AzureError::kPropertyNameTooLong);
  if (!IsNameStart(static_cast<unsigned char>(name[0])))
    return ErrorReply(AzureError::kPropertyNameInvalid);
  for (char c : name) {
    if (!IsNameChar(static_cast<unsigned char>(c)))
      return ErrorReply(AzureError::kPropertyNameInvalid);
  }
  return std::nullopt;
}

std::optional<ErrorReply> ValidateValueSize(const Value& v) {
  if (v.type() == EdmType::kString && v.string().size() > kMaxStringUtf16 &&
      storage::Utf16Length(v.string()) > kMaxStringUtf16) {
    return ErrorReply(AzureError::kPropertyValueTooLarge);
  }
  if (v.type() == EdmType::kBinary && v.binary().size() > kMaxBinaryBytes) {
    return ErrorReply(AzureError::kPropertyValueTooLarge);
  }
  return std::nullopt;
}

std::optional<ErrorReply> ValidateDateTimeRange(std::string_view name, int64_t ticks) {
  if (ticks >= storage::kMinDateTimeTicks) return std::nullopt;
  return ErrorReply(AzureError::kOutOfRangeInput,
                    "The '" + std::string(name) + "' parameter of value '" +
                        storage::FormatDateTimeInvariant(ticks) + "' is out of range.");
}

std::optional<ErrorReply> ValidateBodyKey(std::string_view name, std::string_view value) {
  if (value.size() > kMaxKeyUtf16 && storage::Utf16Length(value) > kMaxKeyUtf16)
    return ErrorReply(AzureError::kPropertyValueTooLarge);
  if (HasForbiddenKeyChars(value)) {
    return ErrorReply(AzureError::kOutOfRangeInput, "The '" + std::string(name) +
                                                        "' parameter of value '" +
                                                        std::string(value) + "' is out of range.");
  }
  return std::nullopt;
}

std::optional<ErrorReply> ValidateEntityLimits(const Entity& e) {
  if (e.properties.size() > 252) return ErrorReply(AzureError::kTooManyProperties);
  // Counted in bytes first: an upper bound that settles almost every entity
  // without decoding UTF-8.
  for (bool exact : {false, true}) {
    size_t size = 4 + 2 * (Units(e.partition_key, exact) + Units(e.row_key, exact));
    for (const auto& p : e.properties) {
      size += 8 + 2 * Units(p.name, exact) + ValueSize(p.value, exact);
    }
    if (size <= kMaxEntityBytes) return std::nullopt;
  }
  return ErrorReply(AzureError::kEntityTooLarge);
}

std::optional<ErrorReply> EntityBodyRules::Classify(std::string_view name,
                                                    std::optional<std::string_view> type_name,
                                                    bool is_null, bool is_string,
                                                    BodyProperty* kind,
                                                    std::optional<EdmType>* type) {
  *type = std::nullopt;
  if (name == "Timestamp") {  // set by the service: whatever the body says is ignored
    *kind = BodyProperty::kIgnored;
    return std::nullopt;
  }
  if (type_name) {
    *type = ParseEdmTypeName(*type_name);
    if (!*type) return ErrorReply(AzureError::kInvalidInput);
  }
  const bool partition_key = name == "PartitionKey";
  if (partition_key || name == "RowKey") {
    if (!keys_from_body_) {  // the URL's keys win
      *kind = BodyProperty::kIgnored;
      return std::nullopt;
    }
    if (is_null) return ErrorReply(AzureError::kPropertiesNeedValue);
    if (!is_string || (*type && **type != EdmType::kString)) {
      return ErrorReply(AzureError::kInvalidInput);
    }
    if (partition_key) {
      have_partition_key_ = true;
      *kind = BodyProperty::kPartitionKey;
    } else {
      have_row_key_ = true;
      *kind = BodyProperty::kRowKey;
    }
    return std::nullopt;
  }
  if (auto err = ValidatePropertyName(name)) return err;
  *kind = is_null ? BodyProperty::kIgnored : BodyProperty::kValue;  // null: not stored
  return std::nullopt;
}

std::optional<ErrorReply> EntityBodyRules::Finish(const Entity& entity) const {
  if (keys_from_body_) {
    if (!have_partition_key_ || !have_row_key_) {
      return ErrorReply(AzureError::kPropertiesNeedValue);
    }
    if (auto err = ValidateBodyKey("PartitionKey", entity.partition_key)) return err;
    if (auto err = ValidateBodyKey("RowKey", entity.row_key)) return err;
  }
  return ValidateEntityLimits(entity);
}

bool IsSelected(const std::vector<std::string>* select, std::string_view name) {
  if (select == nullptr) return true;
  for (const auto& s : *select) {
    if (s == name) return true;
  }
  return false;
}

std::optional<ErrorReply> ValidateTableName(std::string_view name) {
  if (IEquals(name, "tables")) return ErrorReply(AzureError::kInvalidInput);
  bool chars_ok =
      !name.empty() && ((name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= 'a' && name[0] <= 'z'));
  for (char c : name) {
    chars_ok &= (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  }
  if (!chars_ok) return ErrorReply(AzureError::kInvalidResourceName);
  if (name.size() < 3 || name.size() > 63)
    return ErrorReply(AzureError::kOutOfRangeInput,
                      "The specified resource name length is not within the permissible limits.");
  return std::nullopt;
}

}  // namespace cerulean::server
