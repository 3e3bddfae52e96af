#include "odata/parser.h"

#include <algorithm>
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

// The type of a property whose type `scope` fixes, as an EDM name, or null.
const char* KnownType(std::string_view name, FilterScope scope) {
  if (scope == FilterScope::kTables) return name == "TableName" ? "Edm.String" : nullptr;
  switch (ClassifyProperty(name)) {
    case SystemProperty::kPartitionKey:
    case SystemProperty::kRowKey:
      return "Edm.String";
    case SystemProperty::kTimestamp:
      return "Edm.DateTime";
    case SystemProperty::kNone:
      break;
  }
  return nullptr;
}

class Parser {
 public:
  Parser(std::vector<Token> tokens, FilterScope scope)
      : tokens_(std::move(tokens)), scope_(scope) {}

  // The grammar's recursion (parentheses, `not`) runs on an explicit stack
  // of open groups, so no input recurses here, however deeply it nests.
  // A parenthesised chain of the same kind as the chain around it is spliced
  // into it (`((a and b) and c)`, as query builders write chains, is one
  // `and` of three): a group's chain stays a list of members until it has to
  // become a node, and lists are merged smaller into larger, so that the work
  // stays O(n log n) in the number of terms for any nesting. The tree that
  // remains may be at most kMaxFilterDepth deep: the evaluator and planner
  // walk it recursively.
  Result<ExprPtr> ParseAll() {
    std::vector<Group> groups(1);
    while (true) {
      // unary: "not"* then "(" (a new group) or a comparison / bool-term.
      groups.back().nots_at = Peek().begin;
      while (PeekWord("not")) {
        Next();
        ++groups.back().nots;
      }
      if (Peek().kind == TokenKind::kLParen) {
        if (groups.size() > kMaxFilterParens) return Error("filter nested too deeply");
        Next();
        groups.emplace_back();
        continue;
      }
      auto primary = ParseComparison();
      if (!primary.ok()) return primary.status();
      Chain operand;
      operand.Add({std::move(primary).value(), 1});
      // Add the operand to the innermost group; close groups while it ends one.
      while (true) {
        Group& top = groups.back();
        if (top.nots > 0) {
          Node node;
          if (Status s = MakeNode(&operand, &node); !s.ok()) return s;
          if (node.depth + top.nots > kMaxFilterDepth) {
            return ErrorAt("filter nested too deeply", top.nots_at);
          }
          for (; top.nots > 0; --top.nots) {
            node.expr = Expr::Not(std::move(node.expr));
            ++node.depth;
          }
          operand = Chain();
          operand.Add(std::move(node));
        }
        if (operand.size() > 1 && operand.kind == ExprKind::kOr &&
            (top.conjuncts.size() > 0 || PeekWord("and"))) {
          Node node;  // one conjunct among others
          if (Status s = MakeNode(&operand, &node); !s.ok()) return s;
          top.conjuncts.Add(std::move(node));
        } else if (operand.size() > 1 && operand.kind == ExprKind::kOr) {
          top.disjuncts.Splice(&operand);  // the whole and-chain: into the or-chain
        } else {
          top.conjuncts.Splice(&operand);
        }
        if (PeekWord("and")) {
          Next();
          break;
        }
        if (PeekWord("or")) {
          if (Status s = CloseConjuncts(&top); !s.ok()) return s;
          Next();
          break;
        }
        // The end of this group.
        Chain result;
        if (top.disjuncts.size() == 0) {
          result = std::move(top.conjuncts);
        } else {
          if (Status s = CloseConjuncts(&top); !s.ok()) return s;
          result = std::move(top.disjuncts);
        }
        if (result.size() > 1 && result.max_depth + 1 > kMaxFilterDepth) {
          return Error("filter nested too deeply");
        }
        if (groups.size() == 1) {
          if (Peek().kind != TokenKind::kEnd) return Error("expected 'and', 'or' or end of filter");
          Node root;
          if (Status s = MakeNode(&result, &root); !s.ok()) return s;
          return std::move(root.expr);
        }
        if (Peek().kind != TokenKind::kRParen) return Error("expected ')'");
        Next();
        groups.pop_back();
        operand = std::move(result);
      }
    }
  }

 private:
  // A subtree and its depth (a leaf is 1).
  struct Node {
    ExprPtr expr;
    int depth = 0;
  };
  // The members of an `and` or `or` chain not yet made a node: the
  // reverse of `front`, then `back` (two vectors rather than a deque, which
  // allocates even when empty: there is a chain per open parenthesis).
  struct Chain {
    ExprKind kind = ExprKind::kAnd;
    std::vector<Node> front;  // reversed
    std::vector<Node> back;
    int max_depth = 0;  // of the members

