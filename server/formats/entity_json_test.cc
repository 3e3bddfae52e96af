#include "server/formats/entity_json.h"

#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "server/http/router.h"
#include "server/protocol/query_options.h"
#include "storage/codec.h"
#include "storage/edm_text.h"

namespace cerulean::server {

using storage::EdmType;
using storage::Entity;
using storage::Value;

namespace {
Entity MustParse(std::string_view body, bool keys = true) {
  Entity e;
  auto err = ParseEntityBody(body, keys, &e);
  INFO(body);
  REQUIRE_FALSE(err.has_value());
  return e;
}
AzureError ParseError(std::string_view body, bool keys = true) {
  Entity e;
  auto err = ParseEntityBody(body, keys, &e);
  INFO(body);
  REQUIRE(err.has_value());
  return err->error;
}
// The row the store would read back for `e`; its properties view `*encoded`.
storage::EntityRow StoredRow(const Entity& e, std::string* encoded) {
  encoded->clear();
  storage::EncodeProperties(e.properties, encoded);
  storage::EntityRow row;
  row.partition_key = e.partition_key;
  row.row_key = e.row_key;
  row.timestamp = e.timestamp;
  row.properties = *encoded;
  return row;
}
std::string Render(const Entity& e, Metadata level) {
  std::string out;
  JsonContext ctx{"http://127.0.0.1:10002/devstoreaccount1", "devstoreaccount1", "orders", level};
  AppendEntityJson(&out, e, ctx, false, nullptr);
  return out;
}
}  // namespace

TEST_CASE("entity bodies are strict JSON objects") {
  // Valid: whitespace and a byte order mark before the object, escapes,
  // integers past 64 bits (read as a Double, like any untyped non-Int32).
  CHECK(MustParse(" \r\n\t{\"PartitionKey\":\"p\",\"RowKey\":\"r\"} ").row_key == "r");
  CHECK(MustParse("\xEF\xBB\xBF{\"PartitionKey\":\"p\",\"RowKey\":\"r\"}").row_key == "r");
  Entity e = MustParse(
      R"({"PartitionKey":"p","RowKey":"r","S":"a\u00e9\ud83d\ude00\n\"\u0000","Huge":123456789012345678901234})");
  CHECK(e.Find("S")->string() == std::string("a\xC3\xA9\xF0\x9F\x98\x80\n\"\0", 10));
  CHECK(e.Find("Huge")->type() == EdmType::kDouble);
  CHECK(e.Find("Huge")->dbl() == doctest::Approx(1.2345678901234568e23));
  CHECK(MustParse(R"({"PartitionKey":"p","RowKey":"r","U":18446744073709551615})")
            .Find("U")
            ->type() == EdmType::kDouble);

  // Invalid: not an object, trailing content, nesting, lone surrogates,
  // raw control characters, invalid UTF-8, truncation.
  for (std::string_view bad :
       {"", "1", "\"x\"", "[]", "null", R"({"PartitionKey":"p","RowKey":"r"} x)",
        R"({"PartitionKey":"p","RowKey":"r"}{})", R"({"PartitionKey":"p","RowKey":"r","A":{}})",
        R"({"PartitionKey":"p","RowKey":"r","A":[1]})",
        R"({"PartitionKey":"p","RowKey":"r","A":"\ud800"})",
        "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"A\":\"\x01\"}",
        "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"A\":\"\xC3\"}", R"({"PartitionKey":"p",)",
        R"({"PartitionKey":"p","RowKey":"r","A":01})",
        R"({"PartitionKey":"p","RowKey":"r","A":1e400})",
        R"({"PartitionKey":"p","RowKey":"r","A":12345678901234567890123456 x})"}) {
    CHECK(ParseError(bad) == AzureError::kInvalidInput);
  }
}

