// Azure's entity rules, checked directly; the codecs' tests
// (server/formats/entity_json_test.cc, entity_atom_test.cc) check that each
// body format applies them.
#include "server/formats/entity_rules.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "storage/edm_text.h"

namespace cerulean::server {

using storage::EdmType;
using storage::Entity;
using storage::Value;

namespace {

std::optional<AzureError> Code(const std::optional<ErrorReply>& reply) {
  if (!reply) return std::nullopt;
  return reply->error;
}

}  // namespace

TEST_CASE("EDM type names: the eight Table types, nothing else") {
  CHECK(ParseEdmTypeName("Edm.String") == EdmType::kString);
  CHECK(ParseEdmTypeName("Edm.Boolean") == EdmType::kBoolean);
  CHECK(ParseEdmTypeName("Edm.Int32") == EdmType::kInt32);
  CHECK(ParseEdmTypeName("Edm.Int64") == EdmType::kInt64);
  CHECK(ParseEdmTypeName("Edm.Double") == EdmType::kDouble);
  CHECK(ParseEdmTypeName("Edm.DateTime") == EdmType::kDateTime);
  CHECK(ParseEdmTypeName("Edm.Guid") == EdmType::kGuid);
  CHECK(ParseEdmTypeName("Edm.Binary") == EdmType::kBinary);
  for (std::string_view other : {"Edm.Single", "Edm.Decimal", "edm.string", "String", ""}) {
    CAPTURE(other);
    CHECK_FALSE(ParseEdmTypeName(other).has_value());
  }
}

TEST_CASE("property names: identifiers of at most 255 UTF-16 units") {
  for (std::string_view ok : {"A", "_a", "a1", "Name_2", "\xC3\xA9t\xC3\xA9"}) {
    CAPTURE(ok);
    CHECK_FALSE(ValidatePropertyName(ok).has_value());
  }
  for (std::string_view bad : {"", "1a", "a-b", "a b", "a.b", "a@b", "$a"}) {
    CAPTURE(bad);
    CHECK(Code(ValidatePropertyName(bad)) == AzureError::kPropertyNameInvalid);
  }
  CHECK_FALSE(ValidatePropertyName(std::string(255, 'n')).has_value());
  CHECK(Code(ValidatePropertyName(std::string(256, 'n'))) == AzureError::kPropertyNameTooLong);
  // Counted in UTF-16 units, not bytes: 255 two-byte characters fit.
  std::string wide;
  for (int i = 0; i < 255; ++i) wide += "\xC3\xA9";
  CHECK_FALSE(ValidatePropertyName(wide).has_value());
}

TEST_CASE("body keys: 1 KiB, and no '/', '\\', '#', '?' or control characters") {
  CHECK_FALSE(ValidateBodyKey("PartitionKey", "").has_value());
  CHECK_FALSE(ValidateBodyKey("PartitionKey", std::string(1024, 'k')).has_value());
  CHECK(Code(ValidateBodyKey("PartitionKey", std::string(1025, 'k'))) ==
        AzureError::kPropertyValueTooLarge);
  for (std::string_view bad : {"a/b", "a\\b", "a#", "?", "a\tb", "\x7F", "\xC2\x85"}) {
    CAPTURE(bad);
    auto reply = ValidateBodyKey("RowKey", bad);
    REQUIRE(reply.has_value());
    CHECK(reply->error == AzureError::kOutOfRangeInput);
    CHECK(reply->Message().find("'RowKey'") != std::string::npos);
  }
  CHECK_FALSE(ValidateBodyKey("RowKey", "\xC2\xA0 ok").has_value());  // U+00A0 is allowed
}

TEST_CASE("value sizes and DateTime range") {
  CHECK_FALSE(ValidateValueSize(Value::String(std::string(32768, 'a'))).has_value());
  CHECK(Code(ValidateValueSize(Value::String(std::string(32769, 'a')))) ==
        AzureError::kPropertyValueTooLarge);
  CHECK_FALSE(ValidateValueSize(Value::FromBinary(std::string(65536, 'b'))).has_value());
  CHECK(Code(ValidateValueSize(Value::FromBinary(std::string(65537, 'b')))) ==
        AzureError::kPropertyValueTooLarge);
  CHECK_FALSE(ValidateDateTimeRange("D", storage::kMinDateTimeTicks).has_value());
  auto early = ValidateDateTimeRange("D", storage::kMinDateTimeTicks - 1);
  REQUIRE(early.has_value());
  CHECK(early->error == AzureError::kOutOfRangeInput);
  CHECK(early->Message().find("'D'") != std::string::npos);
}

TEST_CASE("entity limits: 252 properties, 1 MiB") {
  Entity e;
  e.partition_key = "p";
  e.row_key = "r";
  for (int i = 0; i < 252; ++i) e.properties.push_back({"P" + std::to_string(i), Value::Int32(i)});
  CHECK_FALSE(ValidateEntityLimits(e).has_value());
  e.properties.push_back({"Extra", Value::Int32(0)});
  CHECK(Code(ValidateEntityLimits(e)) == AzureError::kTooManyProperties);
  Entity big;
  for (int i = 0; i < 16; ++i) {
    big.properties.push_back({"S" + std::to_string(i), Value::String(std::string(32768, 'a'))});
  }
  CHECK(Code(ValidateEntityLimits(big)) == AzureError::kEntityTooLarge);
  big.properties.pop_back();
  CHECK_FALSE(ValidateEntityLimits(big).has_value());
}

TEST_CASE("EntityBodyRules: what each property of a body is") {
  BodyProperty kind;
  std::optional<EdmType> type;
  SUBCASE("an insert takes its keys from the body and needs both") {
    EntityBodyRules rules(true);
    CHECK_FALSE(rules.Classify("PartitionKey", std::nullopt, false, true, &kind, &type));
    CHECK(kind == BodyProperty::kPartitionKey);
    CHECK_FALSE(rules.Classify("RowKey", "Edm.String", false, true, &kind, &type));
    CHECK(kind == BodyProperty::kRowKey);
    CHECK(type == EdmType::kString);
    Entity e;
    e.partition_key = "p";
    e.row_key = "r";
    CHECK_FALSE(rules.Finish(e).has_value());
    e.row_key = "r/";
    CHECK(Code(rules.Finish(e)) == AzureError::kOutOfRangeInput);

    EntityBodyRules no_row_key(true);
    CHECK_FALSE(no_row_key.Classify("PartitionKey", std::nullopt, false, true, &kind, &type));
    CHECK(Code(no_row_key.Finish(Entity{})) == AzureError::kPropertiesNeedValue);
  }
  SUBCASE("keys must be non-null strings") {
    EntityBodyRules rules(true);
    CHECK(Code(rules.Classify("PartitionKey", std::nullopt, true, false, &kind, &type)) ==
          AzureError::kPropertiesNeedValue);
    CHECK(Code(rules.Classify("RowKey", std::nullopt, false, false, &kind, &type)) ==
          AzureError::kInvalidInput);
    CHECK(Code(rules.Classify("RowKey", "Edm.Int32", false, true, &kind, &type)) ==
          AzureError::kInvalidInput);
  }
  SUBCASE("an update ignores the body's keys; every body ignores Timestamp") {
    EntityBodyRules rules(false);
    CHECK_FALSE(rules.Classify("PartitionKey", std::nullopt, true, false, &kind, &type));
    CHECK(kind == BodyProperty::kIgnored);
    CHECK_FALSE(rules.Classify("Timestamp", "Edm.NotAType", false, false, &kind, &type));
    CHECK(kind == BodyProperty::kIgnored);
    CHECK_FALSE(rules.Finish(Entity{}).has_value());
  }
  SUBCASE("other properties: named by the rules, typed by their annotation, null not stored") {
    EntityBodyRules rules(false);
    CHECK_FALSE(rules.Classify("Count", "Edm.Int64", false, true, &kind, &type));
    CHECK(kind == BodyProperty::kValue);
    CHECK(type == EdmType::kInt64);
    CHECK_FALSE(rules.Classify("Count", std::nullopt, false, false, &kind, &type));
    CHECK(kind == BodyProperty::kValue);
    CHECK_FALSE(type.has_value());
    CHECK_FALSE(rules.Classify("Gone", "Edm.Int32", true, false, &kind, &type));
    CHECK(kind == BodyProperty::kIgnored);
    CHECK(Code(rules.Classify("Count", "Edm.Single", false, false, &kind, &type)) ==
          AzureError::kInvalidInput);
    CHECK(Code(rules.Classify("1st", std::nullopt, false, false, &kind, &type)) ==
          AzureError::kPropertyNameInvalid);
  }
}

TEST_CASE("IsSelected: everything without $select, else what it lists") {
  CHECK(IsSelected(nullptr, "Anything"));
  const std::vector<std::string> select = {"RowKey", "A"};
  CHECK(IsSelected(&select, "A"));
  CHECK(IsSelected(&select, "RowKey"));
  CHECK_FALSE(IsSelected(&select, "a"));
  CHECK_FALSE(IsSelected(&select, "PartitionKey"));
}

}  // namespace cerulean::server
