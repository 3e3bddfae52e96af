#include "server/formats/escape.h"

#include "server/formats/swar.h"

namespace cerulean::server {

namespace {

// Length of the valid UTF-8 sequence at s[i], or 0.
size_t Utf8SeqLen(std::string_view s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c >= 0xE0 && c <= 0xEF)
    n = 3;
  else if (c >= 0xF0 && c <= 0xF4)
    n = 4;
  else
    return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  }
  return n;
}

// Appends the longest run of printable ASCII starting at s[i] that `special`
// does not flag, in one copy, and returns where it ends (i if none). The
// escapers below handle the byte there one by one.
template <typename Special>
size_t AppendPlainRun(std::string* out, std::string_view s, size_t i, Special special) {
  size_t end = i;
  while (end < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[end]);
    if (c < 0x20 || c >= 0x80 || special(c)) break;
    ++end;
  }
  out->append(s.data() + i, end - i);
  return end;
}

// Length of the prefix of s that JSON writes as it is: printable ASCII other
// than '"' and '\\'. Eight bytes at a time (most strings in responses are
// plain: keys, names, words).
size_t JsonPlainPrefix(std::string_view s) {
  using swar::kHigh;
  using swar::kOnes;
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    const uint64_t w = swar::Load(s.data() + i);
    // (w - 0x20..) & ~w & high flags a byte below 0x20 (for bytes without
    // the high bit; those are flagged by w & high anyway).
    uint64_t special = ((w - kOnes * 0x20) & ~w & kHigh) | (w & kHigh) | swar::HasByte(w, '"') |
                       swar::HasByte(w, '\\');
    if (special != 0) break;
  }
  for (; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') break;
  }
  return i;
}

// Length of the well-formed UTF-8 sequence at s[i] (no overlong forms, no
// surrogates) that is an XML 1.0 Char, or 0.
size_t XmlCharLen(std::string_view s, size_t i) {
  size_t n = Utf8SeqLen(s, i);
  if (n < 3) return n;
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  if (n == 3) {
    if (b(0) == 0xE0 && b(1) < 0xA0) return 0;                   // overlong
    if (b(0) == 0xED && b(1) >= 0xA0) return 0;                  // surrogate
    if (b(0) == 0xEF && b(1) == 0xBF && b(2) >= 0xBE) return 0;  // U+FFFE, U+FFFF
    return 3;
  }
  if (b(0) == 0xF0 && b(1) < 0x90) return 0;   // overlong
  if (b(0) == 0xF4 && b(1) >= 0x90) return 0;  // above U+10FFFF
  return 4;
}

}  // namespace

char* WriteJsonString(char* out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  auto put = [&out](std::string_view piece) { out = CopyBytes(out, piece.data(), piece.size()); };
  *out++ = '"';
  size_t i = JsonPlainPrefix(s);
  put(s.substr(0, i));
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      *out++ = static_cast<char>(c);
      ++i;
      continue;
    }
    if (c < 0x80) {
      switch (c) {
        case '"':
          put("\\\"");
          break;
        case '\\':
          put("\\\\");
          break;
        case '\n':
          put("\\n");
          break;
        case '\r':
          put("\\r");
          break;
        case '\t':
          put("\\t");
          break;
        case '\b':
          put("\\b");
          break;
        case '\f':
          put("\\f");
          break;
        default:
          put("\\u00");
          *out++ = kHex[c >> 4];
          *out++ = kHex[c & 15];
      }
      ++i;
      continue;
    }
    size_t n = Utf8SeqLen(s, i);
    if (n == 0) {
      put("\\ufffd");
      ++i;
    } else {
      put(s.substr(i, n));
      i += n;
    }
  }
  *out++ = '"';
  return out;
}

void AppendJsonString(std::string* out, std::string_view s) {
  size_t start = out->size();
  if (JsonPlainPrefix(s) == s.size()) {
    out->resize(start + s.size() + 2);
    char* p = out->data() + start;
    *p++ = '"';
    std::memcpy(p, s.data(), s.size());
    p[s.size()] = '"';
    return;
  }
  out->resize(start + JsonStringBound(s.size()));
  char* end = WriteJsonString(out->data() + start, s);
  out->resize(static_cast<size_t>(end - out->data()));
}

void AppendXmlText(std::string* out, std::string_view s, bool attribute) {
  for (size_t i = 0; i < s.size();) {
    auto markup = [](unsigned char c) { return c == '&' || c == '<' || c == '>' || c == '"'; };
    if (size_t end = AppendPlainRun(out, s, i, markup); end > i) {
      i = end;
      continue;
    }
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      size_t n = XmlCharLen(s, i);
      if (n == 0) {
        *out += "\xEF\xBF\xBD";
        ++i;
      } else {
        out->append(s.data() + i, n);
        i += n;
      }
      continue;
    }
    switch (c) {
      case '&':
        *out += "&amp;";
        break;
      case '<':
        *out += "&lt;";
        break;
      case '>':
        *out += "&gt;";
        break;
      case '"':
        if (attribute)
          *out += "&quot;";
        else
          out->push_back('"');
        break;
      case '\r':
        *out += "&#xD;";
        break;
      case '\n':
        if (attribute)
          *out += "&#xA;";
        else
          out->push_back('\n');
        break;
      case '\t':
        if (attribute)
          *out += "&#x9;";
        else
          out->push_back('\t');
        break;
      default:
        *out += "\xEF\xBF\xBD";  // a C0 control XML 1.0 cannot carry
    }
    ++i;
  }
}

}  // namespace cerulean::server
