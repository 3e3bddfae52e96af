#include "server/formats/entity_json.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <list>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>

#include "server/formats/ascii.h"
#include "server/formats/base64.h"
#include "server/formats/escape.h"
#include "server/formats/url.h"
#include "storage/codec.h"
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

// One member of a flat JSON object, as the parser saw it. The views point
// into the parser's buffers (see FlatObject).
struct Member {
  enum class Kind { kNull, kBool, kInt, kUint, kFloat, kString } kind = Kind::kNull;
  std::string_view name;
  std::string_view text;  // string value, or number text for floats (slow path)
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
};

// Collects the members of one flat JSON object; rejects nesting.
class FlatObjectSax : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::vector<Member> members;
  // What members' names and texts view (a list: its strings never move, and an empty one allocates
  // nothing).
  std::list<std::string>* strings = nullptr;
  bool nested = false;

  bool null() override { return Add(Member::Kind::kNull); }
  bool boolean(bool v) override {
    if (!Add(Member::Kind::kBool)) return false;
    members.back().b = v;
    return true;
  }
  bool number_integer(number_integer_t v) override {
    if (!Add(Member::Kind::kInt)) return false;
    members.back().i = v;
    return true;
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (!Add(Member::Kind::kUint)) return false;
    members.back().u = v;
    return true;
  }
  bool number_float(number_float_t v, const string_t& raw) override {
    if (!Add(Member::Kind::kFloat)) return false;
    members.back().d = v;
    members.back().text = strings->emplace_back(raw);
    return true;
  }
  bool string(string_t& v) override {
    if (!Add(Member::Kind::kString)) return false;
    members.back().text = strings->emplace_back(std::move(v));
    return true;
  }
  bool binary(binary_t&) override { return Fail(); }
  bool start_object(std::size_t) override {
    if (depth_++ > 0) return Fail();
    return true;
  }
  bool key(string_t& k) override {
    pending_key_ = std::move(k);
    return true;
  }
  bool end_object() override {
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override { return Fail(); }
  bool end_array() override { return Fail(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }
  int depth() const { return depth_; }

 private:
  bool Add(Member::Kind kind) {
    if (depth_ != 1) return Fail();
    Member m;
    m.kind = kind;
    m.name = strings->emplace_back(std::move(pending_key_));
    members.push_back(std::move(m));
    return true;
  }
  bool Fail() {
    nested = true;
    return false;
  }
  int depth_ = 0;
  std::string pending_key_;
};

// The members of a flat JSON object and the buffers their views point into.
struct FlatObject {
  std::vector<Member> members;
  // A parser of this object's own, for a large body (else the thread's).
  std::optional<simdjson::dom::parser> parser;
  std::string padded;
  // Strings of the slow path (a list: they never move).
  std::list<std::string> strings;
};

// The slow path of ParseFlatObject, for the numbers simdjson refuses that
// JSON allows: integers beyond 64 bits (nlohmann reads them as doubles,
// which is what an untyped number becomes in Azure).
std::optional<ErrorReply> ParseFlatObjectWithNumbersAsDoubles(std::string_view body,
                                                              FlatObject* out) {
  FlatObjectSax sax;
  sax.strings = &out->strings;
  bool ok = nlohmann::json::sax_parse(body.begin(), body.end(), &sax,
                                      nlohmann::json::input_format_t::json, true);
  if (!ok || sax.nested || sax.depth() != 0) return ErrorReply(AzureError::kInvalidInput);
  out->members = std::move(sax.members);
  return std::nullopt;
}

// The date of an ETag as it appears in one: the DateTime with ':' written
// %3A ("2024-01-02T03%3A04%3A05.1234567Z").
void AppendETagDate(std::string* out, int64_t ticks) { storage::AppendDateTime(out, ticks, "%3A"); }

// Bodies up to this size are parsed by a parser kept per thread (its
// buffers are reused); larger ones by a parser of their own, so that no
// thread keeps megabytes after one large request.
constexpr size_t kReusedParserBytes = 64 * 1024;

// Parses `body` as one flat JSON object (RFC 8259, strict: valid UTF-8, no
// trailing content); nested objects and arrays are refused. simdjson
// (profiled: nlohmann's SAX lexer was a third of an insert's instructions).
// The members view buffers of `*out` or of the thread's parser: they are
// valid until `*out` is destroyed or this thread parses again.
std::optional<ErrorReply> ParseFlatObject(std::string_view body, FlatObject* out) {
  const ErrorReply invalid(AzureError::kInvalidInput);
  thread_local simdjson::dom::parser reused_parser;
  thread_local std::string reused_buffer;
  const bool large = body.size() > kReusedParserBytes;
  simdjson::dom::parser& parser = large ? out->parser.emplace() : reused_parser;
  std::string& padded = large ? out->padded : reused_buffer;
  // A byte order mark is allowed (and ignored) before the document.
  if (body.starts_with("\xEF\xBB\xBF")) body.remove_prefix(3);
  // simdjson reads up to SIMDJSON_PADDING bytes past the end.
  padded.assign(body);
  padded.append(simdjson::SIMDJSON_PADDING, '\0');
  simdjson::dom::element document;
  simdjson::error_code error = parser.parse(padded.data(), body.size(), false).get(document);
  if (error == simdjson::NUMBER_ERROR) return ParseFlatObjectWithNumbersAsDoubles(body, out);
  simdjson::dom::object object;
  if (error || document.get_object().get(object)) return invalid;
  std::vector<Member>& members = out->members;
  members.clear();
  members.reserve(object.size());
  for (simdjson::dom::key_value_pair field : object) {
    Member& m = members.emplace_back();
    m.name = field.key;
    simdjson::dom::element v = field.value;
    switch (v.type()) {
      case simdjson::dom::element_type::NULL_VALUE:
        m.kind = Member::Kind::kNull;
        break;
      case simdjson::dom::element_type::BOOL:
        m.kind = Member::Kind::kBool;
        m.b = v.get_bool().value_unsafe();
        break;
      case simdjson::dom::element_type::INT64:
        m.kind = Member::Kind::kInt;
        m.i = v.get_int64().value_unsafe();
        break;
      case simdjson::dom::element_type::UINT64:
        m.kind = Member::Kind::kUint;
        m.u = v.get_uint64().value_unsafe();
        break;
      case simdjson::dom::element_type::DOUBLE:
        m.kind = Member::Kind::kFloat;
        m.d = v.get_double().value_unsafe();
        break;
      case simdjson::dom::element_type::STRING:
        m.kind = Member::Kind::kString;
        m.text = v.get_string().value_unsafe();
        break;
      default:  // object or array
        return invalid;
    }
  }
  return std::nullopt;
}

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

// Parses a decimal integer string strictly (optional '-', digits).
template <typename T>
std::optional<T> ParseInteger(std::string_view s) {
  if (s.empty()) return std::nullopt;
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> ParseDoubleText(std::string_view s) {
  if (IEquals(s, "NaN")) return std::numeric_limits<double>::quiet_NaN();
  if (IEquals(s, "Infinity") || IEquals(s, "INF")) return std::numeric_limits<double>::infinity();
  if (IEquals(s, "-Infinity") || IEquals(s, "-INF"))
    return -std::numeric_limits<double>::infinity();
  if (s.empty()) return std::nullopt;
  double d = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return d;
}

std::optional<double> MemberAsDouble(const Member& m) {
  switch (m.kind) {
    case Member::Kind::kInt:
      return static_cast<double>(m.i);
    case Member::Kind::kUint:
      return static_cast<double>(m.u);
    case Member::Kind::kFloat:
      return m.d;
    case Member::Kind::kString:
      return ParseDoubleText(m.text);
    default:
      return std::nullopt;
  }
}

// Converts a member to a typed value (annotation `type` if given).
std::optional<ErrorReply> ConvertValue(const Member& m, std::optional<EdmType> type, Value* out) {
  // Made only when needed: an ErrorReply holds a string (ten values per
  // entity came through here).
  auto invalid = [] { return ErrorReply(AzureError::kInvalidInput); };
  if (!type) {
    switch (m.kind) {
      case Member::Kind::kString:
        *out = Value::String(std::string(m.text));
        break;
      case Member::Kind::kBool:
        *out = Value::Boolean(m.b);
        break;
      case Member::Kind::kInt:
        if (m.i >= INT32_MIN && m.i <= INT32_MAX)
          *out = Value::Int32(static_cast<int32_t>(m.i));
        else
          *out = Value::Double(static_cast<double>(m.i));
        break;
      case Member::Kind::kUint:
        if (m.u <= INT32_MAX)
          *out = Value::Int32(static_cast<int32_t>(m.u));
        else
          *out = Value::Double(static_cast<double>(m.u));
        break;
      case Member::Kind::kFloat:
        *out = Value::Double(m.d);
        break;
      case Member::Kind::kNull:
        return invalid();
    }
  } else {
    switch (*type) {
      case EdmType::kString:
        if (m.kind != Member::Kind::kString) return invalid();
        *out = Value::String(std::string(m.text));
        break;
      case EdmType::kBoolean:
        if (m.kind == Member::Kind::kBool)
          *out = Value::Boolean(m.b);
        else if (m.kind == Member::Kind::kString && (m.text == "true" || m.text == "false"))
          *out = Value::Boolean(m.text == "true");
        else
          return invalid();
        break;
      case EdmType::kInt32: {
        std::optional<int32_t> v;
        if (m.kind == Member::Kind::kInt && m.i >= INT32_MIN && m.i <= INT32_MAX)
          v = static_cast<int32_t>(m.i);
        else if (m.kind == Member::Kind::kUint && m.u <= INT32_MAX)
          v = static_cast<int32_t>(m.u);
        else if (m.kind == Member::Kind::kString)
          v = ParseInteger<int32_t>(m.text);
        if (!v) return invalid();
        *out = Value::Int32(*v);
        break;
      }
      case EdmType::kInt64: {
        std::optional<int64_t> v;
        if (m.kind == Member::Kind::kInt)
          v = m.i;
        else if (m.kind == Member::Kind::kUint && m.u <= INT64_MAX)
          v = static_cast<int64_t>(m.u);
        else if (m.kind == Member::Kind::kString)
          v = ParseInteger<int64_t>(m.text);
        if (!v) return invalid();
        *out = Value::Int64(*v);
        break;
      }
      case EdmType::kDouble: {
        auto v = MemberAsDouble(m);
        if (!v) return invalid();
        *out = Value::Double(*v);
        break;
      }
      case EdmType::kDateTime: {
        if (m.kind != Member::Kind::kString) return invalid();
        auto ticks = storage::ParseDateTime(m.text);
        if (!ticks) return invalid();
        if (auto err = ValidateDateTimeRange(m.name, *ticks)) return err;
        *out = Value::DateTimeTicks(*ticks);
        break;
      }
      case EdmType::kGuid: {
        if (m.kind != Member::Kind::kString) return invalid();
        auto g = storage::ParseGuid(m.text);
        if (!g) return invalid();
        *out = Value::FromGuid(*g);
        break;
      }
      case EdmType::kBinary: {
        if (m.kind != Member::Kind::kString) return invalid();
        auto bytes = Base64Decode(m.text);
        if (!bytes) return invalid();
        *out = Value::FromBinary(std::move(*bytes));
        break;
      }
    }
  }
  return ValidateValueSize(*out);
}

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

std::string_view JsonContentType(Metadata level) {
  switch (level) {
    case Metadata::kNone:
      return "application/json;odata=nometadata;streaming=true;charset=utf-8";
    case Metadata::kFull:
      return "application/json;odata=fullmetadata;streaming=true;charset=utf-8";
    case Metadata::kMinimal:
      break;
  }
  return "application/json;odata=minimalmetadata;streaming=true;charset=utf-8";
}

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

std::optional<ErrorReply> CheckParsedEntity(const Entity& entity, bool keys_from_body,
                                            bool have_keys) {
  if (keys_from_body) {
    if (!have_keys) return ErrorReply(AzureError::kPropertiesNeedValue);
    if (auto err = ValidateBodyKey("PartitionKey", entity.partition_key)) return err;
    if (auto err = ValidateBodyKey("RowKey", entity.row_key)) return err;
  }
  return ValidateEntityLimits(entity);
}

namespace {

// A cheap hash of a property name (its length and its first and last eight
// bytes, mixed): names are short, and the index above never relies on it
// for more than speed.
uint64_t NameHash(std::string_view s) {
  uint64_t a = 0, b = 0;
  if (s.size() >= 8) {
    std::memcpy(&a, s.data(), 8);
    std::memcpy(&b, s.data() + s.size() - 8, 8);
  } else if (s.size() >= 4) {
    uint32_t x, y;
    std::memcpy(&x, s.data(), 4);
    std::memcpy(&y, s.data() + s.size() - 4, 4);
    a = x;
    b = y;
  } else {
    for (char c : s) a = (a << 8) | static_cast<unsigned char>(c);
  }
  uint64_t h = (a ^ (b * 0x9E3779B97F4A7C15ULL)) + s.size();
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ULL;
  return h ^ (h >> 29);
}

}  // namespace

std::optional<ErrorReply> ParseEntityBody(std::string_view body, bool keys_from_body,
                                          Entity* entity) {
  FlatObject object;
  if (auto err = ParseFlatObject(body, &object)) return err;
  std::vector<Member>& members = object.members;

  // Index members and annotations (by the name they annotate) by the hash
  // of the name, strings compared only when hashes are equal (sorting the
  // names themselves was a fifth of a batch entity's instructions). Up to
  // kSmall members (nearly every entity): two open-addressing tables on the
  // stack; beyond, arrays sorted by (hash, name) and binary search. The hash
  // is a cheap one (NameHash): names made to collide cost string
  // comparisons, at most kSmall² in the tables and O(n log n) beyond.
  // The same name twice is an error.
  static constexpr std::string_view kTypeSuffix = "@odata.type";
  // Trivial (no member initialisers), so that the array below costs nothing.
  struct Named {
    uint64_t hash;
    const char* data;  // the member's name, or the name it annotates
    size_t size;
    size_t member;
    std::string_view name() const { return {data, size}; }
  };
  const size_t n = members.size();
  Named on_stack[64];
  std::vector<Named> on_heap;
  Named* index = on_stack;
  if (n > std::size(on_stack)) {
    on_heap.resize(n);
    index = on_heap.data();
  }
  // Values fill the index from the front, annotations from the back.
  size_t value_count = 0, annotation_start = n;
  const auto hasher = NameHash;
  for (size_t i = 0; i < n; ++i) {
    std::string_view name = members[i].name;
    if (name.size() > kTypeSuffix.size() && name.ends_with(kTypeSuffix)) {
      name.remove_suffix(kTypeSuffix.size());
      index[--annotation_start] = {hasher(name), name.data(), name.size(), i};
    } else {
      index[value_count++] = {hasher(name), name.data(), name.size(), i};
    }
  }
  const std::span<Named> values(index, value_count);
  const std::span<Named> annotations(index + annotation_start, n - annotation_start);
  constexpr size_t kSmall = 32;
  constexpr size_t kSlots = 64;  // at least twice kSmall: probe chains stay short and end
  const bool small = n <= kSmall;
  // Slot -> 1 + position in `index`, 0 when empty.
  uint8_t value_slots[kSlots];
  uint8_t annotation_slots[kSlots];
  // Adds index[i] to `slots`; false iff its name is there already.
  auto insert = [&](uint8_t* slots, size_t i) {
    const Named& e = index[i];
    for (size_t slot = e.hash & (kSlots - 1);; slot = (slot + 1) & (kSlots - 1)) {
      if (slots[slot] == 0) {
        slots[slot] = static_cast<uint8_t>(i + 1);
        return true;
      }
      const Named& o = index[slots[slot] - 1];
      if (o.hash == e.hash && o.name() == e.name()) return false;
    }
  };
  auto before = [](const Named& a, const Named& b) {
    return a.hash != b.hash ? a.hash < b.hash : a.name() < b.name();
  };
  if (small) {
    std::memset(value_slots, 0, sizeof value_slots);
    std::memset(annotation_slots, 0, sizeof annotation_slots);
    for (size_t i = 0; i < value_count; ++i) {
      if (!insert(value_slots, i)) return ErrorReply(AzureError::kDuplicatePropertiesSpecified);
    }
    for (size_t i = annotation_start; i < n; ++i) {
      if (!insert(annotation_slots, i)) {
        return ErrorReply(AzureError::kDuplicatePropertiesSpecified);
      }
    }
  } else {
    for (std::span<Named> part : {values, annotations}) {
      std::sort(part.begin(), part.end(), before);
      for (size_t i = 1; i < part.size(); ++i) {
        if (part[i].hash == part[i - 1].hash && part[i].name() == part[i - 1].name()) {
          return ErrorReply(AzureError::kDuplicatePropertiesSpecified);
        }
      }
    }
  }
  // The member named `name` among the values (annotations = false) or the
  // annotations, or nullptr.
  auto find = [&](bool in_annotations, std::string_view name) -> const size_t* {
    const uint64_t h = hasher(name);
    if (small) {
      const uint8_t* slots = in_annotations ? annotation_slots : value_slots;
      for (size_t slot = h & (kSlots - 1); slots[slot] != 0; slot = (slot + 1) & (kSlots - 1)) {
        const Named& o = index[slots[slot] - 1];
        if (o.hash == h && o.name() == name) return &o.member;
      }
      return nullptr;
    }
    const std::span<const Named> part = in_annotations ? annotations : values;
    const Named key{h, name.data(), name.size(), 0};
    auto it = std::lower_bound(part.begin(), part.end(), key, before);
    if (it != part.end() && it->hash == h && it->name() == name) return &it->member;
    return nullptr;
  };
  for (const Named& a : annotations) {
    if (a.name().starts_with("odata.") || a.name() == "Timestamp") continue;
    if (find(false, a.name()) == nullptr) return ErrorReply(AzureError::kInvalidInput);
    if (members[a.member].kind != Member::Kind::kString) {
      return ErrorReply(AzureError::kInvalidInput);
    }
  }

  entity->properties.clear();
  bool have_pk = false, have_rk = false;
  entity->properties.reserve(value_count);
  for (Member& m : members) {
    std::string_view name = m.name;
    if (name.starts_with("odata.") || name.find('@') != std::string_view::npos) continue;
    if (name == "Timestamp") continue;
    std::optional<EdmType> type;
    if (const size_t* annotation = find(true, name)) {
      type = ParseEdmTypeName(members[*annotation].text);
      if (!type) return ErrorReply(AzureError::kInvalidInput);
    }
    if (name == "PartitionKey" || name == "RowKey") {
      if (!keys_from_body) continue;
      if (m.kind == Member::Kind::kNull) return ErrorReply(AzureError::kPropertiesNeedValue);
      if (m.kind != Member::Kind::kString || (type && *type != EdmType::kString)) {
        return ErrorReply(AzureError::kInvalidInput);
      }
      if (name == "PartitionKey") {
        entity->partition_key = m.text;
        have_pk = true;
      } else {
        entity->row_key = m.text;
        have_rk = true;
      }
      continue;
    }
    if (auto err = ValidatePropertyName(name)) return err;
    if (m.kind == Member::Kind::kNull) continue;  // null: not stored
    // Converted in place (no temporary Property to move and destroy).
    storage::Property& p = entity->properties.emplace_back();
    if (auto err = ConvertValue(m, type, &p.value)) return err;
    p.name.assign(m.name);
  }
  return CheckParsedEntity(*entity, keys_from_body, have_pk && have_rk);
}

std::optional<ErrorReply> ParseTableBody(std::string_view body, std::string* table_name) {
  FlatObject object;
  if (auto err = ParseFlatObject(body, &object)) return err;
  for (const Member& m : object.members) {
    if (m.name != "TableName") continue;
    if (m.kind == Member::Kind::kNull) return ErrorReply(AzureError::kPropertiesNeedValue);
    if (m.kind != Member::Kind::kString) return ErrorReply(AzureError::kInvalidInput);
    *table_name = m.text;
    return std::nullopt;
  }
  return ErrorReply(AzureError::kPropertiesNeedValue);
}

void AppendETag(std::string* out, int64_t ticks) {
  // W/"datetime'2024-01-02T03%3A04%3A05.1234567Z'"
  out->append("W/\"datetime'");
  AppendETagDate(out, ticks);
  out->append("'\"");
}

std::string ETagFor(int64_t ticks) {
  std::string out;
  out.reserve(48);
  AppendETag(&out, ticks);
  return out;
}

std::optional<int64_t> ParseETag(std::string_view etag) {
  static constexpr std::string_view kPrefix = "/\"datetime'";  // after the W
  static constexpr std::string_view kSuffix = "'\"";
  if (etag.empty() || (etag[0] != 'W' && etag[0] != 'w')) return std::nullopt;
  etag.remove_prefix(1);
  if (!etag.starts_with(kPrefix) || !etag.ends_with(kSuffix) ||
      etag.size() < kPrefix.size() + kSuffix.size()) {
    return std::nullopt;
  }
  auto inner =
      PercentDecode(etag.substr(kPrefix.size(), etag.size() - kPrefix.size() - kSuffix.size()));
  if (!inner) return std::nullopt;
  auto ticks = storage::ParseDateTime(*inner);
  if (!ticks || std::string_view(ETagFor(*ticks)).substr(1) != etag) return std::nullopt;
  return ticks;
}

void AppendEntityPath(std::string* out, std::string_view table, std::string_view pk,
                      std::string_view rk) {
  auto quoted = [out](std::string_view v) {
    out->push_back('\'');
    for (size_t quote; (quote = v.find('\'')) != std::string_view::npos;) {
      out->append(v.substr(0, quote + 1)).push_back('\'');
      v.remove_prefix(quote + 1);
    }
    out->append(v).push_back('\'');
  };
  out->append(table).append("(PartitionKey=");
  quoted(pk);
  out->append(",RowKey=");
  quoted(rk);
  out->push_back(')');
}

std::string EntityPath(std::string_view table, std::string_view pk, std::string_view rk) {
  std::string out;
  out.reserve(table.size() + pk.size() + rk.size() + 32);
  AppendEntityPath(&out, table, pk, rk);
  return out;
}

namespace {

void AppendKey(std::string* out, bool* first, std::string_view name) {
  if (!*first) out->push_back(',');
  *first = false;
  AppendJsonString(out, name);
  out->push_back(':');
}

// Entities are written through a raw pointer into a buffer with room for an
// upper bound of their JSON, then appended to the body at once (callgrind,
// chrono-newest20: appending member by member to the body cost ~6,100
// instructions per entity, half of a 20-entity query's own work).
class EntityWriter {
 public:
  explicit EntityWriter(char* p) : p_(p) {}
  char* end() const { return p_; }

  void Put(std::string_view piece) { p_ = CopyBytes(p_, piece.data(), piece.size()); }
  void Char(char c) { *p_++ = c; }
  void String(std::string_view s) { p_ = WriteJsonString(p_, s); }
  // ,"name": for a name that needs escaping (a $select name, a literal).
  void Key(std::string_view name) {
    Comma();
    String(name);
    Char(':');
  }
  // ,"name": for a name JSON writes as it is: a property name (validated:
  // letters, digits, '_' and non-ASCII UTF-8, ValidatePropertyName) or a
  // literal.
  void PlainKey(std::string_view name) {
    Comma();
    Char('"');
    Put(name);
    Put("\":");
  }
  // ,"name@odata.type":"type"
  void TypeAnnotation(std::string_view name, std::string_view type) {
    Comma();
    Char('"');
    Put(name);
    Put("@odata.type\":\"");
    Put(type);
    Char('"');
  }
  void Value(std::string_view name, const storage::ValueView& v, Metadata level);
  void Head(std::string_view partition_key, std::string_view row_key, int64_t timestamp,
            const JsonContext& ctx, bool element, const std::vector<std::string>* select);

 private:
  void Comma() {
    if (!first_) *p_++ = ',';
    first_ = false;
  }

  char* p_;
  bool first_ = true;
};

// The most bytes EntityWriter::Value writes for a property: its name twice
// (member and annotation), the value escaped, and at most ~40 bytes of
// fixed-size value, ~30 of annotation and punctuation.
constexpr size_t kPropertyOverhead = 100;
size_t PropertyBound(size_t name_bytes, size_t value_bytes) {
  return 2 * name_bytes + JsonStringBound(value_bytes) + kPropertyOverhead;
}

void EntityWriter::Value(std::string_view name, const storage::ValueView& v, Metadata level) {
  bool annotate = level != Metadata::kNone;
  switch (v.type) {
    case EdmType::kString:
      PlainKey(name);
      String(v.bytes);
      break;
    case EdmType::kBinary:
      if (annotate) TypeAnnotation(name, "Edm.Binary");
      PlainKey(name);
      Char('"');
      p_ = WriteBase64(p_, v.bytes);
      Char('"');
      break;
    case EdmType::kBoolean:
      PlainKey(name);
      Put(v.boolean ? "true" : "false");
      break;
    case EdmType::kInt32:
      PlainKey(name);
      p_ = std::to_chars(p_, p_ + 24, v.integer).ptr;
      break;
    case EdmType::kInt64:
      if (annotate) TypeAnnotation(name, "Edm.Int64");
      PlainKey(name);
      Char('"');
      p_ = std::to_chars(p_, p_ + 24, v.integer).ptr;
      Char('"');
      break;
    case EdmType::kDouble:
      if (std::isfinite(v.dbl)) {
        PlainKey(name);
        p_ += storage::FormatDoubleTo(p_, v.dbl);
      } else {
        if (annotate) TypeAnnotation(name, "Edm.Double");
        PlainKey(name);
        Put(std::isnan(v.dbl) ? "\"NaN\"" : (v.dbl > 0 ? "\"Infinity\"" : "\"-Infinity\""));
      }
      break;
    case EdmType::kDateTime:
      if (annotate) TypeAnnotation(name, "Edm.DateTime");
      PlainKey(name);
      Char('"');
      p_ += storage::FormatDateTimeTo(p_, v.integer, ":");
      Char('"');
      break;
    case EdmType::kGuid:
      if (annotate) TypeAnnotation(name, "Edm.Guid");
      PlainKey(name);
      Char('"');
      storage::FormatGuidTo(p_, v.guid);
      p_ += storage::kGuidText;
      Char('"');
      break;
  }
}

bool Selected(const std::vector<std::string>* select, std::string_view name) {
  if (select == nullptr) return true;
  for (const auto& s : *select) {
    if (s == name) return true;
  }
  return false;
}

// The most bytes EntityWriter::Head writes.
size_t HeadBound(std::string_view partition_key, std::string_view row_key, const JsonContext& ctx,
                 bool element) {
  // Member names, the ETag and the Timestamp: fixed size.
  size_t n = 256 + JsonStringBound(partition_key.size()) + JsonStringBound(row_key.size());
  if (element) n += JsonStringBound(ctx.base.size() + ctx.table.size() + 32);
  if (ctx.level == Metadata::kFull) {
    // odata.type, odata.id and odata.editLink; the path's quotes doubled.
    size_t path = ctx.table.size() + 2 * (partition_key.size() + row_key.size()) + 32;
    n += JsonStringBound(ctx.account.size() + 1 + ctx.table.size()) +
         JsonStringBound(ctx.base.size() + 1 + path) + JsonStringBound(path) + 128;
  }
  return n;
}

// The members before the custom properties: metadata, keys, Timestamp.
void EntityWriter::Head(std::string_view partition_key, std::string_view row_key, int64_t timestamp,
                        const JsonContext& ctx, bool element,
                        const std::vector<std::string>* select) {
  if (element && ctx.level != Metadata::kNone) {
    PlainKey("odata.metadata");
    String(std::string(ctx.base) + "/$metadata#" + std::string(ctx.table) + "/@Element");
  }
  std::string path;
  if (ctx.level == Metadata::kFull) {
    path = EntityPath(ctx.table, partition_key, row_key);
    PlainKey("odata.type");
    String(std::string(ctx.account) + "." + std::string(ctx.table));
    PlainKey("odata.id");
    String(std::string(ctx.base) + "/" + path);
  }
  // The Timestamp formatted once, for the ETag and the Timestamp member:
  // "yyyy-MM-ddTHH:mm:ss[.fffffff]Z", its colons at 13 and 16.
  char ts[storage::kMaxDateTimeText];
  const std::string_view ts_text(ts, storage::FormatDateTimeTo(ts, timestamp, ":"));
  if (ctx.level != Metadata::kNone) {
    PlainKey("odata.etag");
    Put("\"W/\\\"datetime'");  // quotes escaped for JSON
    Put(ts_text.substr(0, 13));
    Put("%3A");
    Put(ts_text.substr(14, 2));
    Put("%3A");
    Put(ts_text.substr(17));
    Put("'\\\"\"");
  }
  if (ctx.level == Metadata::kFull) {
    PlainKey("odata.editLink");
    String(path);
  }
  if (Selected(select, "PartitionKey")) {
    PlainKey("PartitionKey");
    String(partition_key);
  }
  if (Selected(select, "RowKey")) {
    PlainKey("RowKey");
    String(row_key);
  }
  if (Selected(select, "Timestamp")) {
    if (ctx.level == Metadata::kFull) TypeAnnotation("Timestamp", "Edm.DateTime");
    PlainKey("Timestamp");
    Char('"');
    Put(ts_text);
    Char('"');
  }
}

// Calls write(buffer) with room for `bound` bytes and appends what it wrote
// (up to the returned end) to *out. Entities of up to 64 KiB of JSON are
// written in a buffer each thread keeps.
template <typename Write>
void AppendBounded(std::string* out, size_t bound, Write write) {
  constexpr size_t kKeptBytes = 64 * 1024;
  thread_local std::unique_ptr<char[]> kept;
  std::unique_ptr<char[]> large;
  char* buf;
  if (bound <= kKeptBytes) {
    if (!kept) kept = std::make_unique_for_overwrite<char[]>(kKeptBytes);
    buf = kept.get();
  } else {
    large = std::make_unique_for_overwrite<char[]>(bound);
    buf = large.get();
  }
  char* end = write(buf);
  assert(end <= buf + bound);  // else the bound is wrong: tested in entity_json_test.cc
  out->append(buf, static_cast<size_t>(end - buf));
}

}  // namespace

size_t EntityJsonBound(const Entity& e, const JsonContext& ctx, bool element,
                       const std::vector<std::string>* select) {
  size_t bound = 2 + HeadBound(e.partition_key, e.row_key, ctx, element);
  auto value_bytes = [](const Value& v) {
    return v.type() == EdmType::kString || v.type() == EdmType::kBinary ? v.view().bytes.size() : 0;
  };
  if (select == nullptr) {
    for (const auto& p : e.properties) bound += PropertyBound(p.name.size(), value_bytes(p.value));
  } else {
    for (const auto& name : *select) {
      const Value* v = e.Find(name);
      bound += v != nullptr ? PropertyBound(name.size(), value_bytes(*v))
                            : JsonStringBound(name.size()) + 8;
    }
  }
  return bound;
}

size_t EntityRowJsonBound(const storage::EntityRow& row, size_t property_count,
                          const JsonContext& ctx, bool element) {
  // Names and values are at most the encoding's bytes.
  return 2 + HeadBound(row.partition_key, row.row_key, ctx, element) +
         PropertyBound(0, row.properties.size()) + property_count * kPropertyOverhead;
}

void AppendEntityJson(std::string* out, const Entity& e, const JsonContext& ctx, bool element,
                      const std::vector<std::string>* select) {
  size_t bound = EntityJsonBound(e, ctx, element, select);
  AppendBounded(out, bound, [&](char* buf) {
    EntityWriter w(buf);
    w.Char('{');
    w.Head(e.partition_key, e.row_key, e.timestamp, ctx, element, select);
    if (select == nullptr) {
      for (const auto& p : e.properties) w.Value(p.name, p.value.view(), ctx.level);
    } else {
      for (const auto& name : *select) {
        if (name == "PartitionKey" || name == "RowKey" || name == "Timestamp") continue;
        const Value* v = e.Find(name);
        if (v != nullptr) {
          w.Value(name, v->view(), ctx.level);
        } else {
          w.Key(name);
          w.Put("null");
        }
      }
    }
    w.Char('}');
    return w.end();
  });
}

storage::Status AppendEntityRowJson(std::string* out, const storage::EntityRow& row,
                                    const JsonContext& ctx, bool element) {
  storage::PropertyReader reader;
  storage::Status s = reader.Open(row.properties);
  if (!s.ok()) return s;
  size_t bound = EntityRowJsonBound(row, reader.count(), ctx, element);
  size_t before = out->size();
  AppendBounded(out, bound, [&](char* buf) {
    EntityWriter w(buf);
    w.Char('{');
    w.Head(row.partition_key, row.row_key, row.timestamp, ctx, element, nullptr);
    std::string_view name;
    storage::ValueView value;
    while (reader.Next(&name, &value)) w.Value(name, value, ctx.level);
    w.Char('}');
    return w.end();
  });
  if (!reader.status().ok()) out->resize(before);
  return reader.status();
}

void AppendTableJson(std::string* out, std::string_view name, const JsonContext& ctx,
                     bool element) {
  bool first = true;
  out->push_back('{');
  if (element && ctx.level != Metadata::kNone) {
    AppendKey(out, &first, "odata.metadata");
    AppendJsonString(out, std::string(ctx.base) + "/$metadata#Tables/@Element");
  }
  if (ctx.level == Metadata::kFull) {
    std::string path = "Tables('" + std::string(name) + "')";
    AppendKey(out, &first, "odata.type");
    AppendJsonString(out, std::string(ctx.account) + ".Tables");
    AppendKey(out, &first, "odata.id");
    AppendJsonString(out, std::string(ctx.base) + "/" + path);
    AppendKey(out, &first, "odata.editLink");
    AppendJsonString(out, path);
  }
  AppendKey(out, &first, "TableName");
  AppendJsonString(out, name);
  out->push_back('}');
}

}  // namespace cerulean::server