    size_t size() const { return front.size() + back.size(); }
    Node& first() { return front.empty() ? back.front() : front.back(); }
    void Add(Node node) {
      max_depth = std::max(max_depth, node.depth);
      back.push_back(std::move(node));
    }
    // Appends the members of *from (emptied), moving the shorter list.
    void Splice(Chain* from) {
      max_depth = std::max(max_depth, from->max_depth);
      if (size() >= from->size()) {
        for (size_t i = from->front.size(); i > 0; --i)
          back.push_back(std::move(from->front[i - 1]));
        for (Node& n : from->back) back.push_back(std::move(n));
      } else {
        for (size_t i = back.size(); i > 0; --i) from->front.push_back(std::move(back[i - 1]));
        for (Node& n : front) from->front.push_back(std::move(n));
        front.swap(from->front);
        back.swap(from->back);
      }
      from->Clear();
    }
    // The members in order, moved out.
    std::vector<ExprPtr> Take() {
      std::vector<ExprPtr> out;
      out.reserve(size());
      for (size_t i = front.size(); i > 0; --i) out.push_back(std::move(front[i - 1].expr));
      for (Node& n : back) out.push_back(std::move(n.expr));
      Clear();
      return out;
    }
    void Clear() {
      front.clear();
      back.clear();
      max_depth = 0;
    }
  };
  static Chain OfKind(ExprKind kind) {
    Chain c;
    c.kind = kind;
    return c;
  }
  // An open "(" (or the whole filter): its or-chain so far, the and-chain
  // being read, and the `not`s before the operand being read.
  struct Group {
    Chain disjuncts = OfKind(ExprKind::kOr);
    Chain conjuncts = OfKind(ExprKind::kAnd);
    int nots = 0;
    size_t nots_at = 0;
  };

  const Token& Peek() const { return tokens_[pos_]; }
  const Token& Next() { return tokens_[pos_++]; }
  bool PeekWord(std::string_view word) const {
    return Peek().kind == TokenKind::kIdentifier && Peek().text == word;
  }
  Status Error(std::string_view what) const { return ErrorAt(what, Peek().begin); }
  static Status ErrorAt(std::string_view what, size_t at) {
    return Status::InvalidArgument(std::string(what) + " at " + std::to_string(at));
  }

  // Makes *chain (emptied) one node: its only member, or an n-ary node.
  Status MakeNode(Chain* chain, Node* out) const {
    if (chain->size() == 1) {
      *out = std::move(chain->first());
      chain->Clear();
      return Status::Ok();
    }
    if (chain->max_depth + 1 > kMaxFilterDepth) return Error("filter nested too deeply");
    out->depth = chain->max_depth + 1;
    const ExprKind kind = chain->kind;
    std::vector<ExprPtr> children = chain->Take();
    out->expr =
        kind == ExprKind::kOr ? Expr::Or(std::move(children)) : Expr::And(std::move(children));
    return Status::Ok();
  }

  // Ends the group's and-chain: one member of its or-chain.
  Status CloseConjuncts(Group* g) const {
    if (g->conjuncts.size() == 0) return Status::Ok();
    Node node;
    if (Status s = MakeNode(&g->conjuncts, &node); !s.ok()) return s;
    g->disjuncts.Add(std::move(node));
    return Status::Ok();
  }

  // comparison / bool-term.
  Result<ExprPtr> ParseComparison() {
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

  // A primary that is not followed by a comparison operator: a predicate,
  // so it must be able to be a Boolean (the operand of `not`, `and`, `or`
  // and the filter itself are).
  Result<ExprPtr> BoolTerm(Operand& term) {
    if (term.is_property) {
      if (const char* type = KnownType(term.property, scope_)) {
        return ErrorAt("'" + term.property + "' is " + type + ", not a Boolean", term.at);
      }
      return Expr::BoolProperty(std::move(term.property));
    }
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
  FilterScope scope_;
  size_t pos_ = 0;
};

}  // namespace

Result<ExprPtr> ParseFilterExpr(std::string_view text, FilterScope scope) {
  if (text.size() > kMaxFilterBytes) {
    return Status::InvalidArgument("filter longer than " + std::to_string(kMaxFilterBytes) +
                                   " bytes");
  }
  auto tokens = Lex(text);
  if (!tokens.ok()) return tokens.status();
  Parser parser(std::move(tokens).value(), scope);
  return parser.ParseAll();
}

Result<Filter> ParseFilter(std::string_view text, FilterScope scope) {
  auto root = ParseFilterExpr(text, scope);
  if (!root.ok()) return root.status();
  return Filter(std::move(root).value());
}

}  // namespace cerulean::odata
