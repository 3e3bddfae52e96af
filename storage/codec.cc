#include "storage/codec.h"

#include <algorithm>
#include <cstring>

namespace cerulean::storage {

bool IsEncodableKey(std::string_view key) {
  for (char c : key) {
    unsigned char b = static_cast<unsigned char>(c);
    if (b == 0xFE || b == 0xFF) return false;
  }
  return true;
}

std::string EncodeKey(std::string_view key) {
  std::string out(key);
  for (char& c : out) {
    unsigned char b = static_cast<unsigned char>(c);
    if (b == 0xEE || b == 0xEF) c = static_cast<char>(b + 0x10);
  }
  return out;
}

Status DecodeKeyInto(std::string_view encoded, std::string* out) {
  out->assign(encoded);
  for (size_t i = 0; i < out->size(); ++i) {
    unsigned char b = static_cast<unsigned char>((*out)[i]);
    if (b < 0xEE) continue;
    if (b == 0xEE || b == 0xEF) {
      return Status::Corruption("raw byte " + std::to_string(b) + " in encoded key at " +
                                std::to_string(i));
    }
    if (b == 0xFE || b == 0xFF) (*out)[i] = static_cast<char>(b - 0x10);
  }
  return Status::Ok();
}

Result<std::string> DecodeKey(std::string_view encoded) {
  std::string out;
  Status s = DecodeKeyInto(encoded, &out);
  if (!s.ok()) return s;
  return out;
}

namespace {

// Writes the varint of `v` at p (at most 10 bytes); returns the end. The
// writers here go into a buffer the caller sized (EncodeProperties reserves
// an upper bound once): no capacity check per byte.
char* PutVarintTo(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

}  // namespace

void PutVarint64(std::string* out, uint64_t v) {
  char buf[10];
  out->append(buf, static_cast<size_t>(PutVarintTo(buf, v) - buf));
}

bool GetVarint64(std::string_view* in, uint64_t* v) {
  uint64_t result = 0;
  for (size_t i = 0; i < in->size() && i < 10; ++i) {
    uint64_t b = static_cast<unsigned char>((*in)[i]);
    // The tenth byte holds only bit 63.
    if (i == 9 && b > 1) return false;
    result |= (b & 0x7F) << (7 * i);
    if ((b & 0x80) == 0) {
      in->remove_prefix(i + 1);
      *v = result;
      return true;
    }
  }
  return false;
}

namespace {

uint64_t ZigZag(int64_t n) {
  return (static_cast<uint64_t>(n) << 1) ^ static_cast<uint64_t>(n >> 63);
}

int64_t UnZigZag(uint64_t u) { return static_cast<int64_t>(u >> 1) ^ -static_cast<int64_t>(u & 1); }

char* PutFixed64To(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) *p++ = static_cast<char>((v >> (8 * i)) & 0xFF);
  return p;
}

bool GetFixed64(std::string_view* in, uint64_t* v) {
  if (in->size() < 8) return false;
  uint64_t result = 0;
  for (int i = 0; i < 8; ++i) {
    result |= static_cast<uint64_t>(static_cast<unsigned char>((*in)[i])) << (8 * i);
  }
  in->remove_prefix(8);
  *v = result;
  return true;
}

char* PutLengthPrefixedTo(char* p, std::string_view s) {
  p = PutVarintTo(p, s.size());
  if (!s.empty()) std::memcpy(p, s.data(), s.size());
  return p + s.size();
}

// Writes the encoding of `value` at p (at most 1 + 10 + its string or
// binary size, or 1 + 16 bytes); returns the end.
char* EncodeValueTo(const Value& value, char* p) {
  *p++ = static_cast<char>(value.type());
  switch (value.type()) {
    case EdmType::kString:
      return PutLengthPrefixedTo(p, value.string());
    case EdmType::kBoolean:
      *p++ = value.boolean() ? 1 : 0;
      return p;
    case EdmType::kInt32:
      return PutVarintTo(p, ZigZag(value.int32()));
    case EdmType::kInt64:
      return PutVarintTo(p, ZigZag(value.int64()));
    case EdmType::kDouble: {
      double d = value.dbl();
      uint64_t bits = 0;
      std::memcpy(&bits, &d, sizeof bits);
      return PutFixed64To(p, bits);
    }
    case EdmType::kDateTime:
      return PutFixed64To(p, static_cast<uint64_t>(value.ticks()));
    case EdmType::kGuid:
      std::memcpy(p, value.guid().bytes.data(), value.guid().bytes.size());
      return p + value.guid().bytes.size();
    case EdmType::kBinary:
      return PutLengthPrefixedTo(p, value.binary());
  }
  return p;
}

// Reads a varint at the front of `*in`: one byte inline (names, lengths and
// most counts fit in one), the general reader otherwise.
inline bool GetVarintFast(std::string_view* in, uint64_t* v) {
  if (!in->empty() && static_cast<unsigned char>(in->front()) < 0x80) {
    *v = static_cast<unsigned char>(in->front());
    in->remove_prefix(1);
    return true;
  }
  return GetVarint64(in, v);
}

inline bool GetBytes(std::string_view* in, std::string_view* s) {
  uint64_t len = 0;
  if (!GetVarintFast(in, &len) || len > in->size()) return false;
  *s = in->substr(0, static_cast<size_t>(len));
  in->remove_prefix(static_cast<size_t>(len));
  return true;
}

// Decodes one value of the type byte at the front of `*in` into `*value`
// (views into `*in`). Returns null, or what is wrong (a Status is built only
// on failure: this runs for every property a query returns).
const char* DecodeValue(std::string_view* in, ValueView* value) {
  if (in->empty()) return "truncated property type";
  uint8_t type = static_cast<unsigned char>(in->front());
  in->remove_prefix(1);
  value->type = static_cast<EdmType>(type);
  switch (value->type) {
    case EdmType::kString:
      return GetBytes(in, &value->bytes) ? nullptr : "bad string value";
    case EdmType::kBoolean: {
      if (in->empty()) return "truncated boolean value";
      uint8_t b = static_cast<unsigned char>(in->front());
      if (b > 1) return "bad boolean value";
      in->remove_prefix(1);
      value->boolean = b == 1;
      return nullptr;
    }
    case EdmType::kInt32: {
      uint64_t u = 0;
      if (!GetVarintFast(in, &u)) return "bad int32 value";
      int64_t n = UnZigZag(u);
      if (n < INT32_MIN || n > INT32_MAX) return "int32 value out of range";
      value->integer = n;
      return nullptr;
    }
    case EdmType::kInt64: {
      uint64_t u = 0;
      if (!GetVarintFast(in, &u)) return "bad int64 value";
      value->integer = UnZigZag(u);
      return nullptr;
    }
    case EdmType::kDouble: {
      uint64_t bits = 0;
      if (!GetFixed64(in, &bits)) return "truncated double value";
      std::memcpy(&value->dbl, &bits, sizeof value->dbl);
      return nullptr;
    }
    case EdmType::kDateTime: {
      uint64_t bits = 0;
      if (!GetFixed64(in, &bits)) return "truncated datetime value";
      value->integer = static_cast<int64_t>(bits);
      return nullptr;
    }
    case EdmType::kGuid:
      if (in->size() < value->guid.bytes.size()) return "truncated guid value";
      std::memcpy(value->guid.bytes.data(), in->data(), value->guid.bytes.size());
      in->remove_prefix(value->guid.bytes.size());
      return nullptr;
    case EdmType::kBinary:
      return GetBytes(in, &value->bytes) ? nullptr : "bad binary value";
  }
  return "unknown property type";
}

bool HasDuplicateNames(const std::vector<Property>& props) {
  // Pairwise up to 16 names (at most 120 comparisons, most decided by the
  // lengths); sorted views beyond.
  if (props.size() <= 16) {
    for (size_t i = 0; i < props.size(); ++i) {
      for (size_t j = i + 1; j < props.size(); ++j) {
        if (props[i].name == props[j].name) return true;
      }
    }
    return false;
  }
  std::vector<std::string_view> names;
  names.reserve(props.size());
  for (const auto& p : props) names.push_back(p.name);
  std::sort(names.begin(), names.end());
  return std::adjacent_find(names.begin(), names.end()) != names.end();
}

}  // namespace

void EncodeProperties(const std::vector<Property>& properties, std::string* out) {
  // One allocation: an upper bound of the encoding (varints take at most 10
  // bytes, fixed values 16).
  size_t bound = out->size() + 11;
  for (const auto& p : properties) {
    bound += 10 + p.name.size() + 1 + 16;
    if (p.value.type() == EdmType::kString) bound += p.value.string().size();
    if (p.value.type() == EdmType::kBinary) bound += p.value.binary().size();
  }
  const size_t start = out->size();
  out->resize(bound);
  char* p = out->data() + start;
  *p++ = static_cast<char>(kPropertiesFormatV1);
  p = PutVarintTo(p, properties.size());
  for (const auto& property : properties) {
    p = PutLengthPrefixedTo(p, property.name);
    p = EncodeValueTo(property.value, p);
  }
  out->resize(static_cast<size_t>(p - out->data()));
}

Status PropertyReader::Open(std::string_view in) {
  in_ = in;
  remaining_ = 0;
  status_ = Status::Ok();
  if (in_.empty()) return status_ = Status::Corruption("empty property blob");
  uint8_t format = static_cast<unsigned char>(in_.front());
  if (format != kPropertiesFormatV1) {
    return status_ = Status::Corruption("unknown property format " + std::to_string(format));
  }
  in_.remove_prefix(1);
  uint64_t count = 0;
  if (!GetVarint64(&in_, &count)) return status_ = Status::Corruption("bad property count");
  // Each property takes at least 3 bytes (name length, type, value), which
  // bounds reservations made from the count on corrupt input.
  if (count > in_.size() / 3) return status_ = Status::Corruption("property count exceeds blob");
  remaining_ = static_cast<size_t>(count);
  return status_;
}

bool PropertyReader::Next(std::string_view* name, ValueView* value) {
  if (remaining_ == 0) {
    if (!in_.empty() && status_.ok())
      status_ = Status::Corruption("trailing bytes after properties");
    return false;
  }
  const char* error = nullptr;
  if (!GetBytes(&in_, name)) {
    error = "bad property name";
  } else {
    error = DecodeValue(&in_, value);
  }
  if (error != nullptr) {
    status_ = Status::Corruption(error);
    remaining_ = 0;
    in_ = {};
    return false;
  }
  --remaining_;
  return true;
}

Status DecodeProperties(std::string_view in, std::vector<Property>* out) {
  out->clear();
  PropertyReader reader;
  Status s = reader.Open(in);
  if (!s.ok()) return s;
  // Decoded into place: no temporary Property per value, nor its moves.
  out->resize(reader.count());
  std::string_view name;
  ValueView value;
  for (auto& p : *out) {
    if (!reader.Next(&name, &value)) return reader.status();
    p.name.assign(name);
    p.value.Assign(value);
  }
  if (reader.Next(&name, &value) || !reader.status().ok()) return reader.status();
  if (HasDuplicateNames(*out)) return Status::Corruption("duplicate property name");
  return Status::Ok();
}

}  // namespace cerulean::storage
