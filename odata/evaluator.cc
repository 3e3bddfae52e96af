#include "odata/evaluator.h"

#include <algorithm>
#include <cstring>

#include "odata/query.h"

namespace cerulean::odata {

namespace {

using storage::EdmType;
using storage::Value;

template <typename T>
int ThreeWay(T a, T b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

// IEEE comparison: NaN is unordered; -0.0 equals 0.0.
std::optional<int> OrderDouble(double a, double b) {
  if (a < b) return -1;
  if (a > b) return 1;
  if (a == b) return 0;
  return std::nullopt;
}

int Sign(int c) { return c < 0 ? -1 : (c > 0 ? 1 : 0); }

// Unsigned bytes lexicographically, then length.
int CompareBytes(std::string_view a, std::string_view b) {
  size_t n = a.size() < b.size() ? a.size() : b.size();
  int c = n == 0 ? 0 : std::memcmp(a.data(), b.data(), n);
  if (c != 0) return Sign(c);
  return ThreeWay(a.size(), b.size());
}

}  // namespace

std::optional<int> OrderString(std::string_view property, const Value& literal) {
  if (literal.type() != EdmType::kString) return std::nullopt;
  return Sign(storage::CompareOrdinal(property, literal.string()));
}

std::optional<int> OrderTicks(int64_t property_ticks, const Value& literal) {
  if (literal.type() != EdmType::kDateTime) return std::nullopt;
  return ThreeWay(property_ticks, literal.ticks());
}

std::optional<int> OrderValue(const Value& property, const Value& literal) {
  const EdmType p = property.type();
  switch (literal.type()) {
    case EdmType::kString:
      if (p != EdmType::kString) return std::nullopt;
      return OrderString(property.string(), literal);
    case EdmType::kBoolean:
      if (p != EdmType::kBoolean) return std::nullopt;
      return ThreeWay(property.boolean(), literal.boolean());
    case EdmType::kInt32:
      if (p == EdmType::kInt32) return ThreeWay(property.int32(), literal.int32());
      if (p == EdmType::kInt64) return ThreeWay(property.int64(), int64_t{literal.int32()});
      if (p == EdmType::kDouble) return OrderDouble(property.dbl(), literal.int32());
      return std::nullopt;
    case EdmType::kInt64:
      if (p == EdmType::kInt64) return ThreeWay(property.int64(), literal.int64());
      if (p == EdmType::kDouble) {
        return OrderDouble(property.dbl(), static_cast<double>(literal.int64()));
      }
      return std::nullopt;
    case EdmType::kDouble:
      if (p != EdmType::kDouble) return std::nullopt;
      return OrderDouble(property.dbl(), literal.dbl());
    case EdmType::kDateTime:
      if (p != EdmType::kDateTime) return std::nullopt;
      return OrderTicks(property.ticks(), literal);
    case EdmType::kGuid:
      // Bytes are in canonical string order, which is .NET Guid.CompareTo
      // order for the canonical form (storage/value.h).
      if (p != EdmType::kGuid) return std::nullopt;
      return Sign(std::memcmp(property.guid().bytes.data(), literal.guid().bytes.data(), 16));
    case EdmType::kBinary:
      if (p != EdmType::kBinary) return std::nullopt;
      return CompareBytes(property.binary(), literal.binary());
  }
  return std::nullopt;
}

bool ApplyCmp(CmpOp op, std::optional<int> order) {
  if (!order) return op == CmpOp::kNe;
  int c = *order;
  switch (op) {
    case CmpOp::kEq:
      return c == 0;
    case CmpOp::kNe:
      return c != 0;
    case CmpOp::kGt:
      return c > 0;
    case CmpOp::kGe:
      return c >= 0;
    case CmpOp::kLt:
      return c < 0;
    case CmpOp::kLe:
      return c <= 0;
  }
  return false;
}

namespace {

// The value a property name denotes for one row: absent, a string (keys,
// TableName), ticks (Timestamp) or a stored property value.
struct PropertyValue {
  enum class Kind : uint8_t { kMissing, kString, kTicks, kValue };
  Kind kind = Kind::kMissing;
  std::string_view str;
  int64_t ticks = 0;
  const Value* value = nullptr;
};

std::optional<int> Order(const PropertyValue& p, const Value& literal) {
  switch (p.kind) {
    case PropertyValue::Kind::kString:
      return OrderString(p.str, literal);
    case PropertyValue::Kind::kTicks:
      return OrderTicks(p.ticks, literal);
    case PropertyValue::Kind::kValue:
      return OrderValue(*p.value, literal);
    case PropertyValue::Kind::kMissing:
      break;
  }
  return std::nullopt;
}

// Evaluates `e` with property values from `resolve(const Expr&)`. The
// recursion depth is bounded by the parser's nesting limit.
template <typename Resolve>
bool Eval(const Expr& e, const Resolve& resolve) {
  switch (e.kind()) {
    case ExprKind::kConstant:
      return e.constant();
    case ExprKind::kBoolProperty: {
      PropertyValue p = resolve(e);
      return p.kind == PropertyValue::Kind::kValue && p.value->type() == EdmType::kBoolean &&
             p.value->boolean();
    }
    case ExprKind::kCompare: {
      PropertyValue p = resolve(e);
      if (p.kind == PropertyValue::Kind::kMissing) return false;
      return ApplyCmp(e.op(), Order(p, e.literal()));
    }
    case ExprKind::kNot:
      return !Eval(*e.children().front(), resolve);
    case ExprKind::kAnd:
      for (const auto& c : e.children()) {
        if (!Eval(*c, resolve)) return false;
      }
      return true;
    case ExprKind::kOr: {
      const std::vector<std::string_view>& list = e.eq_strings();
      if (!list.empty()) {
        // `P eq 's1' or P eq 's2' ...`: equal strings are equal bytes.
        PropertyValue p = resolve(*e.children().front());
        std::string_view s;
        if (p.kind == PropertyValue::Kind::kString) {
          s = p.str;
        } else if (p.kind == PropertyValue::Kind::kValue && p.value->type() == EdmType::kString) {
          s = p.value->string();
        } else {
          return false;
        }
        return std::binary_search(list.begin(), list.end(), s);
      }
      for (const auto& c : e.children()) {
        if (Eval(*c, resolve)) return true;
      }
      return false;
    }
  }
  return false;
}

}  // namespace

namespace {

size_t Cost(const Expr& e) {
  if (!e.eq_strings().empty()) {
    size_t n = 1;
    for (size_t left = e.eq_strings().size(); left > 1; left = (left + 1) / 2) ++n;
    return n;
  }
  size_t n = 1;
  for (const auto& c : e.children()) n += Cost(*c);
  return n;
}

}  // namespace

size_t EvaluationCost(const Filter& filter) { return Cost(filter.root()); }

bool Matches(const Filter& filter, const storage::Entity& entity) {
  auto resolve = [&entity](const Expr& e) {
    PropertyValue p;
    switch (e.system()) {
      case SystemProperty::kPartitionKey:
        p.kind = PropertyValue::Kind::kString;
        p.str = entity.partition_key;
        return p;
      case SystemProperty::kRowKey:
        p.kind = PropertyValue::Kind::kString;
        p.str = entity.row_key;
        return p;
      case SystemProperty::kTimestamp:
        p.kind = PropertyValue::Kind::kTicks;
        p.ticks = entity.timestamp;
        return p;
      case SystemProperty::kNone:
        break;
    }
    if (const Value* v = entity.Find(e.property())) {
      p.kind = PropertyValue::Kind::kValue;
      p.value = v;
    }
    return p;
  };
  return Eval(filter.root(), resolve);
}

bool MatchesTable(const Filter& filter, std::string_view table_name) {
  auto resolve = [table_name](const Expr& e) {
    PropertyValue p;
    if (e.property() == "TableName") {
      p.kind = PropertyValue::Kind::kString;
      p.str = table_name;
    }
    return p;
  };
  return Eval(filter.root(), resolve);
}

}  // namespace cerulean::odata
