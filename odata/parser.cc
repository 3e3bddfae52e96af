#include "odata/parser.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "odata/lexer.h"
#include "odata/query.h"

namespace cerulean::odata {

namespace {

using storage::Result;
using storage::Status;
using storage::Value;

std::optional<CmpOp> ToCmpOp(std::string_view word) {
  if (word == "eq") return CmpOp::kEq;
  if (word == "ne") return CmpOp::kNe;
  if (word == "gt") return CmpOp::kGt;
  if (word == "ge") return CmpOp::kGe;
  if (word == "lt") return CmpOp::kLt;
  if (word == "le") return CmpOp::kLe;
  return std::nullopt;
}

// The Boolean constants, in any letter case: Azure reads `True` and `TRUE` (which query
// builders such as Azure Storage Explorer's have written) as `true`.
std::optional<bool> BooleanLiteral(std::string_view word) {
  auto is = [word](std::string_view lower) {
    if (word.size() != lower.size()) return false;
    for (size_t i = 0; i < word.size(); ++i) {
      char c = word[i];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      if (c != lower[i]) return false;
    }
    return true;
  };
  if (is("true")) return true;
  if (is("false")) return false;
  return std::nullopt;
}

bool IsKeyword(std::string_view word) {
  return word == "and" || word == "or" || word == "not" || word == "null" || word == "true" ||
         word == "false" || ToCmpOp(word).has_value();
}

// One side of a comparison.
struct Operand {
  bool is_property = false;
  std::string property;
  Value literal;
  size_t at = 0;
};

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Result<ExprPtr> ParseAll() {
    auto root = ParseOr(0);
    if (!root.ok()) return root;
    if (Peek().kind != TokenKind::kEnd) return Error("expected 'and', 'or' or end of filter");
    return root;
  }

 private:
  const Token& Peek() const { return tokens_[pos_]; }
  const Token& Next() { return tokens_[pos_++]; }
  bool PeekWord(std::string_view word) const {
    return Peek().kind == TokenKind::kIdentifier && Peek().text == word;
  }
  Status Error(std::string_view what) const { return ErrorAt(what, Peek().begin); }
  static Status ErrorAt(std::string_view what, size_t at) {
    return Status::InvalidArgument(std::string(what) + " at " + std::to_string(at));
  }

  Result<ExprPtr> ParseOr(int depth) { return ParseChain(depth, "or", ExprKind::kOr); }

  Result<ExprPtr> ParseAnd(int depth) { return ParseChain(depth, "and", ExprKind::kAnd); }

  // or-expr / and-expr: operands joined by `word` into one n-ary node.
  Result<ExprPtr> ParseChain(int depth, std::string_view word, ExprKind kind) {
    std::vector<ExprPtr> children;
    while (true) {
      auto child = kind == ExprKind::kOr ? ParseAnd(depth) : ParseUnary(depth);
      if (!child.ok()) return child;
      children.push_back(std::move(child).value());
      if (!PeekWord(word)) break;
      Next();
    }
    if (children.size() == 1) return std::move(children.front());
    return kind == ExprKind::kOr ? Expr::Or(std::move(children)) : Expr::And(std::move(children));
  }

  Result<ExprPtr> ParseUnary(int depth) {
    if (PeekWord("not")) {
      if (depth >= kMaxFilterDepth) return Error("filter nested too deeply");
      Next();
      auto operand = ParseUnary(depth + 1);
      if (!operand.ok()) return operand;
      return Expr::Not(std::move(operand).value());
    }
    return ParsePrimary(depth);
  }

  Result<ExprPtr> ParsePrimary(int depth) {
    if (Peek().kind == TokenKind::kLParen) {
      if (depth >= kMaxFilterDepth) return Error("filter nested too deeply");
      Next();
      auto inner = ParseOr(depth + 1);
      if (!inner.ok()) return inner;
      if (Peek().kind != TokenKind::kRParen) return Error("expected ')'");
      Next();
      return inner;
    }
    auto left = ParseOperand();
    if (!left.ok()) return left.status();
    std::optional<CmpOp> op;
    if (Peek().kind == TokenKind::kIdentifier) op = ToCmpOp(Peek().text);
    if (!op) return BoolTerm(*left);
    size_t op_at = Next().begin;
    auto right = ParseOperand();
    if (!right.ok()) return right.status();
    if (left->is_property && right->is_property) {
      return ErrorAt("cannot compare property '" + left->property + "' with a property", op_at);
    }
    if (!left->is_property && !right->is_property) {
      return ErrorAt("comparison needs a property", op_at);
    }
    if (left->is_property) {
      return Expr::Compare(*op, std::move(left->property), std::move(right->literal));
    }
    return Expr::Compare(FlipCmpOp(*op), std::move(right->property), std::move(left->literal));
  }

  // A primary that is not followed by a comparison operator.
  Result<ExprPtr> BoolTerm(Operand& term) {
    if (term.is_property) return Expr::BoolProperty(std::move(term.property));
    if (term.literal.type() == storage::EdmType::kBoolean) {
      return Expr::Constant(term.literal.boolean());
    }
    return Error("expected comparison operator");
  }

  Result<Operand> ParseOperand() {
    const Token& t = Peek();
    Operand out;
    out.at = t.begin;
    if (t.kind == TokenKind::kLiteral) {
      out.literal = t.value;
      Next();
      return out;
    }
    if (t.kind != TokenKind::kIdentifier) return Error("expected property or literal");
    if (auto b = BooleanLiteral(t.text)) {
      out.literal = Value::Boolean(*b);
      Next();
      return out;
    }
    if (t.text == "null") return Error("null literal is not supported");
    if (IsKeyword(t.text)) return Error("expected property or literal");
    if (tokens_[pos_ + 1].kind == TokenKind::kLParen && tokens_[pos_ + 1].begin == t.end) {
      return Error("function '" + t.text + "' is not supported");
    }
    out.is_property = true;
    out.property = t.text;
    Next();
    return out;
  }

  std::vector<Token> tokens_;  // ends with kEnd, so Peek() never overruns
  size_t pos_ = 0;
};

}  // namespace

Result<ExprPtr> ParseFilterExpr(std::string_view text) {
  if (text.size() > kMaxFilterBytes) {
    return Status::InvalidArgument("filter longer than " + std::to_string(kMaxFilterBytes) +
                                   " bytes");
  }
  auto tokens = Lex(text);
  if (!tokens.ok()) return tokens.status();
  Parser parser(std::move(tokens).value());
  return parser.ParseAll();
}

Result<Filter> ParseFilter(std::string_view text) {
  auto root = ParseFilterExpr(text);
  if (!root.ok()) return root.status();
  return Filter(std::move(root).value());
}

}  // namespace cerulean::odata
