// Tokenizer shared by the $filter parser and the entity key path parser.
// Literals are decoded here (quote doubling, numbers with their EDM type,
// datetime'..', guid'..', X'..'/binary'..'); keywords are identifiers that
// the parser recognises by their exact (lower-case) text.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "storage/status.h"
#include "storage/value.h"

namespace cerulean::odata {

enum class TokenKind : uint8_t {
  kEnd,         // after the last token; begin = end = input size
  kIdentifier,  // [A-Za-z_][A-Za-z0-9_]*, bytes >= 0x80 count as letters
  kLiteral,     // any EDM literal except true/false (those are identifiers)
  kLParen,
  kRParen,
  kComma,
  kEquals,
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  size_t begin = 0;      // byte offset of the first character
  size_t end = 0;        // byte offset one past the last character
  std::string text;      // kIdentifier: the name
  storage::Value value;  // kLiteral: the decoded value
};

// Splits `text` into tokens, ending with one kEnd token. Whitespace (SP,
// HTAB, CR, LF) separates tokens and is otherwise dropped. A number glued to
// a following letter ("5and") is an error. Errors are kInvalidArgument
// "<what> at <offset>".
storage::Result<std::vector<Token>> Lex(std::string_view text);

}  // namespace cerulean::odata
