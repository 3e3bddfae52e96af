// EDM-typed property values and the entity they belong to.
// Thread-safety: value types; safe to copy across threads.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace cerulean::storage {

// The Table service's EDM types. persistent: never renumber (stored in the
// property encoding, storage/codec.h).
enum class EdmType : uint8_t {
  kString = 1,
  kBoolean = 2,
  kInt32 = 3,
  kInt64 = 4,
  kDouble = 5,
  kDateTime = 6,
  kGuid = 7,
  kBinary = 8,
};

// "Edm.String" etc.
std::string_view EdmTypeName(EdmType type);

// 100 ns ticks since 0001-01-01T00:00:00Z (the .NET DateTime epoch), UTC.
struct DateTime {
  int64_t ticks = 0;
  friend bool operator==(const DateTime&, const DateTime&) = default;
};

// A GUID as its 16 bytes in the order of the canonical string
// ("c9da6455-213d-..." -> c9 da 64 55 21 3d ...), so byte order equals the
// .NET Guid.CompareTo order for the canonical form.
struct Guid {
  std::array<uint8_t, 16> bytes{};
  friend bool operator==(const Guid&, const Guid&) = default;
};

// Raw bytes of an Edm.Binary value.
struct Binary {
  std::string bytes;
  friend bool operator==(const Binary&, const Binary&) = default;
};

// A typed value without ownership: what Value::view() gives and what
// PropertyReader (storage/codec.h) reads out of an encoded entity. The member
// for `type` is set; `bytes` views a String's UTF-8 or a Binary's bytes.
struct ValueView {
  EdmType type = EdmType::kString;
  bool boolean = false;
  int64_t integer = 0;  // Int32, Int64, DateTime ticks
  double dbl = 0;
  Guid guid;
  std::string_view bytes;
};

// One typed value. Strings are UTF-8.
class Value {
 public:
  using Variant = std::variant<std::string, bool, int32_t, int64_t, double, DateTime, Guid, Binary>;

  Value() : v_(std::string()) {}
  static Value String(std::string s) {
    return Value(Variant(std::in_place_index<0>, std::move(s)));
  }
  static Value Boolean(bool b) { return Value(Variant(std::in_place_index<1>, b)); }
  static Value Int32(int32_t i) { return Value(Variant(std::in_place_index<2>, i)); }
  static Value Int64(int64_t i) { return Value(Variant(std::in_place_index<3>, i)); }
  static Value Double(double d) { return Value(Variant(std::in_place_index<4>, d)); }
  static Value DateTimeTicks(int64_t ticks) {
    return Value(Variant(std::in_place_index<5>, DateTime{ticks}));
  }
  static Value FromGuid(Guid g) { return Value(Variant(std::in_place_index<6>, g)); }
  static Value FromBinary(std::string bytes) {
    return Value(Variant(std::in_place_index<7>, Binary{std::move(bytes)}));
  }

  EdmType type() const { return static_cast<EdmType>(v_.index() + 1); }

  // Makes this a String / Binary holding a copy of `s`, reusing the string
  // already held when there is one (decoders fill values in place).
  void AssignString(std::string_view s) {
    if (auto* p = std::get_if<0>(&v_)) {
      p->assign(s);
    } else {
      v_.emplace<0>(s);
    }
  }
  void AssignBinary(std::string_view s) {
    if (auto* p = std::get_if<7>(&v_)) {
      p->bytes.assign(s);
    } else {
      v_.emplace<7>(Binary{std::string(s)});
    }
  }

  // REQUIRES: type() matches the accessor.
  const std::string& string() const { return std::get<0>(v_); }
  bool boolean() const { return std::get<1>(v_); }
  int32_t int32() const { return std::get<2>(v_); }
  int64_t int64() const { return std::get<3>(v_); }
  double dbl() const { return std::get<4>(v_); }
  int64_t ticks() const { return std::get<5>(v_).ticks; }
  const Guid& guid() const { return std::get<6>(v_); }
  const std::string& binary() const { return std::get<7>(v_).bytes; }

  const Variant& variant() const { return v_; }

  // A view of this value, valid while it is not modified.
  ValueView view() const;
  // Makes this a copy of `v` (reusing the string already held, as
  // AssignString does).
  void Assign(const ValueView& v);

  // Bitwise equality of type and value (NaN == NaN here); for tests and
  // round-trip checks, not for $filter semantics.
  friend bool operator==(const Value& a, const Value& b);

 private:
  explicit Value(Variant v) : v_(std::move(v)) {}
  Variant v_;
};

// A named property.
struct Property {
  std::string name;
  Value value;
  friend bool operator==(const Property&, const Property&) = default;
};

// An entity: keys, server timestamp, and custom properties in write order.
// Property names are unique within `properties`.
struct Entity {
  std::string partition_key;
  std::string row_key;
  int64_t timestamp = 0;  // DateTime ticks of the last write
  std::vector<Property> properties;

  // The property named `name`, or nullptr. The pointer lives as long as the
  // entity is not modified.
  const Value* Find(std::string_view name) const;
  friend bool operator==(const Entity&, const Entity&) = default;
};

// Ordinal comparison of two UTF-8 strings in UTF-16 code unit order, as .NET's
// String.CompareOrdinal does (differs from byte order only for characters at
// or above U+E000 versus supplementary characters). Returns <0, 0, >0.
int CompareOrdinal(std::string_view a, std::string_view b);

// Length in UTF-16 code units of a UTF-8 string (invalid bytes count 1).
size_t Utf16Length(std::string_view utf8);

}  // namespace cerulean::storage
