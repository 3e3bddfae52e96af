#include "server/formats/base64.h"

#include <openssl/evp.h>

#include <array>
#include <cstring>

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
  // Validate the alphabet and padding ourselves: EVP_DecodeBlock tolerates
  // whitespace and does not report padding.
  size_t data_len = text.size();
  while (data_len > 0 && text[data_len - 1] == '=') --data_len;
  if (text.size() - data_len > 2) return std::nullopt;
  static constexpr std::array<bool, 256> kAlphabet = [] {
    std::array<bool, 256> t{};
    for (int c = 0; c < 256; ++c) {
      t[c] = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
             c == '+' || c == '/';
    }
    return t;
  }();
  bool ok = true;
  for (size_t i = 0; i < data_len; ++i) ok &= kAlphabet[static_cast<unsigned char>(text[i])];
  if (!ok) return std::nullopt;
  if (data_len % 4 == 1) return std::nullopt;
  if (text.size() != data_len && text.size() % 4 != 0) return std::nullopt;
  // Whole quads straight from `text`; a short last quad padded on the stack.
  const size_t whole = data_len / 4 * 4;
  std::string out(whole / 4 * 3 + 3, '\0');
  auto* dest = reinterpret_cast<unsigned char*>(out.data());
  if (whole > 0 && EVP_DecodeBlock(dest, reinterpret_cast<const unsigned char*>(text.data()),
                                   static_cast<int>(whole)) < 0) {
    return std::nullopt;
  }
  if (data_len > whole) {
    unsigned char last[4] = {'=', '=', '=', '='};
    std::memcpy(last, text.data() + whole, data_len - whole);
    if (EVP_DecodeBlock(dest + whole / 4 * 3, last, 4) < 0) return std::nullopt;
  }
  out.resize(data_len * 3 / 4);
  return out;
}

}  // namespace cerulean::server