TEST_CASE("typing of unannotated and annotated values") {
  Entity e = MustParse(
      R"({"PartitionKey":"p","RowKey":"r","S":"x","B":true,"I":42,"Big":3000000000,"D":1.0,"E":1e3,)"
      R"("L@odata.type":"Edm.Int64","L":"-9223372036854775808","T":"2024-12-01T00:00:00.1234567Z","T@odata.type":"Edm.DateTime",)"
      R"("G@odata.type":"Edm.Guid","G":"C9DA6455-213D-42C9-9A79-3E9149A57833","Bin@odata.type":"Edm.Binary","Bin":"AQID",)"
      R"("N@odata.type":"Edm.Double","N":"NaN","Inf@odata.type":"Edm.Double","Inf":"-Infinity","Z":null,)"
      R"("I32@odata.type":"Edm.Int32","I32":"7","Timestamp":"ignored","odata.etag":"x"})");
  CHECK(e.partition_key == "p");
  CHECK(e.Find("S")->type() == EdmType::kString);
  CHECK(e.Find("B")->boolean());
  CHECK(e.Find("I")->int32() == 42);
  CHECK(e.Find("Big")->type() == EdmType::kDouble);
  CHECK(e.Find("D")->type() == EdmType::kDouble);
  CHECK(e.Find("E")->dbl() == 1000.0);
  CHECK(e.Find("L")->int64() == INT64_MIN);
  CHECK(storage::FormatDateTime(e.Find("T")->ticks()) == "2024-12-01T00:00:00.1234567Z");
  CHECK(storage::FormatGuid(e.Find("G")->guid()) == "c9da6455-213d-42c9-9a79-3e9149a57833");
  CHECK(e.Find("Bin")->binary() == std::string("\x01\x02\x03"));
  CHECK(std::isnan(e.Find("N")->dbl()));
  CHECK(e.Find("Inf")->dbl() == -INFINITY);
  CHECK(e.Find("Z") == nullptr);
  CHECK(e.Find("I32")->int32() == 7);
  CHECK(e.Find("Timestamp") == nullptr);
}

TEST_CASE("null with an explicit type is accepted and not stored") {
  // Azure stores no nulls: a typed null (as the .NET clients send for DateTime? or double?
  // members) is read like an untyped one, while its type name must still be valid.
  Entity e = MustParse(
      R"({"PartitionKey":"p","RowKey":"r","D@odata.type":"Edm.DateTime","D":null,)"
      R"("X":null,"X@odata.type":"Edm.Double","G@odata.type":"Edm.Guid","G":null,"K":1})");
  CHECK(e.Find("D") == nullptr);
  CHECK(e.Find("X") == nullptr);
  CHECK(e.Find("G") == nullptr);
  CHECK(e.Find("K")->int32() == 1);
  CHECK(ParseError(R"({"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.Nope","A":null})") ==
        AzureError::kInvalidInput);
}

