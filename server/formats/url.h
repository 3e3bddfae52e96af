// The fast path of URL handling: request targets and absolute URLs of the
// common shape split without a URL library (Boost.URL decides the rest),
// and percent-decoding.
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cerulean::server {

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

// The position of the first '%' (or '+', if `plus` too) of `s` at or after
// `from`, or s.size(); eight bytes at a time.
size_t FindEscapeOrPlus(std::string_view s, size_t from, bool plus);
// PercentDecode into out[0, s.size()) (decoding never lengthens): the end of
// the decoded bytes, or nullptr on a malformed escape.
char* PercentDecodeTo(char* out, std::string_view s, bool plus_as_space);

}  // namespace cerulean::server
