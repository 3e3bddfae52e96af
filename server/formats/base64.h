// Base64 (RFC 4648, standard alphabet) as Edm.Binary values, account keys
// and signatures carry it.
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace cerulean::server {

std::string Base64Encode(std::string_view bytes);
// Appends Base64Encode(bytes) to *out.
void AppendBase64(std::string* out, std::string_view bytes);
// Writes Base64Encode(bytes) and a NUL after it to `out`, which has room
// for 4 * ceil(size / 3) + 1 bytes; returns the end of the text (the NUL).
char* WriteBase64(char* out, std::string_view bytes);
// Strict RFC 4648 base64; missing padding accepted; nullopt on any character
// outside the alphabet.
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace cerulean::server
