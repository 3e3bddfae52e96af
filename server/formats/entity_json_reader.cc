// The reading half of the JSON entity codec (entity_json.h): a request body
// parsed as one flat JSON object (simdjson), its members typed by their
// annotations and checked by Azure's rules (server/formats/entity_rules.h).
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <limits>
#include <list>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>

#include "server/formats/ascii.h"
#include "server/formats/base64.h"
#include "server/formats/entity_json.h"
#include "server/formats/entity_rules.h"
#include "storage/edm_text.h"

namespace cerulean::server {

using storage::EdmType;
using storage::Entity;
using storage::Value;

namespace {

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
  FlatObject() = default;
  FlatObject(const FlatObject&) = delete;  // `members` may point into it
  FlatObject& operator=(const FlatObject&) = delete;

  // `own_members`, or the vector kept per thread (see ParseFlatObject).
  std::vector<Member>* members = &own_members;
  std::vector<Member> own_members;
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
  out->own_members = std::move(sax.members);
  out->members = &out->own_members;
  return std::nullopt;
}

// Bodies up to this size are parsed by a parser kept per thread (its
// buffers are reused); larger ones by a parser of their own, so that no
// thread keeps megabytes after one large request.
constexpr size_t kReusedParserBytes = 64 * 1024;
// Objects of up to this many members are read into a vector kept per
// thread (an entity's members would otherwise take a heap block of a
// kilobyte or more per body, past malloc's per-thread cache); larger ones
// into their own.
constexpr size_t kReusedMembers = 256;

// Parses `body` as one flat JSON object (RFC 8259, strict: valid UTF-8, no
// trailing content); nested objects and arrays are refused. simdjson,
// because lexing the body is a large part of an insert's work.
// The members (*out->members: a vector of `*out` or one kept per thread)
// and the buffers they view (of `*out` or of the thread's parser) are
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
  thread_local std::vector<Member> reused_members;
  const size_t size = object.size();
  out->members = size <= kReusedMembers ? &reused_members : &out->own_members;
  std::vector<Member>& members = *out->members;
  members.clear();
  members.reserve(size);
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
  auto [p, ec] = storage::FromCharsDouble(s.data(), s.data() + s.size(), d);
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
        out->AssignString(m.text);
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
        out->AssignString(m.text);
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
  std::vector<Member>& members = *object.members;

  // Index members and annotations (by the name they annotate) by the hash
  // of the name, strings compared only when hashes are equal (sorting the
  // names themselves would compare strings on every entity). Up to
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
  entity->properties.reserve(value_count);
  EntityBodyRules rules(keys_from_body);
  for (Member& m : members) {
    std::string_view name = m.name;
    if (name.starts_with("odata.") || name.find('@') != std::string_view::npos) continue;
    std::optional<std::string_view> type_name;
    if (const size_t* annotation = find(true, name)) type_name = members[*annotation].text;
    BodyProperty kind;
    std::optional<EdmType> type;
    if (auto err = rules.Classify(name, type_name, m.kind == Member::Kind::kNull,
                                  m.kind == Member::Kind::kString, &kind, &type)) {
      return err;
    }
    switch (kind) {
      case BodyProperty::kIgnored:
        break;
      case BodyProperty::kPartitionKey:
        entity->partition_key = m.text;
        break;
      case BodyProperty::kRowKey:
        entity->row_key = m.text;
        break;
      case BodyProperty::kValue: {
        // Made in place, its value converted into it (no temporary Property
        // to move and destroy). Not emplace_back(name): a parenthesized
        // aggregate initialization, which clang before 16 does not take.
        storage::Property& p = entity->properties.emplace_back();
        p.name.assign(m.name.data(), m.name.size());
        if (auto err = ConvertValue(m, type, &p.value)) return err;
        break;
      }
    }
  }
  return rules.Finish(*entity);
}

std::optional<ErrorReply> ParseTableBody(std::string_view body, std::string* table_name) {
  FlatObject object;
  if (auto err = ParseFlatObject(body, &object)) return err;
  for (const Member& m : *object.members) {
    if (m.name != "TableName") continue;
    if (m.kind == Member::Kind::kNull) return ErrorReply(AzureError::kPropertiesNeedValue);
    if (m.kind != Member::Kind::kString) return ErrorReply(AzureError::kInvalidInput);
    *table_name = m.text;
    return std::nullopt;
  }
  return ErrorReply(AzureError::kPropertiesNeedValue);
}

}  // namespace cerulean::server
