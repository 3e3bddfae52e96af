#include "server/formats/base64.h"

#include <openssl/evp.h>

#include <array>
#include <cstdint>

namespace cerulean::server {

void AppendBase64(std::string* out, std::string_view bytes) {
  // WriteBase64's terminating NUL goes where std::string keeps its own.
  size_t start = out->size();
  out->resize(start + 4 * ((bytes.size() + 2) / 3));
  char* end = WriteBase64(out->data() + start, bytes);
  out->resize(static_cast<size_t>(end - out->data()));
}

char* WriteBase64(char* out, std::string_view bytes) {
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out),
                          reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  return out + n;
}

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  AppendBase64(&out, bytes);
  return out;
}

std::optional<std::string> Base64Decode(std::string_view text) {
  // Decoded here, not by EVP_DecodeBlock: it tolerates whitespace and does
  // not report padding, and its call cost more than the short values
  // (Edm.Binary properties, keys, signatures) it decodes.
  size_t data_len = text.size();
  while (data_len > 0 && text[data_len - 1] == '=') --data_len;
  if (text.size() - data_len > 2) return std::nullopt;
  if (data_len % 4 == 1) return std::nullopt;
  if (text.size() != data_len && text.size() % 4 != 0) return std::nullopt;
  // The 6-bit value of each alphabet character; kNotBase64 for the rest.
  static constexpr uint8_t kNotBase64 = 0xFF;
  static constexpr std::array<uint8_t, 256> kValue = [] {
    std::array<uint8_t, 256> t{};
    t.fill(kNotBase64);
    for (int c = 'A'; c <= 'Z'; ++c) t[c] = static_cast<uint8_t>(c - 'A');
    for (int c = 'a'; c <= 'z'; ++c) t[c] = static_cast<uint8_t>(c - 'a' + 26);
    for (int c = '0'; c <= '9'; ++c) t[c] = static_cast<uint8_t>(c - '0' + 52);
    t['+'] = 62;
    t['/'] = 63;
    return t;
  }();
  auto value = [&](size_t i) { return kValue[static_cast<unsigned char>(text[i])]; };
  std::string out(data_len * 3 / 4, '\0');
  char* o = out.data();
  uint8_t bad = 0;  // the OR of every value: its high bit is set iff one is kNotBase64
  size_t i = 0;
  for (; i + 4 <= data_len; i += 4) {
    const uint8_t a = value(i), b = value(i + 1), c = value(i + 2), d = value(i + 3);
    bad |= a | b | c | d;
    const uint32_t quad = uint32_t{a} << 18 | uint32_t{b} << 12 | uint32_t{c} << 6 | d;
    *o++ = static_cast<char>(quad >> 16);
    *o++ = static_cast<char>(quad >> 8);
    *o++ = static_cast<char>(quad);
  }
  // A last group of two or three characters: one or two bytes, the bits
  // past them dropped.
  if (i < data_len) {
    const uint8_t a = value(i), b = value(i + 1);
    const uint8_t c = i + 2 < data_len ? value(i + 2) : 0;
    bad |= a | b | c;
    const uint32_t quad = uint32_t{a} << 18 | uint32_t{b} << 12 | uint32_t{c} << 6;
    *o++ = static_cast<char>(quad >> 16);
    if (i + 2 < data_len) *o++ = static_cast<char>(quad >> 8);
  }
  if ((bad & 0x80) != 0) return std::nullopt;
  return out;
}

}  // namespace cerulean::server
