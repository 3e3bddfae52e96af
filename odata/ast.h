// The $filter abstract syntax tree. Built by the parser (odata/parser.h),
// read by the evaluator and the planner; nodes are immutable once built and
// subtrees may be shared between trees (the planner's residual reuses them).
// Thread-safety: immutable; safe to share across threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "storage/value.h"

namespace cerulean::odata {

class Expr;
using ExprPtr = std::shared_ptr<const Expr>;

enum class ExprKind : uint8_t {
  kConstant,      // `true` / `false` used as a predicate
  kBoolProperty,  // a bare property used as a predicate (= `P eq true`)
  kCompare,       // property <op> literal (a literal on the left is flipped)
  kNot,
  kAnd,  // n-ary: a chain `a and b and c` is one node
  kOr,   // n-ary
};

enum class CmpOp : uint8_t { kEq, kNe, kGt, kGe, kLt, kLe };

// The system properties, recognised by name when the tree is built so that
// evaluation does not compare names per row.
enum class SystemProperty : uint8_t { kNone, kPartitionKey, kRowKey, kTimestamp };

// "eq", "ne", ...
std::string_view CmpOpName(CmpOp op);
// The operator with its operands swapped: `5 lt A` is `A gt 5`.
CmpOp FlipCmpOp(CmpOp op);
SystemProperty ClassifyProperty(std::string_view name);

// One node. Which accessors are meaningful depends on kind().
class Expr {
 public:
  static ExprPtr Constant(bool value);
  static ExprPtr BoolProperty(std::string name);
  static ExprPtr Compare(CmpOp op, std::string property, storage::Value literal);
  static ExprPtr Not(ExprPtr operand);
  // REQUIRES: children.size() >= 2.
  static ExprPtr And(std::vector<ExprPtr> children);
  static ExprPtr Or(std::vector<ExprPtr> children);

  ExprKind kind() const { return kind_; }
  // kConstant.
  bool constant() const { return constant_; }
  // kCompare.
  CmpOp op() const { return op_; }
  const storage::Value& literal() const { return literal_; }
  // kCompare and kBoolProperty.
  const std::string& property() const { return property_; }
  SystemProperty system() const { return system_; }
  // kNot (one child), kAnd and kOr (two or more).
  const std::vector<ExprPtr>& children() const { return children_; }
  // kOr whose children are all `P eq '...'` for one property P, at least
  // kMinEqualityList of them (a Contains list): their strings, sorted by
  // bytes, so that the evaluator tests a row with one binary search. Empty
  // otherwise. Views of the children's literals.
  const std::vector<std::string_view>& eq_strings() const { return eq_strings_; }
  static constexpr size_t kMinEqualityList = 8;

  // S-expression, e.g. "(and (eq PartitionKey 'a') (not Flag))".
  void AppendTo(std::string* out) const;

 private:
  explicit Expr(ExprKind kind) : kind_(kind) {}

  ExprKind kind_;
  bool constant_ = false;
  CmpOp op_ = CmpOp::kEq;
  SystemProperty system_ = SystemProperty::kNone;
  std::string property_;
  storage::Value literal_;
  std::vector<ExprPtr> children_;
  std::vector<std::string_view> eq_strings_;
};

// The literal in $filter syntax: 'it''s', 42, 42L, 1.5, true,
// datetime'...', guid'...', X'0a1b'.
std::string FormatLiteral(const storage::Value& value);

}  // namespace cerulean::odata