TEST_CASE("body errors") {
  CHECK(ParseError("not json") == AzureError::kInvalidInput);
  CHECK(ParseError("[1]") == AzureError::kInvalidInput);
  CHECK(ParseError("\"str\"") == AzureError::kInvalidInput);
  CHECK(ParseError(R"({"PartitionKey":"p","RowKey":"r","O":{"a":1}})") ==
        AzureError::kInvalidInput);
  CHECK(ParseError(R"({"PartitionKey":"p"})") == AzureError::kPropertiesNeedValue);
  CHECK(ParseError(R"({"PartitionKey":null,"RowKey":"r"})") == AzureError::kPropertiesNeedValue);
  CHECK(ParseError(R"({"PartitionKey":1,"RowKey":"r"})") == AzureError::kInvalidInput);
  CHECK(ParseError(R"({"PartitionKey":"p","RowKey":"r","A":1,"A":2})") ==
        AzureError::kDuplicatePropertiesSpecified);
  CHECK(ParseError(R"({"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.Int64"})") ==
        AzureError::kInvalidInput);
  CHECK(ParseError(R"({"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.Single","A":1})") ==
        AzureError::kInvalidInput);
  CHECK(ParseError(
            R"({"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.Int32","A":2147483648})") ==
        AzureError::kInvalidInput);
  CHECK(ParseError(R"({"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.Int64","A":"+5"})") ==
        AzureError::kInvalidInput);
  CHECK(ParseError(R"({"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.Guid","A":"xyz"})") ==
        AzureError::kInvalidInput);
  CHECK(ParseError(R"({"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.Binary","A":"a-_b"})") ==
        AzureError::kInvalidInput);
  CHECK(
      ParseError(
          R"({"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.DateTime","A":"0001-01-01T00:00:00Z"})") ==
      AzureError::kOutOfRangeInput);
  CHECK(
      ParseError(
          R"({"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.DateTime","A":"2024-01-01T00:00:00.12345678Z"})") ==
      AzureError::kInvalidInput);
  CHECK(ParseError(R"({"PartitionKey":"p","RowKey":"r","1A":1})") ==
        AzureError::kPropertyNameInvalid);
  CHECK(ParseError(R"({"PartitionKey":"p","RowKey":"r","a-b":1})") ==
        AzureError::kPropertyNameInvalid);
  CHECK(ParseError(R"({"PartitionKey":"p","RowKey":"r","":1})") ==
        AzureError::kPropertyNameInvalid);
  CHECK(ParseError(R"({"PartitionKey":"p/q","RowKey":"r"})") == AzureError::kOutOfRangeInput);
  CHECK(ParseError(R"({"PartitionKey":"p","RowKey":"a#"})") == AzureError::kOutOfRangeInput);
}

TEST_CASE("names alike at both ends are told apart (duplicates, annotations)") {
  // Same length, same first and last eight bytes: the members' index hashes
  // these alike, so only the names themselves separate them. 20 properties
  // (29 members) use the small tables, 200 the sorted index.
  for (const int count : {20, 200}) {
    CAPTURE(count);
    auto name = [](int i) {
      std::string digits = std::to_string(1000 + i);
      return "Propertyy" + digits + "zzzzzzzz";
    };
    std::string body = R"({"PartitionKey":"p","RowKey":"r")";
    for (int i = 0; i < count; ++i) {
      body += ",\"" + name(i) + "\":\"" + std::to_string(i) + "\"";
      // Every third one typed: each annotation must find its own property.
      if (i % 3 == 0) body += ",\"" + name(i) + "@odata.type\":\"Edm.Int64\"";
    }
    Entity e = MustParse(body + "}");
    REQUIRE(e.properties.size() == static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) {
      CAPTURE(i);
      REQUIRE(e.properties[i].name == name(i));
      REQUIRE(e.properties[i].value.type() == (i % 3 == 0 ? EdmType::kInt64 : EdmType::kString));
    }
    CHECK(ParseError(body + ",\"" + name(count - 3) + "\":\"again\"}") ==
          AzureError::kDuplicatePropertiesSpecified);
    CHECK(ParseError(body + ",\"" + name(count - 2) + "@odata.type\":\"Edm.Int64\"," + "\"" +
                     name(count - 2) + "@odata.type\":\"Edm.Int64\"}") ==
          AzureError::kDuplicatePropertiesSpecified);
    // An annotation of a name that differs from all others only in the middle.
    CHECK(ParseError(body + ",\"" + name(999) + "@odata.type\":\"Edm.Int64\"}") ==
          AzureError::kInvalidInput);
  }
}

TEST_CASE("size limits at their boundaries") {
  std::string ok = R"({"PartitionKey":"p","RowKey":"r","S":")" + std::string(32768, 'a') + "\"}";
  MustParse(ok);
  std::string big = R"({"PartitionKey":"p","RowKey":"r","S":")" + std::string(32769, 'a') + "\"}";
  CHECK(ParseError(big) == AzureError::kPropertyValueTooLarge);
  std::string name(255, 'n');
  MustParse(R"({"PartitionKey":"p","RowKey":"r",")" + name + "\":1}");
  CHECK(ParseError(R"({"PartitionKey":"p","RowKey":"r",")" + name + "n\":1}") ==
        AzureError::kPropertyNameTooLong);
  std::string many = R"({"PartitionKey":"p","RowKey":"r")";
  for (int i = 0; i < 252; ++i) many += ",\"P" + std::to_string(i) + "\":1";
  MustParse(many + "}");
  CHECK(ParseError(many + ",\"Extra\":1}") == AzureError::kTooManyProperties);
  CHECK(ParseError(R"({"PartitionKey":")" + std::string(1025, 'k') + R"(","RowKey":"r"})") ==
        AzureError::kPropertyValueTooLarge);
  MustParse(R"({"PartitionKey":")" + std::string(1024, 'k') + R"(","RowKey":""})");
}

