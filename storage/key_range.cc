#include "storage/key_range.h"

#include "storage/value.h"

namespace cerulean::storage {

namespace {
// Compares (pk, rk) with a bound; a bound without a row key compares on the
// partition key only. Returns <0, 0, >0.
int CompareToBound(const std::string& pk, const std::string& rk, const KeyBound& b) {
  int c = CompareOrdinal(pk, b.partition_key);
  if (c != 0 || !b.row_key) return c;
  return CompareOrdinal(rk, *b.row_key);
}

// Where a bound cuts the key order: between keys, just before or after the
// composite key (pk, rk), or before or after all of partition pk.
struct Cut {
  enum Kind { kPartitionStart, kBeforeRow, kAfterRow, kPartitionEnd };
  const std::string* partition_key;
  const std::string* row_key;  // kBeforeRow and kAfterRow only
  Kind kind;
};

Cut LowerCut(const KeyBound& b) {
  if (!b.row_key) {
    return {&b.partition_key, nullptr, b.inclusive ? Cut::kPartitionStart : Cut::kPartitionEnd};
  }
  return {&b.partition_key, &*b.row_key, b.inclusive ? Cut::kBeforeRow : Cut::kAfterRow};
}

Cut UpperCut(const KeyBound& b) {
  if (!b.row_key) {
    return {&b.partition_key, nullptr, b.inclusive ? Cut::kPartitionEnd : Cut::kPartitionStart};
  }
  return {&b.partition_key, &*b.row_key, b.inclusive ? Cut::kAfterRow : Cut::kBeforeRow};
}

// <0, 0, >0 as cut `a` comes before, at or after cut `b`.
int CompareCuts(const Cut& a, const Cut& b) {
  int c = CompareOrdinal(*a.partition_key, *b.partition_key);
  if (c != 0) return c;
  auto rank = [](Cut::Kind k) {
    return k == Cut::kPartitionStart ? 0 : k == Cut::kPartitionEnd ? 2 : 1;
  };
  if (rank(a.kind) != rank(b.kind)) return rank(a.kind) - rank(b.kind);
  if (rank(a.kind) != 1) return 0;
  c = CompareOrdinal(*a.row_key, *b.row_key);
  return c != 0 ? c : static_cast<int>(a.kind) - static_cast<int>(b.kind);
}

}  // namespace

std::optional<KeyRange> Intersect(const KeyRange& a, const KeyRange& b) {
  KeyRange out;
  if (a.lower && b.lower) {
    out.lower = CompareCuts(LowerCut(*a.lower), LowerCut(*b.lower)) >= 0 ? a.lower : b.lower;
  } else {
    out.lower = a.lower ? a.lower : b.lower;
  }
  if (a.upper && b.upper) {
    out.upper = CompareCuts(UpperCut(*a.upper), UpperCut(*b.upper)) <= 0 ? a.upper : b.upper;
  } else {
    out.upper = a.upper ? a.upper : b.upper;
  }
  if (out.lower && out.upper && CompareCuts(LowerCut(*out.lower), UpperCut(*out.upper)) >= 0) {
    return std::nullopt;
  }
  return out;
}

bool KeyRange::Contains(const std::string& pk, const std::string& rk) const {
  if (lower) {
    int c = CompareToBound(pk, rk, *lower);
    if (c < 0 || (c == 0 && !lower->inclusive)) return false;
  }
  if (upper) {
    int c = CompareToBound(pk, rk, *upper);
    if (c > 0 || (c == 0 && !upper->inclusive)) return false;
  }
  return true;
}

std::string KeyRange::ToString() const {
  auto bound = [](const KeyBound& b) {
    std::string s = "'" + b.partition_key + "'";
    if (b.row_key) s += ",'" + *b.row_key + "'";
    return s;
  };
  std::string s;
  s += lower ? (lower->inclusive ? "[" : "(") + bound(*lower) : "(-inf";
  s += " .. ";
  s += upper ? bound(*upper) + (upper->inclusive ? "]" : ")") : "+inf)";
  return s;
}

}  // namespace cerulean::storage
