// HMAC-SHA256 and constant-time comparison, for Shared Key and SAS
// signatures.
// Thread-safety: pure functions (HmacSha256 keeps a keyed context per
// thread).
#pragma once

#include <string>
#include <string_view>

namespace cerulean::server {

// Raw 32-byte HMAC-SHA256 of `message` under `key`.
std::string HmacSha256(std::string_view key, std::string_view message);
// Constant-time equality.
bool SecureEquals(std::string_view a, std::string_view b);

}  // namespace cerulean::server
