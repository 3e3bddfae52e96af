// ASCII text helpers of the wire layer: case-insensitive comparison,
// lowering, trimming, and scanning for the bytes header lines may not hold.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace cerulean::server {

// ASCII case-insensitive equality.
bool IEquals(std::string_view a, std::string_view b);
// `s` with A-Z lowered (other bytes as they are).
std::string ToLower(std::string_view s);
// `s` without leading and trailing spaces and tabs.
std::string_view Trim(std::string_view s);

// Whether `s` holds a CR or LF byte.
bool HasLineBreak(std::string_view s);
// Whether `s` holds a control character other than tab (bytes below 0x20,
// 0x7F): what header lines may not hold.
bool HasControlChar(std::string_view s);

}  // namespace cerulean::server
