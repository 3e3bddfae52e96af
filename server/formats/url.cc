#include "server/formats/url.h"

#include <array>
#include <cstdint>
#include <cstring>

#include "server/formats/swar.h"

namespace cerulean::server {

namespace {

// RFC 3986 pchar without '%': unreserved, sub-delims, ':' and '@'; and '/'.
constexpr bool IsPlainPathChar(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~' || c == '!' || c == '$' || c == '&' || c == '\'' ||
         c == '(' || c == ')' || c == '*' || c == '+' || c == ',' || c == ';' || c == '=' ||
         c == ':' || c == '@' || c == '/';
}

bool IsHexDigit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// IsPlainPathChar of every byte, looked up: every request target is
// scanned (a long one with a SAS), one load per byte instead of a chain of
// comparisons.
constexpr std::array<bool, 256> kPlainPathChars = [] {
  std::array<bool, 256> table{};
  for (int c = 0; c < 256; ++c) table[c] = IsPlainPathChar(static_cast<unsigned char>(c));
  return table;
}();

// True iff every character of s is allowed (plus '?' when in_query) and
// every '%' is followed by two hex digits.
bool IsPlainComponent(std::string_view s, bool in_query) {
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (kPlainPathChars[c] || (in_query && c == '?')) continue;
    if (c == '%' && i + 2 < s.size() && IsHexDigit(s[i + 1]) && IsHexDigit(s[i + 2])) {
      i += 2;
      continue;
    }
    return false;
  }
  return true;
}

}  // namespace

size_t FindEscapeOrPlus(std::string_view s, size_t from, bool plus) {
  auto special = [plus](char c) { return c == '%' || (plus && c == '+'); };
  size_t i = from;
  for (; i + 8 <= s.size(); i += 8) {
    const uint64_t w = swar::Load(s.data() + i);
    if ((swar::HasByte(w, '%') | (plus ? swar::HasByte(w, '+') : 0)) != 0) break;
  }
  for (; i < s.size(); ++i) {
    if (special(s[i])) return i;
  }
  return s.size();
}

bool SplitPlainOriginForm(std::string_view target, std::string_view* path,
                          std::vector<std::pair<std::string_view, std::string_view>>* params) {
  params->clear();
  if (target.empty() || target.front() != '/') return false;
  size_t q = target.find('?');
  *path = target.substr(0, q);
  if (!IsPlainComponent(*path, false)) return false;
  if (q == std::string_view::npos) return true;
  std::string_view query = target.substr(q + 1);
  if (query.empty() || !IsPlainComponent(query, true)) return false;
  while (true) {
    size_t amp = query.find('&');
    std::string_view param = query.substr(0, amp);
    if (param.empty()) return false;
    size_t eq = param.find('=');
    if (eq == std::string_view::npos) {
      params->emplace_back(param, std::string_view());
    } else {
      params->emplace_back(param.substr(0, eq), param.substr(eq + 1));
    }
    if (amp == std::string_view::npos) return true;
    query.remove_prefix(amp + 1);
  }
}

bool SplitPlainAbsoluteUrl(std::string_view url, std::string_view* scheme,
                           std::string_view* host_port, std::string_view* path) {
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  const size_t colon = url.find("://");
  if (colon == 0 || colon == std::string_view::npos || !alpha(url[0])) return false;
  for (char c : url.substr(1, colon - 1)) {
    if (!alpha(c) && !digit(c) && c != '+' && c != '-' && c != '.') return false;
  }
  const size_t authority = colon + 3;
  const size_t slash = url.find('/', authority);
  if (slash == std::string_view::npos) return false;
  const std::string_view hp = url.substr(authority, slash - authority);
  const size_t port = hp.find(':');
  const std::string_view host = hp.substr(0, port);
  if (host.empty()) return false;
  for (char c : host) {
    if (!alpha(c) && !digit(c) && c != '-' && c != '.') return false;
  }
  if (port != std::string_view::npos) {
    const std::string_view digits = hp.substr(port + 1);
    if (digits.empty()) return false;
    for (char c : digits) {
      if (!digit(c)) return false;
    }
  }
  const std::string_view p = url.substr(slash);
  if (!IsPlainComponent(p, false)) return false;
  *scheme = url.substr(0, colon);
  *host_port = hp;
  *path = p;
  return true;
}

char* PercentDecodeTo(char* out, std::string_view s, bool plus_as_space) {
  // Hand-written: one pass, where Boost.URL validates and then decodes
  // (twice over every parameter of every request). The bytes between
  // escapes are copied as runs.
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  char* o = out;
  size_t i = 0;
  while (true) {
    const size_t next = FindEscapeOrPlus(s, i, plus_as_space);
    if (next > i) std::memcpy(o, s.data() + i, next - i);
    o += next - i;
    i = next;
    if (i == s.size()) return o;
    if (s[i] == '+') {
      *o++ = ' ';
      ++i;
      continue;
    }
    int hi = i + 2 < s.size() ? hex(s[i + 1]) : -1;
    int lo = hi >= 0 ? hex(s[i + 2]) : -1;
    if (lo < 0) return nullptr;  // '%' not followed by two hex digits
    *o++ = static_cast<char>(hi * 16 + lo);
    i += 3;
  }
}

std::optional<std::string> PercentDecode(std::string_view s, bool plus_as_space) {
  std::string out(s.size(), '\0');
  char* end = PercentDecodeTo(out.data(), s, plus_as_space);
  if (end == nullptr) return std::nullopt;
  out.resize(static_cast<size_t>(end - out.data()));
  return out;
}

}  // namespace cerulean::server