TEST_CASE("rendering at each metadata level") {
  Entity e = MustParse(
      R"({"PartitionKey":"p","RowKey":"r","I":1,"D":2.0,"L@odata.type":"Edm.Int64","L":"5",)"
      R"("N@odata.type":"Edm.Double","N":"NaN","S":"x\"y"})");
  e.timestamp = *storage::ParseDateTime("2021-10-15T16:13:24.0914302Z");
  CHECK(
      Render(e, Metadata::kNone) ==
      R"({"PartitionKey":"p","RowKey":"r","Timestamp":"2021-10-15T16:13:24.0914302Z","I":1,"D":2.0,"L":"5","N":"NaN","S":"x\"y"})");
  CHECK(
      Render(e, Metadata::kMinimal) ==
      R"({"odata.etag":"W/\"datetime'2021-10-15T16%3A13%3A24.0914302Z'\"","PartitionKey":"p","RowKey":"r",)"
      R"("Timestamp":"2021-10-15T16:13:24.0914302Z","I":1,"D":2.0,"L@odata.type":"Edm.Int64","L":"5",)"
      R"("N@odata.type":"Edm.Double","N":"NaN","S":"x\"y"})");
  std::string full = Render(e, Metadata::kFull);
  CHECK(full.find(R"("odata.type":"devstoreaccount1.orders")") != std::string::npos);
  CHECK(
      full.find(
          R"x("odata.id":"http://127.0.0.1:10002/devstoreaccount1/orders(PartitionKey='p',RowKey='r')")x") !=
      std::string::npos);
  CHECK(full.find(R"x("odata.editLink":"orders(PartitionKey='p',RowKey='r')")x") !=
        std::string::npos);
  CHECK(full.find(R"("Timestamp@odata.type":"Edm.DateTime","Timestamp")") != std::string::npos);
}

TEST_CASE("every fixed-size type renders exactly") {
  Entity e = MustParse(
      R"({"PartitionKey":"p","RowKey":"r","B":false,"I":-2147483648,"D":1e300,"F":-0.5,)"
      R"("L@odata.type":"Edm.Int64","L":"-9223372036854775808",)"
      R"("P@odata.type":"Edm.Double","P":"Infinity","M@odata.type":"Edm.Double","M":"-Infinity",)"
      R"("T@odata.type":"Edm.DateTime","T":"2024-02-29T01:02:03Z",)"
      R"("G@odata.type":"Edm.Guid","G":"C9DA6455-213D-42C9-9A79-3E9149A57833"})");
  e.timestamp = *storage::ParseDateTime("2021-10-15T16:13:24.0914302Z");
  const std::string head =
      R"("PartitionKey":"p","RowKey":"r","Timestamp":"2021-10-15T16:13:24.0914302Z",)";
  CHECK(Render(e, Metadata::kNone) ==
        "{" + head +
            R"("B":false,"I":-2147483648,"D":1E+300,"F":-0.5,"L":"-9223372036854775808",)"
            R"("P":"Infinity","M":"-Infinity","T":"2024-02-29T01:02:03Z",)"
            R"("G":"c9da6455-213d-42c9-9a79-3e9149a57833"})");
  CHECK(
      Render(e, Metadata::kMinimal) ==
      R"({"odata.etag":"W/\"datetime'2021-10-15T16%3A13%3A24.0914302Z'\"",)" + head +
          R"("B":false,"I":-2147483648,"D":1E+300,"F":-0.5,)"
          R"("L@odata.type":"Edm.Int64","L":"-9223372036854775808",)"
          R"("P@odata.type":"Edm.Double","P":"Infinity","M@odata.type":"Edm.Double","M":"-Infinity",)"
          R"("T@odata.type":"Edm.DateTime","T":"2024-02-29T01:02:03Z",)"
          R"("G@odata.type":"Edm.Guid","G":"c9da6455-213d-42c9-9a79-3e9149a57833"})");
}

