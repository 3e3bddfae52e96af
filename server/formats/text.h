// Small text utilities of the wire layer: JSON/XML escaping, base64,
// HMAC-SHA256, percent-decoding, RFC 1123 dates, request ids.
// Thread-safety: pure functions (NewRequestId uses a thread-local generator).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cerulean::server {

// Whether `s` holds a CR or LF byte.
bool HasLineBreak(std::string_view s);
// Whether `s` holds a control character other than tab (bytes below 0x20,
// 0x7F): what header lines may not hold.
bool HasControlChar(std::string_view s);

// Appends `s` as a JSON string literal (with quotes). Invalid UTF-8 bytes are
// written as U+FFFD.
void AppendJsonString(std::string* out, std::string_view s);
// Copies n bytes from src to dst (not overlapping) and returns dst + n.
// Copies of up to 16 bytes (names, keys, words) are made inline: through
// std::memcpy with a size the compiler does not know they were calls into
// the C library, ~40 per serialised entity (perf: a tenth of a query page).
namespace text_internal {
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
}  // namespace text_internal
inline char* CopyBytes(char* dst, const char* src, size_t n) {
  if (n > 16) {
    std::memcpy(dst, src, n);
  } else if (n >= 8) {
    text_internal::CopyTwoWords<uint64_t>(dst, src, n);
  } else if (n >= 4) {
    text_internal::CopyTwoWords<uint32_t>(dst, src, n);
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

std::string Base64Encode(std::string_view bytes);
// Appends Base64Encode(bytes) to *out.
void AppendBase64(std::string* out, std::string_view bytes);
// Writes Base64Encode(bytes) and a NUL after it to `out`, which has room
// for 4 * ceil(size / 3) + 1 bytes; returns the end of the text (the NUL).
char* WriteBase64(char* out, std::string_view bytes);
// Strict RFC 4648 base64; missing padding accepted; nullopt on any character
// outside the alphabet.
std::optional<std::string> Base64Decode(std::string_view text);

// Raw 32-byte HMAC-SHA256 of `message` under `key`.
std::string HmacSha256(std::string_view key, std::string_view message);
// Constant-time equality.
bool SecureEquals(std::string_view a, std::string_view b);

// The common shape of a request target, split without a URL library:
// "/path[?k=v&k2=v2...]" where every character is one RFC 3986 allows
// unescaped in a path (the query: also '?'), every '%' starts a valid
// escape, and the query, if present, has no empty parameter. Sets the
// encoded path and the still-encoded (key, value) pairs (value empty when
// there is no '=') and returns true; returns false for every other target
// (the caller falls back to Boost.URL, which decides). Agrees with
// Boost.URL's parse_origin_form on every target it accepts (differential
// test in text_test.cc).
bool SplitPlainOriginForm(std::string_view target, std::string_view* path,
                          std::vector<std::pair<std::string_view, std::string_view>>* params);

// The common shape of an absolute URL, split without a URL library:
// "scheme://host[:port]/path" where the scheme is a letter then letters,
// digits, '+', '-' or '.', the host letters, digits, '-' and '.', the port
// one or more digits, and the path as for SplitPlainOriginForm (no query,
// no fragment, no user information). Sets the scheme, "host[:port]" and
// the encoded path (starting with '/') and returns true; returns false for
// every other URL (the caller falls back to Boost.URL). Agrees with
// Boost.URL's parse_absolute_uri on every URL it accepts (differential test
// in text_test.cc).
bool SplitPlainAbsoluteUrl(std::string_view url, std::string_view* scheme,
                           std::string_view* host_port, std::string_view* path);

// Percent-decodes `s` ('+' stays '+' unless plus_as_space). nullopt on a
// malformed escape.
std::optional<std::string> PercentDecode(std::string_view s, bool plus_as_space = false);
// PercentDecode into out[0, s.size()) (decoding never lengthens): the end of
// the decoded bytes, or nullptr on a malformed escape.
char* PercentDecodeTo(char* out, std::string_view s, bool plus_as_space);

bool IEquals(std::string_view a, std::string_view b);
std::string ToLower(std::string_view s);
std::string_view Trim(std::string_view s);

// "Tue, 05 Nov 2024 10:00:00 GMT" for the current time / parsing one.
std::string HttpDateNow();
std::optional<int64_t> ParseHttpDate(std::string_view s);  // unix seconds

// A GUID-shaped random id.
std::string NewRequestId();

}  // namespace cerulean::server
