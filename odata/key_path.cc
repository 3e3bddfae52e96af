// ParseKeyPath: "PartitionKey='a',RowKey='b'" (operations.md §4.1), with
// the $filter lexer. Only the exact spelling clients send is accepted: keys
// in this order, no whitespace, both quoted.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "odata/lexer.h"
#include "odata/query.h"

namespace cerulean::odata {

namespace {
storage::Status ErrorAt(std::string_view what, size_t at) {
  return storage::Status::InvalidArgument(std::string(what) + " at " + std::to_string(at));
}

// The common case, keys without quotes in them, read without the lexer (it
// runs on every point request): the same answer the token walk below gives.
std::optional<KeyPath> ParseUnquotedKeyPath(std::string_view text) {
  static constexpr std::string_view kStart = "PartitionKey='";
  static constexpr std::string_view kMiddle = "',RowKey='";
  if (!text.starts_with(kStart) || !text.ends_with('\'')) return std::nullopt;
  std::string_view keys = text.substr(kStart.size(), text.size() - kStart.size() - 1);
  size_t middle = keys.find(kMiddle);
  if (middle == std::string_view::npos) return std::nullopt;
  std::string_view pk = keys.substr(0, middle);
  std::string_view rk = keys.substr(middle + kMiddle.size());
  if (pk.find('\'') != std::string_view::npos || rk.find('\'') != std::string_view::npos)
    return std::nullopt;
  return KeyPath{std::string(pk), std::string(rk)};
}
}  // namespace

storage::Result<KeyPath> ParseKeyPath(std::string_view text) {
  if (auto plain = ParseUnquotedKeyPath(text)) return std::move(*plain);
  auto lexed = Lex(text);
  if (!lexed.ok()) return lexed.status();
  const std::vector<Token>& tokens = *lexed;
  size_t i = 0;
  size_t expected_begin = 0;
  // Each step consumes one token that must start where the previous ended.
  auto take = [&](TokenKind kind, std::string_view name, const Token** out) -> storage::Status {
    const Token& t = tokens[i];
    bool ok = t.kind == kind && t.begin == expected_begin && (name.empty() || t.text == name) &&
              (kind != TokenKind::kLiteral || t.value.type() == storage::EdmType::kString);
    if (!ok) {
      std::string what = name.empty() ? (kind == TokenKind::kLiteral  ? "quoted key"
                                         : kind == TokenKind::kEquals ? "'='"
                                         : kind == TokenKind::kComma  ? "','"
                                                                      : "end of key")
                                      : "'" + std::string(name) + "'";
      return ErrorAt("expected " + what, expected_begin);
    }
    expected_begin = t.end;
    if (out) *out = &t;
    if (t.kind != TokenKind::kEnd) ++i;
    return storage::Status::Ok();
  };
  const Token* pk = nullptr;
  const Token* rk = nullptr;
  storage::Status s = take(TokenKind::kIdentifier, "PartitionKey", nullptr);
  if (s.ok()) s = take(TokenKind::kEquals, {}, nullptr);
  if (s.ok()) s = take(TokenKind::kLiteral, {}, &pk);
  if (s.ok()) s = take(TokenKind::kComma, {}, nullptr);
  if (s.ok()) s = take(TokenKind::kIdentifier, "RowKey", nullptr);
  if (s.ok()) s = take(TokenKind::kEquals, {}, nullptr);
  if (s.ok()) s = take(TokenKind::kLiteral, {}, &rk);
  if (s.ok()) s = take(TokenKind::kEnd, {}, nullptr);
  if (!s.ok()) return s;
  return KeyPath{pk->value.string(), rk->value.string()};
}

}  // namespace cerulean::odata
