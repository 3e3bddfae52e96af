// Byte encodings the SQLite backend stores: order-preserving entity keys and
// the compact binary form of an entity's custom properties. Both are
// persistent: a database written by one build is read by every later one, so
// the formats below never change meaning (add a new format byte instead).
// Thread-safety: pure functions; safe to call from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "storage/status.h"
#include "storage/value.h"

namespace cerulean::storage {

// ---------------------------------------------------------------------------
// Keys (PartitionKey, RowKey, table names in the catalog index).
//
// SQLite compares BLOBs with memcmp, i.e. in UTF-8 byte order, but the Table
// service orders keys by UTF-16 code units. The two orders differ only for
// U+E000..U+FFFF (UTF-8 lead bytes 0xEE, 0xEF) versus supplementary characters
// (lead bytes 0xF0..0xF4, surrogate pairs in UTF-16, which sort before
// U+E000). EncodeKey lifts the lead bytes 0xEE -> 0xFE and 0xEF -> 0xFF; those
// two byte values never occur in UTF-8, so the mapping is reversible and
// memcmp(EncodeKey(a), EncodeKey(b)) has the sign of CompareOrdinal(a, b).
// Every other byte, including continuation bytes (0x80..0xBF), is unchanged.
// persistent: never change the mapping.
// ---------------------------------------------------------------------------

// True iff `key` can be stored reversibly: it contains no 0xFE or 0xFF byte
// (true for every valid UTF-8 string).
bool IsEncodableKey(std::string_view key);

// The order-preserving encoding of `key`. Total: for any input the order of
// the encodings equals CompareOrdinal order; decoding gives `key` back iff
// IsEncodableKey(key).
std::string EncodeKey(std::string_view key);

// Inverse of EncodeKey. Corruption if `encoded` holds a raw 0xEE or 0xEF byte
// (EncodeKey never produces one).
Result<std::string> DecodeKey(std::string_view encoded);
// The same into `*out` (reusing its buffer; unspecified on error).
Status DecodeKeyInto(std::string_view encoded, std::string* out);

// ---------------------------------------------------------------------------
// Properties. An entity's custom properties (not PartitionKey, RowKey or
// Timestamp, which have their own columns) are stored as:
//
//   properties := format:u8(=kPropertiesFormatV1) count:varint property{count}
//   property   := name_len:varint name:byte{name_len} type:u8 value
//   value      := String   len:varint utf8:byte{len}
//               | Boolean  u8 (0 or 1)
//               | Int32    zigzag varint (fits in 32 bits)
//               | Int64    zigzag varint
//               | Double   fixed64 (IEEE-754 bits, little-endian; NaN payload,
//                          -0.0 and infinities kept bit-exactly)
//               | DateTime fixed64 (two's-complement ticks, little-endian)
//               | Guid     byte{16}
//               | Binary   len:varint byte{len}
//
// varint is unsigned LEB128 (7 bits per byte, low group first, at most 10
// bytes); zigzag maps n to (n << 1) ^ (n >> 63). `type` is the EdmType value
// (storage/value.h). Property order is kept. Nothing may follow the last
// property.
// persistent: never renumber or reinterpret.
// ---------------------------------------------------------------------------

inline constexpr uint8_t kPropertiesFormatV1 = 1;  // persistent: never renumber

// Appends the encoding of `properties` to `*out`.
// REQUIRES: property names are unique.
void EncodeProperties(const std::vector<Property>& properties, std::string* out);

// Decodes `in` into `*out` (replacing its contents). Corruption on any
// malformed input (truncation, bad varint, unknown type or format byte,
// out-of-range Int32 or Boolean, duplicate names, trailing bytes); never
// reads out of bounds. On error `*out` is unspecified.
Status DecodeProperties(std::string_view in, std::vector<Property>* out);

// Reads an encoded property blob one property at a time, without copying
// or allocating: for writers that turn stored entities straight into a
// response. Checks what DecodeProperties checks except duplicate names
// (never written: EncodeProperties requires unique names).
//
//   PropertyReader r;
//   if (Status s = r.Open(blob); !s.ok()) ...;
//   while (r.Next(&name, &value)) ...;
//   if (!r.status().ok()) ...;  // malformed
class PropertyReader {
 public:
  // Reads the header. Corruption if it is malformed.
  Status Open(std::string_view in);
  // Properties not yet read.
  size_t count() const { return remaining_; }
  // The next property, viewing the blob; false after the last one or on
  // malformed input (then status() says why; trailing bytes after the
  // last property are reported here too).
  bool Next(std::string_view* name, ValueView* value);
  const Status& status() const { return status_; }

 private:
  std::string_view in_;
  size_t remaining_ = 0;
  Status status_;
};

// Varint primitives used by the property encoding, exposed for tests.
void PutVarint64(std::string* out, uint64_t v);
// Reads a varint from the front of `*in` and advances it. False (and `*in`
// unspecified) iff the bytes do not form a varint of at most 64 bits.
bool GetVarint64(std::string_view* in, uint64_t* v);

}  // namespace cerulean::storage
