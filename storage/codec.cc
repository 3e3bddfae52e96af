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

Result<std::string> DecodeKey(std::string_view encoded) {
  std::string out(encoded);
  for (size_t i = 0; i < out.size(); ++i) {
    unsigned char b = static_cast<unsigned char>(out[i]);
    if (b == 0xEE || b == 0xEF) {
      return Status::Corruption("raw byte " + std::to_string(b) + " in encoded key at " +
                                std::to_string(i));
    }
    if (b == 0xFE || b == 0xFF) out[i] = static_cast<char>(b - 0x10);
  }
  return out;
}

void PutVarint64(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
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

void PutFixed64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
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

void PutLengthPrefixed(std::string* out, std::string_view s) {
  PutVarint64(out, s.size());
  out->append(s);
}

bool GetLengthPrefixed(std::string_view* in, std::string_view* s) {
  uint64_t len = 0;
  if (!GetVarint64(in, &len) || len > in->size()) return false;
  *s = in->substr(0, static_cast<size_t>(len));
  in->remove_prefix(static_cast<size_t>(len));
  return true;
}

void EncodeValue(const Value& value, std::string* out) {
  out->push_back(static_cast<char>(value.type()));
  switch (value.type()) {
    case EdmType::kString:
      PutLengthPrefixed(out, value.string());
      break;
    case EdmType::kBoolean:
      out->push_back(value.boolean() ? 1 : 0);
      break;
    case EdmType::kInt32:
      PutVarint64(out, ZigZag(value.int32()));
      break;
    case EdmType::kInt64:
      PutVarint64(out, ZigZag(value.int64()));
      break;
    case EdmType::kDouble: {
      double d = value.dbl();
      uint64_t bits = 0;
      std::memcpy(&bits, &d, sizeof bits);
      PutFixed64(out, bits);
      break;
    }
    case EdmType::kDateTime:
      PutFixed64(out, static_cast<uint64_t>(value.ticks()));
      break;
    case EdmType::kGuid:
      out->append(reinterpret_cast<const char*>(value.guid().bytes.data()),
                  value.guid().bytes.size());
      break;
    case EdmType::kBinary:
      PutLengthPrefixed(out, value.binary());
      break;
  }
}

// Decodes one value of the type byte at the front of `*in`.
Status DecodeValue(std::string_view* in, Value* value) {
  if (in->empty()) return Status::Corruption("truncated property type");
  uint8_t type = static_cast<unsigned char>(in->front());
  in->remove_prefix(1);
  switch (static_cast<EdmType>(type)) {
    case EdmType::kString: {
      std::string_view s;
      if (!GetLengthPrefixed(in, &s)) return Status::Corruption("bad string value");
      value->AssignString(s);
      return Status::Ok();
    }
    case EdmType::kBoolean: {
      if (in->empty()) return Status::Corruption("truncated boolean value");
      uint8_t b = static_cast<unsigned char>(in->front());
      if (b > 1) return Status::Corruption("bad boolean value");
      in->remove_prefix(1);
      *value = Value::Boolean(b == 1);
      return Status::Ok();
    }
    case EdmType::kInt32: {
      uint64_t u = 0;
      if (!GetVarint64(in, &u)) return Status::Corruption("bad int32 value");
      int64_t n = UnZigZag(u);
      if (n < INT32_MIN || n > INT32_MAX) return Status::Corruption("int32 value out of range");
      *value = Value::Int32(static_cast<int32_t>(n));
      return Status::Ok();
    }
    case EdmType::kInt64: {
      uint64_t u = 0;
      if (!GetVarint64(in, &u)) return Status::Corruption("bad int64 value");
      *value = Value::Int64(UnZigZag(u));
      return Status::Ok();
    }
    case EdmType::kDouble: {
      uint64_t bits = 0;
      if (!GetFixed64(in, &bits)) return Status::Corruption("truncated double value");
      double d = 0;
      std::memcpy(&d, &bits, sizeof d);
      *value = Value::Double(d);
      return Status::Ok();
    }
    case EdmType::kDateTime: {
      uint64_t bits = 0;
      if (!GetFixed64(in, &bits)) return Status::Corruption("truncated datetime value");
      *value = Value::DateTimeTicks(static_cast<int64_t>(bits));
      return Status::Ok();
    }
    case EdmType::kGuid: {
      Guid g;
      if (in->size() < g.bytes.size()) return Status::Corruption("truncated guid value");
      std::memcpy(g.bytes.data(), in->data(), g.bytes.size());
      in->remove_prefix(g.bytes.size());
      *value = Value::FromGuid(g);
      return Status::Ok();
    }
    case EdmType::kBinary: {
      std::string_view s;
      if (!GetLengthPrefixed(in, &s)) return Status::Corruption("bad binary value");
      value->AssignBinary(s);
      return Status::Ok();
    }
  }
  return Status::Corruption("unknown property type " + std::to_string(type));
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
  out->push_back(static_cast<char>(kPropertiesFormatV1));
  PutVarint64(out, properties.size());
  for (const auto& p : properties) {
    PutLengthPrefixed(out, p.name);
    EncodeValue(p.value, out);
  }
}

Status DecodeProperties(std::string_view in, std::vector<Property>* out) {
  out->clear();
  if (in.empty()) return Status::Corruption("empty property blob");
  uint8_t format = static_cast<unsigned char>(in.front());
  if (format != kPropertiesFormatV1) {
    return Status::Corruption("unknown property format " + std::to_string(format));
  }
  in.remove_prefix(1);
  uint64_t count = 0;
  if (!GetVarint64(&in, &count)) return Status::Corruption("bad property count");
  // Each property takes at least 3 bytes (name length, type, value), which
  // bounds the reservation on corrupt counts.
  if (count > in.size() / 3) return Status::Corruption("property count exceeds blob");
  // Decoded into place: a temporary Property per value (and its moves) was
  // a third of this function's instructions on range reads (callgrind).
  out->resize(static_cast<size_t>(count));
  for (auto& p : *out) {
    std::string_view name;
    if (!GetLengthPrefixed(&in, &name)) return Status::Corruption("bad property name");
    p.name.assign(name);
    Status s = DecodeValue(&in, &p.value);
    if (!s.ok()) return s;
  }
  if (!in.empty()) return Status::Corruption("trailing bytes after properties");
  if (HasDuplicateNames(*out)) return Status::Corruption("duplicate property name");
  return Status::Ok();
}

}  // namespace cerulean::storage
