#include "odata/lexer.h"

#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <system_error>
#include <utility>

#include "storage/edm_text.h"

namespace cerulean::odata {

namespace {

using storage::Result;
using storage::Status;
using storage::Value;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
// Bytes >= 0x80 are parts of UTF-8 sequences; they are accepted as letters
// so that Unicode property names work without character tables.
bool IsIdentStart(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool IsIdentChar(char c) { return IsIdentStart(c) || IsDigit(c); }

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Status Error(std::string_view what, size_t at) {
  return Status::InvalidArgument(std::string(what) + " at " + std::to_string(at));
}

// Reads a quoted string starting at text[*pos] == '\''; "''" stands for one
// quote. On success *pos is past the closing quote.
Result<std::string> ReadQuoted(std::string_view text, size_t* pos) {
  size_t start = *pos;
  size_t i = start + 1;
  std::string out;
  while (true) {
    size_t q = text.find('\'', i);
    if (q == std::string_view::npos) return Error("unterminated string literal", start);
    out.append(text.substr(i, q - i));
    if (q + 1 < text.size() && text[q + 1] == '\'') {
      out += '\'';
      i = q + 2;
      continue;
    }
    *pos = q + 1;
    return out;
  }
}

// Order of magnitude (decimal exponent of the leading nonzero digit) of a
// decimal number; used to tell underflow from overflow when from_chars
// reports out of range. `digits` excludes the sign.
int64_t DecimalMagnitude(std::string_view digits) {
  size_t dot = digits.find('.');
  size_t e = digits.find_first_of("eE");
  std::string_view mantissa = digits.substr(0, e);
  int64_t exponent = 0;
  if (e != std::string_view::npos) {
    std::string_view ex = digits.substr(e + 1);
    bool neg = !ex.empty() && ex[0] == '-';
    if (!ex.empty() && (ex[0] == '-' || ex[0] == '+')) ex.remove_prefix(1);
    for (char c : ex) {
      exponent = exponent * 10 + (c - '0');
      if (exponent > 1'000'000'000) break;  // saturate; far beyond any double
    }
    if (neg) exponent = -exponent;
  }
  size_t int_len = dot == std::string_view::npos ? mantissa.size() : dot;
  for (size_t i = 0; i < mantissa.size(); ++i) {
    if (mantissa[i] == '.' || mantissa[i] == '0') continue;
    int64_t order =
        i < int_len ? static_cast<int64_t>(int_len - i - 1) : -static_cast<int64_t>(i - int_len);
    return order + exponent;
  }
  return 0;
}

// Reads a number literal at text[*pos] ('-' or a digit): Int32, Int64 with
// an L suffix, or Double (a fraction and/or exponent, or a d suffix).
Result<Value> ReadNumber(std::string_view text, size_t* pos) {
  const size_t start = *pos;
  size_t i = start;
  auto digits = [&] {
    size_t from = i;
    while (i < text.size() && IsDigit(text[i])) ++i;
    return i > from;
  };
  if (text[i] == '-') ++i;
  if (!digits()) return Error("invalid number literal", start);
  bool is_double = false;
  if (i < text.size() && text[i] == '.') {
    ++i;
    if (!digits()) return Error("invalid number literal", start);
    is_double = true;
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (!digits()) return Error("invalid number literal", start);
    is_double = true;
  }
  const size_t number_end = i;
  bool is_int64 = false;
  if (i < text.size()) {
    if (!is_double && (text[i] == 'L' || text[i] == 'l')) {
      is_int64 = true;
      ++i;
    } else if (text[i] == 'd' || text[i] == 'D') {
      is_double = true;
      ++i;
    }
  }
  if (i < text.size() && (IsIdentChar(text[i]) || text[i] == '.')) {
    return Error("invalid number literal", start);
  }
  *pos = i;
  const char* first = text.data() + start;
  const char* last = text.data() + number_end;
  std::string_view literal = text.substr(start, number_end - start);
  if (is_double) {
    double d = 0;
    auto [p, ec] = storage::FromCharsDouble(first, last, d);
    if (ec == std::errc::result_out_of_range) {
      std::string_view unsigned_part = literal[0] == '-' ? literal.substr(1) : literal;
      if (DecimalMagnitude(unsigned_part) >= 0) {
        return Error("Unrecognized 'Edm.Double' literal '" + std::string(literal) + "'", start);
      }
      d = literal[0] == '-' ? -0.0 : 0.0;  // underflow, as .NET parses it
    } else if (ec != std::errc() || p != last) {
      return Error("invalid number literal", start);
    }
    return Value::Double(d);
  }
  if (is_int64) {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(first, last, v);
    if (ec != std::errc() || p != last) {
      return Error("Unrecognized 'Edm.Int64' literal '" + std::string(literal) + "'", start);
    }
    return Value::Int64(v);
  }
  int32_t v = 0;
  auto [p, ec] = std::from_chars(first, last, v);
  if (ec != std::errc() || p != last) {
    return Error("Unrecognized 'Edm.Int32' literal '" + std::string(literal) + "'", start);
  }
  return Value::Int32(v);
}

// Decodes the body of a prefixed literal (datetime'..', guid'..', X'..').
Result<Value> DecodePrefixed(std::string_view prefix, const std::string& body, size_t at) {
  if (prefix == "datetime" || prefix == "datetimeoffset") {
    // datetimeoffset is not part of the Table dialect; it is accepted as
    // Edm.DateTime (query.md §2.1) since it denotes the same instant.
    auto ticks = storage::ParseDateTime(body);
    if (!ticks) return Error("Unrecognized 'Edm.DateTime' literal '" + body + "'", at);
    return Value::DateTimeTicks(*ticks);
  }
  if (prefix == "guid") {
    auto g = storage::ParseGuid(body);
    if (!g) return Error("Unrecognized 'Edm.Guid' literal '" + body + "'", at);
    return Value::FromGuid(*g);
  }
  // X, x, binary.
  if (body.size() % 2 != 0) return Error("Unrecognized 'Edm.Binary' literal", at);
  std::string bytes;
  bytes.reserve(body.size() / 2);
  for (size_t i = 0; i < body.size(); i += 2) {
    int hi = HexDigit(body[i]);
    int lo = HexDigit(body[i + 1]);
    if (hi < 0 || lo < 0) return Error("Unrecognized 'Edm.Binary' literal", at);
    bytes += static_cast<char>(hi * 16 + lo);
  }
  return Value::FromBinary(std::move(bytes));
}

bool IsLiteralPrefix(std::string_view word) {
  return word == "datetime" || word == "datetimeoffset" || word == "guid" || word == "binary" ||
         word == "X" || word == "x";
}

std::string DescribeChar(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string("unexpected character '") + c + "'";
  static constexpr char kHex[] = "0123456789ABCDEF";
  return std::string("unexpected byte 0x") + kHex[u >> 4] + kHex[u & 15];
}

}  // namespace

Result<std::vector<Token>> Lex(std::string_view text) {
  std::vector<Token> tokens;
  size_t pos = 0;
  while (true) {
    while (pos < text.size() && IsSpace(text[pos])) ++pos;
    Token t;
    t.begin = pos;
    if (pos == text.size()) {
      t.kind = TokenKind::kEnd;
      t.end = pos;
      tokens.push_back(std::move(t));
      return tokens;
    }
    char c = text[pos];
    if (c == '(' || c == ')' || c == ',' || c == '=') {
      t.kind = c == '('   ? TokenKind::kLParen
               : c == ')' ? TokenKind::kRParen
               : c == ',' ? TokenKind::kComma
                          : TokenKind::kEquals;
      ++pos;
    } else if (c == '\'') {
      auto s = ReadQuoted(text, &pos);
      if (!s.ok()) return s.status();
      t.kind = TokenKind::kLiteral;
      t.value = Value::String(std::move(s).value());
    } else if (c == '-' || IsDigit(c)) {
      auto v = ReadNumber(text, &pos);
      if (!v.ok()) return v.status();
      t.kind = TokenKind::kLiteral;
      t.value = std::move(v).value();
    } else if (IsIdentStart(c)) {
      size_t start = pos;
      while (pos < text.size() && IsIdentChar(text[pos])) ++pos;
      std::string_view word = text.substr(start, pos - start);
      if (pos < text.size() && text[pos] == '\'' && IsLiteralPrefix(word)) {
        auto body = ReadQuoted(text, &pos);
        if (!body.ok()) return body.status();
        auto v = DecodePrefixed(word, *body, start);
        if (!v.ok()) return v.status();
        t.kind = TokenKind::kLiteral;
        t.value = std::move(v).value();
      } else {
        t.kind = TokenKind::kIdentifier;
        t.text = std::string(word);
      }
    } else {
      return Error(DescribeChar(c), pos);
    }
    t.end = pos;
    tokens.push_back(std::move(t));
  }
}

}  // namespace cerulean::odata
