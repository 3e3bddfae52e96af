// RFC 1123 dates as HTTP carries them (Date, x-ms-date).
// Thread-safety: pure functions (HttpDateNow caches per thread).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cerulean::server {

// "Tue, 05 Nov 2024 10:00:00 GMT" for the current time / parsing one. The
// view is of a per-thread copy, valid until this thread's next call.
std::string_view HttpDateNow();
std::optional<int64_t> ParseHttpDate(std::string_view s);  // unix seconds

}  // namespace cerulean::server
