// Escaping text into the wire formats: JSON string literals (written into
// a string or straight into a buffer sized by JsonStringBound) and XML 1.0
// character data and attribute values.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace cerulean::server {

// Appends `s` as a JSON string literal (with quotes). Invalid UTF-8 bytes are
// written as U+FFFD.
void AppendJsonString(std::string* out, std::string_view s);
// Copies n bytes from src to dst (not overlapping) and returns dst + n.
// Copies of up to 16 bytes (names, keys, words) are made inline: through
// std::memcpy with a size the compiler does not know they would be calls
// into the C library, dozens per serialised entity.
namespace escape_internal {
// Copies n bytes, sizeof(Word) <= n <= 2 * sizeof(Word), as two
// overlapping words.
template <typename Word>
inline void CopyTwoWords(char* dst, const char* src, size_t n) {
  Word head, tail;
  std::memcpy(&head, src, sizeof head);
  std::memcpy(&tail, src + n - sizeof tail, sizeof tail);
  std::memcpy(dst, &head, sizeof head);
  std::memcpy(dst + n - sizeof tail, &tail, sizeof tail);
}
}  // namespace escape_internal
inline char* CopyBytes(char* dst, const char* src, size_t n) {
  if (n > 16) {
    std::memcpy(dst, src, n);
  } else if (n >= 8) {
    escape_internal::CopyTwoWords<uint64_t>(dst, src, n);
  } else if (n >= 4) {
    escape_internal::CopyTwoWords<uint32_t>(dst, src, n);
  } else {
    for (size_t i = 0; i < n; ++i) dst[i] = src[i];
  }
  return dst + n;
}

// The most bytes WriteJsonString writes for a string of `size` bytes.
constexpr size_t JsonStringBound(size_t size) { return 6 * size + 2; }
// Writes what AppendJsonString appends to `out`, which has room for
// JsonStringBound(s.size()) bytes; returns the end of what it wrote.
char* WriteJsonString(char* out, std::string_view s);

// Appends `s` as XML 1.0 character data, or as an attribute value to be
// enclosed in double quotes iff `attribute`: escapes '&', '<', '>' (and '"'
// in attributes), writes CR (and TAB, LF in attributes) as character
// references so that XML line-end and attribute normalization keep them, and
// replaces what XML 1.0 cannot carry (other C0 controls, U+FFFE, U+FFFF,
// invalid UTF-8) with U+FFFD.
void AppendXmlText(std::string* out, std::string_view s, bool attribute = false);

}  // namespace cerulean::server
