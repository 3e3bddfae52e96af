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
}  // namespace

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
