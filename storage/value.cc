#include "storage/value.h"

#include <cstring>

namespace cerulean::storage {

std::string_view EdmTypeName(EdmType type) {
  switch (type) {
    case EdmType::kString:
      return "Edm.String";
    case EdmType::kBoolean:
      return "Edm.Boolean";
    case EdmType::kInt32:
      return "Edm.Int32";
    case EdmType::kInt64:
      return "Edm.Int64";
    case EdmType::kDouble:
      return "Edm.Double";
    case EdmType::kDateTime:
      return "Edm.DateTime";
    case EdmType::kGuid:
      return "Edm.Guid";
    case EdmType::kBinary:
      return "Edm.Binary";
  }
  return "Edm.Unknown";
}

bool operator==(const Value& a, const Value& b) {
  if (a.type() != b.type()) return false;
  if (a.type() == EdmType::kDouble) {
    double x = a.dbl(), y = b.dbl();
    return std::memcmp(&x, &y, sizeof x) == 0;
  }
  return a.v_ == b.v_;
}

ValueView Value::view() const {
  ValueView v;
  v.type = type();
  switch (v.type) {
    case EdmType::kString:
      v.bytes = string();
      break;
    case EdmType::kBoolean:
      v.boolean = boolean();
      break;
    case EdmType::kInt32:
      v.integer = int32();
      break;
    case EdmType::kInt64:
      v.integer = int64();
      break;
    case EdmType::kDouble:
      v.dbl = dbl();
      break;
    case EdmType::kDateTime:
      v.integer = ticks();
      break;
    case EdmType::kGuid:
      v.guid = guid();
      break;
    case EdmType::kBinary:
      v.bytes = binary();
      break;
  }
  return v;
}

void Value::Assign(const ValueView& v) {
  switch (v.type) {
    case EdmType::kString:
      AssignString(v.bytes);
      return;
    case EdmType::kBoolean:
      v_.emplace<1>(v.boolean);
      return;
    case EdmType::kInt32:
      v_.emplace<2>(static_cast<int32_t>(v.integer));
      return;
    case EdmType::kInt64:
      v_.emplace<3>(v.integer);
      return;
    case EdmType::kDouble:
      v_.emplace<4>(v.dbl);
      return;
    case EdmType::kDateTime:
      v_.emplace<5>(DateTime{v.integer});
      return;
    case EdmType::kGuid:
      v_.emplace<6>(v.guid);
      return;
    case EdmType::kBinary:
      AssignBinary(v.bytes);
      return;
  }
}

const Value* Entity::Find(std::string_view name) const {
  for (const auto& p : properties) {
    if (p.name == name) return &p.value;
  }
  return nullptr;
}

namespace {
// UTF-8 lead bytes 0xEE and 0xEF start U+E000..U+FFFF, which sort after the
// surrogate pairs of supplementary characters (lead bytes 0xF0..0xF4) in
// UTF-16 order. Lifting them above 0xF4 makes byte order equal UTF-16 order.
inline unsigned Rank(unsigned char c) { return (c == 0xEE || c == 0xEF) ? c + 0x10u : c; }
}  // namespace

int CompareOrdinal(std::string_view a, std::string_view b) {
  size_t n = a.size() < b.size() ? a.size() : b.size();
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = static_cast<unsigned char>(a[i]);
    unsigned char y = static_cast<unsigned char>(b[i]);
    if (x != y) {
      // Equal ranks only for the invalid bytes 0xFE/0xFF against 0xEE/0xEF;
      // the raw bytes break the tie so the order stays antisymmetric.
      if (Rank(x) == Rank(y)) return x < y ? -1 : 1;
      return Rank(x) < Rank(y) ? -1 : 1;
    }
  }
  if (a.size() == b.size()) return 0;
  return a.size() < b.size() ? -1 : 1;
}

size_t Utf16Length(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size();) {
    // ASCII, eight bytes at a time: one unit each.
    uint64_t word;
    if (i + 8 <= s.size() &&
        (std::memcpy(&word, s.data() + i, 8), (word & 0x8080808080808080u) == 0)) {
      i += 8;
      n += 8;
      continue;
    }
    unsigned char c = static_cast<unsigned char>(s[i]);
    // Lead bytes of 4-, 3- and 2-byte sequences; anything else (ASCII,
    // a stray continuation byte, C0, C1, F5..FF) is one unit.
    size_t len = 1, units = 1;
    if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      units = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    }
    i += len;
    n += units;
  }
  return n;
}

}  // namespace cerulean::storage
