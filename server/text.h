// Small text utilities of the wire layer: JSON/XML escaping, base64,
// HMAC-SHA256, percent-decoding, RFC 1123 dates, request ids.
// Thread-safety: pure functions (NewRequestId uses a thread-local generator).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cerulean::server {

// Appends `s` as a JSON string literal (with quotes). Invalid UTF-8 bytes are
// written as U+FFFD.
void AppendJsonString(std::string* out, std::string_view s);

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
// Strict RFC 4648 base64; missing padding accepted; nullopt on any character
// outside the alphabet.
std::optional<std::string> Base64Decode(std::string_view text);

// Raw 32-byte HMAC-SHA256 of `message` under `key`.
std::string HmacSha256(std::string_view key, std::string_view message);
// Constant-time equality.
bool SecureEquals(std::string_view a, std::string_view b);

// Percent-decodes `s` ('+' stays '+' unless plus_as_space). nullopt on a
// malformed escape.
std::optional<std::string> PercentDecode(std::string_view s, bool plus_as_space = false);

bool IEquals(std::string_view a, std::string_view b);
std::string ToLower(std::string_view s);
std::string_view Trim(std::string_view s);

// "Tue, 05 Nov 2024 10:00:00 GMT" for the current time / parsing one.
std::string HttpDateNow();
std::optional<int64_t> ParseHttpDate(std::string_view s);  // unix seconds

// A GUID-shaped random id.
std::string NewRequestId();

}  // namespace cerulean::server
