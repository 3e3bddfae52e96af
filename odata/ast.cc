#include "odata/ast.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <utility>

#include "odata/query.h"
#include "storage/edm_text.h"

namespace cerulean::odata {

std::string_view CmpOpName(CmpOp op) {
  switch (op) {
    case CmpOp::kEq:
      return "eq";
    case CmpOp::kNe:
      return "ne";
    case CmpOp::kGt:
      return "gt";
    case CmpOp::kGe:
      return "ge";
    case CmpOp::kLt:
      return "lt";
    case CmpOp::kLe:
      return "le";
  }
  return "?";
}

CmpOp FlipCmpOp(CmpOp op) {
  switch (op) {
    case CmpOp::kGt:
      return CmpOp::kLt;
    case CmpOp::kGe:
      return CmpOp::kLe;
    case CmpOp::kLt:
      return CmpOp::kGt;
    case CmpOp::kLe:
      return CmpOp::kGe;
    case CmpOp::kEq:
    case CmpOp::kNe:
      return op;
  }
  return op;
}

SystemProperty ClassifyProperty(std::string_view name) {
  if (name == "PartitionKey") return SystemProperty::kPartitionKey;
  if (name == "RowKey") return SystemProperty::kRowKey;
  if (name == "Timestamp") return SystemProperty::kTimestamp;
  return SystemProperty::kNone;
}

ExprPtr Expr::Constant(bool value) {
  auto e = std::shared_ptr<Expr>(new Expr(ExprKind::kConstant));
  e->constant_ = value;
  return e;
}

ExprPtr Expr::BoolProperty(std::string name) {
  auto e = std::shared_ptr<Expr>(new Expr(ExprKind::kBoolProperty));
  e->system_ = ClassifyProperty(name);
  e->property_ = std::move(name);
  return e;
}

ExprPtr Expr::Compare(CmpOp op, std::string property, storage::Value literal) {
  auto e = std::shared_ptr<Expr>(new Expr(ExprKind::kCompare));
  e->op_ = op;
  e->system_ = ClassifyProperty(property);
  e->property_ = std::move(property);
  e->literal_ = std::move(literal);
  return e;
}

ExprPtr Expr::Not(ExprPtr operand) {
  auto e = std::shared_ptr<Expr>(new Expr(ExprKind::kNot));
  e->children_.push_back(std::move(operand));
  return e;
}

ExprPtr Expr::And(std::vector<ExprPtr> children) {
  assert(children.size() >= 2);
  auto e = std::shared_ptr<Expr>(new Expr(ExprKind::kAnd));
  e->children_ = std::move(children);
  return e;
}

ExprPtr Expr::Or(std::vector<ExprPtr> children) {
  assert(children.size() >= 2);
  auto e = std::shared_ptr<Expr>(new Expr(ExprKind::kOr));
  e->children_ = std::move(children);
  const Expr& first = *e->children_.front();
  auto in_list = [&first](const ExprPtr& c) {
    return c->kind() == ExprKind::kCompare && c->op() == CmpOp::kEq &&
           c->literal().type() == storage::EdmType::kString && c->property() == first.property();
  };
  if (e->children_.size() >= kMinEqualityList &&
      std::all_of(e->children_.begin(), e->children_.end(), in_list)) {
    e->eq_strings_.reserve(e->children_.size());
    for (const auto& c : e->children_) e->eq_strings_.push_back(c->literal().string());
    std::sort(e->eq_strings_.begin(), e->eq_strings_.end());
  }
  return e;
}

void Expr::AppendTo(std::string* out) const {
  switch (kind_) {
    case ExprKind::kConstant:
      *out += constant_ ? "true" : "false";
      return;
    case ExprKind::kBoolProperty:
      *out += property_;
      return;
    case ExprKind::kCompare:
      *out += '(';
      *out += CmpOpName(op_);
      *out += ' ';
      *out += property_;
      *out += ' ';
      *out += FormatLiteral(literal_);
      *out += ')';
      return;
    case ExprKind::kNot:
    case ExprKind::kAnd:
    case ExprKind::kOr:
      *out += kind_ == ExprKind::kNot ? "(not" : kind_ == ExprKind::kAnd ? "(and" : "(or";
      for (const auto& c : children_) {
        *out += ' ';
        c->AppendTo(out);
      }
      *out += ')';
      return;
  }
}

std::string FormatLiteral(const storage::Value& value) {
  static constexpr char kHex[] = "0123456789abcdef";
  switch (value.type()) {
    case storage::EdmType::kString: {
      std::string s = "'";
      for (char c : value.string()) {
        s += c;
        if (c == '\'') s += '\'';
      }
      return s + "'";
    }
    case storage::EdmType::kBoolean:
      return value.boolean() ? "true" : "false";
    case storage::EdmType::kInt32:
      return std::to_string(value.int32());
    case storage::EdmType::kInt64:
      return std::to_string(value.int64()) + "L";
    case storage::EdmType::kDouble:
      // Literals are always finite; the guard keeps FormatDouble's contract.
      if (std::isnan(value.dbl())) return "NaN";
      if (std::isinf(value.dbl())) return value.dbl() > 0 ? "INF" : "-INF";
      return storage::FormatDouble(value.dbl());
    case storage::EdmType::kDateTime:
      return "datetime'" + storage::FormatDateTime(value.ticks()) + "'";
    case storage::EdmType::kGuid:
      return "guid'" + storage::FormatGuid(value.guid()) + "'";
    case storage::EdmType::kBinary: {
      std::string s = "X'";
      for (unsigned char c : value.binary()) {
        s += kHex[c >> 4];
        s += kHex[c & 15];
      }
      return s + "'";
    }
  }
  return "?";
}

Filter::Filter(std::shared_ptr<const Expr> root) : root_(std::move(root)) { assert(root_); }

std::string Filter::ToString() const {
  std::string out;
  root_->AppendTo(&out);
  return out;
}

namespace {
void CollectProperties(const Expr& e, std::vector<std::string>* out) {
  if (e.kind() == ExprKind::kCompare || e.kind() == ExprKind::kBoolProperty) {
    out->push_back(e.property());
  }
  for (const auto& c : e.children()) CollectProperties(*c, out);
}
}  // namespace

std::vector<std::string> ReferencedProperties(const Filter& filter) {
  std::vector<std::string> names;
  CollectProperties(filter.root(), &names);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace cerulean::odata