TEST_CASE("a stored row renders as its decoded entity does") {
  Entity e = MustParse(
      R"({"PartitionKey":"p'\u00e9","RowKey":"r\"1","I":-7,"D":2.0,"F":123.45,"B":true,)"
      R"("L@odata.type":"Edm.Int64","L":"-5","N@odata.type":"Edm.Double","N":"-Infinity",)"
      R"("T@odata.type":"Edm.DateTime","T":"2024-02-29T01:02:03.4Z",)"
      R"("G@odata.type":"Edm.Guid","G":"c9da6455-213d-42c9-9a79-3e9149a57833",)"
      R"("Y@odata.type":"Edm.Binary","Y":"AP8B","S":"x\ny\u0001"})");
  e.timestamp = *storage::ParseDateTime("2021-10-15T16:13:24.0914302Z");
  std::string blob;
  storage::EntityRow row = StoredRow(e, &blob);
  for (Metadata level : {Metadata::kNone, Metadata::kMinimal, Metadata::kFull}) {
    JsonContext ctx{"http://127.0.0.1:10002/devstoreaccount1", "devstoreaccount1", "orders", level};
    std::string from_row;
    REQUIRE(AppendEntityRowJson(&from_row, row, ctx, false).ok());
    CHECK(from_row == Render(e, level));
    // As a point read's body: with the element's odata.metadata.
    std::string element_from_row, element_from_entity;
    REQUIRE(AppendEntityRowJson(&element_from_row, row, ctx, true).ok());
    AppendEntityJson(&element_from_entity, e, ctx, true, nullptr);
    CHECK(element_from_row == element_from_entity);
    if (level != Metadata::kNone) {
      CHECK(element_from_row.find(R"("odata.metadata":"http://127.0.0.1:10002/devstoreaccount1/)"
                                  R"($metadata#orders/@Element")") != std::string::npos);
    }
  }
  // A row whose properties do not decode is an error, not a body.
  row.properties = std::string_view(
      "\x01\x01\x01"
      "a\x09",
      5);
  std::string out;
  JsonContext ctx{"http://h/a", "a", "t", Metadata::kMinimal};
  CHECK(AppendEntityRowJson(&out, row, ctx, false).code() == storage::StatusCode::kCorruption);
  CHECK(AppendEntityRowJson(&out, row, ctx, true).code() == storage::StatusCode::kCorruption);
  CHECK(out.empty());
}

TEST_CASE("an entity whose JSON outgrows the writer's kept buffer renders whole") {
  // 20,000 control characters become 120,000 bytes of \u0001 escapes; the
  // binary value is 3 KiB of base64.
  Entity e = MustParse(R"({"PartitionKey":"p","RowKey":"r"})");
  e.timestamp = *storage::ParseDateTime("2021-10-15T16:13:24.0914302Z");
  e.properties.push_back({"S", Value::String(std::string(20000, '\x01'))});
  e.properties.push_back({"Y", Value::FromBinary(std::string(2304, '\xff'))});
  std::string blob;
  storage::EntityRow row = StoredRow(e, &blob);
  JsonContext ctx{"http://h/a", "a", "t", Metadata::kMinimal};
  std::string from_row = "[";
  REQUIRE(AppendEntityRowJson(&from_row, row, ctx, false).ok());
  CHECK(from_row.substr(1) == Render(e, Metadata::kMinimal));
  auto parsed = nlohmann::json::parse(from_row.substr(1));
  CHECK(parsed["S"].get<std::string>() == std::string(20000, '\x01'));
  CHECK(parsed["Y"].get<std::string>() == std::string(3072, '/'));
  CHECK(parsed["Y@odata.type"] == "Edm.Binary");
}

TEST_CASE("random entities render within their bound, as JSON, the same from a row") {
  // The writer trusts EntityJsonBound / EntityRowJsonBound for the room it
  // writes in: entities built to reach them (escapes, maximal names,
  // extreme numbers, every metadata level, $select with missing and
  // escaped names) must stay within them and parse back.
  std::mt19937 rng(20261124);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  const std::vector<std::string> pieces = {
      "a",    "Z",    "0",    " ",  "\"",       "\\",           "/",
      "\x01", "\x1f", "\x7f", "\n", "\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x98\x80",
      "\xff", "'",    "%"};
  // Text of up to `max` bytes; one time in four all of one piece, such as
  // "\x01" or "\xff", each byte of which JSON writes as six.
  auto text = [&](size_t max) {
    std::string t;
    size_t n = pick(max + 1);
    bool uniform = pick(4) == 0;
    const std::string& only = pieces[pick(pieces.size())];
    while (t.size() < n) t += uniform ? only : pieces[pick(pieces.size())];
    return t;
  };
  auto name = [&] {
    static const std::string first = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_";
    static const std::vector<std::string> rest = {"a", "Z", "9", "_", "\xc3\xa9", "\xe4\xb8\xad"};
    std::string n(1, first[pick(first.size())]);
    size_t len = pick(8) == 0 ? 255 : 1 + pick(12);
    for (size_t i = 1; i < len; ++i) n += rest[pick(rest.size())];
    return n;
  };
  auto value = [&]() -> Value {
    switch (pick(8)) {
      case 0:
        return Value::String(text(pick(4) == 0 ? 2000 : 20));
      case 1: {
        std::string bytes(pick(300), '\0');
        for (char& c : bytes) c = static_cast<char>(rng());
        return Value::FromBinary(bytes);
      }
      case 2:
        return Value::Boolean(pick(2) == 1);
      case 3:
        return Value::Int32(pick(2) ? INT32_MIN : static_cast<int32_t>(rng()));
      case 4:
        return Value::Int64(pick(2) ? INT64_MIN : static_cast<int64_t>(rng()) * 977);
      case 5: {
        const double special[] = {-0.0, 1e308,    -4.9e-324, 1.0 / 3,
                                  NAN,  INFINITY, -INFINITY, 123.45};
        return Value::Double(special[pick(8)]);
      }
      case 6:
        return Value::DateTimeTicks(pick(2) ? storage::kMaxDateTimeTicks
                                            : static_cast<int64_t>(rng()) * 1000003);
      default: {
        storage::Guid g;
        for (auto& b : g.bytes) b = static_cast<uint8_t>(rng());
        return Value::FromGuid(g);
      }
    }
  };
  for (int round = 0; round < 3000; ++round) {
    Entity e;
    e.partition_key = text(pick(6) == 0 ? 1000 : 16);
    e.row_key = text(pick(6) == 0 ? 1000 : 16);
    e.timestamp = pick(2) ? storage::kMaxDateTimeTicks : static_cast<int64_t>(rng()) * 7919;
    size_t count = pick(10) == 0 ? 252 : pick(4);
    for (size_t i = 0; i < count; ++i) {
      std::string n = name() + std::to_string(i);  // distinct names
      e.properties.push_back({n, value()});
    }
    std::string base = "http://h" + text(8) + "/a";
    std::string table = "t" + text(6);
    JsonContext ctx{base, "acct", table, static_cast<Metadata>(pick(3))};
    bool element = pick(2) == 1;
    std::vector<std::string> select;
    for (size_t i = pick(5); i > 0; --i) {
      select.push_back(e.properties.empty() || pick(3) == 0 ? text(10)
                                                            : e.properties[pick(count)].name);
    }
    const std::vector<std::string>* sel = pick(2) ? &select : nullptr;
    INFO("round " << round);

    std::string out = "[";
    AppendEntityJson(&out, e, ctx, element, sel);
    REQUIRE(out.size() - 1 <= EntityJsonBound(e, ctx, element, sel));
    auto parsed = nlohmann::json::parse(out.substr(1), nullptr, false);
    REQUIRE_FALSE(parsed.is_discarded());
    CHECK(parsed.is_object());

    std::string blob;
    storage::EntityRow row = StoredRow(e, &blob);
    std::string from_row;
    REQUIRE(AppendEntityRowJson(&from_row, row, ctx, element).ok());
    REQUIRE(from_row.size() <= EntityRowJsonBound(row, e.properties.size(), ctx, element));
    std::string from_entity;
    AppendEntityJson(&from_entity, e, ctx, element, nullptr);
    CHECK(from_row == from_entity);
  }
}

TEST_CASE("select renders missing properties as null") {
  Entity e = MustParse(R"({"PartitionKey":"p","RowKey":"r","A":1})");
  std::vector<std::string> select{"A", "Missing", "RowKey"};
  std::string out;
  JsonContext ctx{"http://h/a", "a", "t", Metadata::kNone};
  AppendEntityJson(&out, e, ctx, false, &select);
  CHECK(out == R"({"RowKey":"r","A":1,"Missing":null})");
}

TEST_CASE("continuation tokens") {
  CHECK(EncodeContinuation("Smith") == "1!8!U21pdGg-");
  CHECK(EncodeContinuation("CabQuery") == "1!12!Q2FiUXVlcnk-");
  CHECK(EncodeContinuation("") == "1!0!");
  CHECK(DecodeContinuation("1!8!U21pdGg-") == "Smith");
  CHECK(DecodeContinuation("1!0!") == "");
  CHECK_FALSE(DecodeContinuation("garbage").has_value());
  CHECK_FALSE(DecodeContinuation("1!9!U21pdGg-").has_value());
}

TEST_CASE("resource paths") {
  ResourcePath p;
  CHECK_FALSE(ParseResourcePath("/Tables", &p));
  CHECK(p.kind == ResourceKind::kTables);
  CHECK_FALSE(ParseResourcePath("/Tables('orders')", &p));
  CHECK(p.kind == ResourceKind::kTable);
  CHECK(p.table == "orders");
  CHECK_FALSE(ParseResourcePath("/$batch", &p));
  CHECK(p.kind == ResourceKind::kBatch);
  CHECK_FALSE(ParseResourcePath("/orders()", &p));
  CHECK(p.kind == ResourceKind::kEntities);
  CHECK_FALSE(ParseResourcePath("/orders(PartitionKey='O''Brien',RowKey='')", &p));
  CHECK(p.kind == ResourceKind::kEntity);
  CHECK(p.partition_key == "O'Brien");
  CHECK(p.row_key == "");
  CHECK(ParseResourcePath("/orders(PartitionKey='a/b',RowKey='1')", &p)->error ==
        AzureError::kInvalidInput);
  CHECK(ParseResourcePath("/orders(PartitionKey='a#b',RowKey='1')", &p)->error ==
        AzureError::kOutOfRangeInput);
  CHECK(ParseResourcePath("/orders(RowKey='1',PartitionKey='a')", &p)->error ==
        AzureError::kInvalidInput);
  CHECK(ParseResourcePath("/orders/extra", &p)->error == AzureError::kInvalidUri);
  // One trailing slash names the same resource; two do not.
  CHECK_FALSE(ParseResourcePath("/Tables/", &p));
  CHECK(p.kind == ResourceKind::kTables);
  CHECK_FALSE(ParseResourcePath("/Tables('orders')/", &p));
  CHECK(p.kind == ResourceKind::kTable);
  CHECK(p.table == "orders");
  CHECK_FALSE(ParseResourcePath("/orders/", &p));
  CHECK(p.kind == ResourceKind::kEntities);
  CHECK(ParseResourcePath("/Tables//", &p)->error == AzureError::kInvalidUri);
}

TEST_CASE("format negotiation") {
  Metadata m;
  bool atom = false;
  CHECK_FALSE(NegotiateFormat("", "application/json;odata=nometadata", "2019-02-02", &m, &atom));
  CHECK(m == Metadata::kNone);
  CHECK_FALSE(NegotiateFormat("application/json;odata=fullmetadata", "application/json",
                              "2019-02-02", &m, &atom));
  CHECK(m == Metadata::kFull);
  CHECK_FALSE(
      NegotiateFormat("", "application/json; odata=minimalmetadata", "2019-02-02", &m, &atom));
  CHECK(m == Metadata::kMinimal);
  CHECK_FALSE(NegotiateFormat("", "application/json", "2019-02-02", &m, &atom));
  CHECK(m == Metadata::kMinimal);
  CHECK(NegotiateFormat("", "application/json;odata=verbose", "2019-02-02", &m, &atom)->error ==
        AzureError::kJsonVerboseFormatNotSupported);
  CHECK(NegotiateFormat("", "application/atom+xml", "2019-02-02", &m, &atom)->error ==
        AzureError::kAtomFormatNotSupported);
  CHECK(NegotiateFormat("", "", "2019-02-02", &m, &atom)->error ==
        AzureError::kAtomFormatNotSupported);
  CHECK(NegotiateFormat("", "application/json", "2012-02-12", &m, &atom)->error ==
        AzureError::kJsonFormatNotSupported);
}

}  // namespace cerulean::server

namespace cerulean::server {

TEST_CASE("deep nesting is InvalidInput on both parse paths, without recursion") {
  const std::string deep = std::string(500000, '[') + std::string(500000, ']');
  CHECK(ParseError(deep) == AzureError::kInvalidInput);
  CHECK(ParseError(R"({"PartitionKey":"p","RowKey":"r","A":)" + deep + "}") ==
        AzureError::kInvalidInput);
  std::string objects;
  for (int i = 0; i < 200000; ++i) objects += "{\"a\":";
  CHECK(ParseError(objects + "1" + std::string(200000, '}')) == AzureError::kInvalidInput);
  // A number beyond 64 bits sends the body to the slow (nlohmann SAX) path.
  CHECK(ParseError(R"({"PartitionKey":"p","RowKey":"r","Huge":123456789012345678901234567,"A":)" +
                   deep + "}") == AzureError::kInvalidInput);
  std::string table;
  CHECK(ParseTableBody(deep, &table));
}

}  // namespace cerulean::server
