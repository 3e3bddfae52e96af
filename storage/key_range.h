// Key ranges over the (PartitionKey, RowKey) order of a table.
// Thread-safety: value types.
#pragma once

#include <optional>
#include <string>

namespace cerulean::storage {

// One end of a key range. With `row_key` absent the bound is on the
// PartitionKey alone: a lower bound {pk, -, inclusive} admits every row of
// partition pk, an exclusive one starts after partition pk; an upper bound
// {pk, -, inclusive} admits all of partition pk, an exclusive one stops
// before it. With `row_key` present the bound is on the composite key.
struct KeyBound {
  std::string partition_key;
  std::optional<std::string> row_key;
  bool inclusive = true;
  friend bool operator==(const KeyBound&, const KeyBound&) = default;
};

// A contiguous interval of keys; absent ends are unbounded.
struct KeyRange {
  std::optional<KeyBound> lower;
  std::optional<KeyBound> upper;
  friend bool operator==(const KeyRange&, const KeyRange&) = default;

  static KeyRange All() { return {}; }
  // True iff (pk, rk) lies inside the range (ordinal UTF-16 order).
  bool Contains(const std::string& pk, const std::string& rk) const;
  // "[pk,rk .. pk,rk)" style text for plans and tests.
  std::string ToString() const;
};

// The keys in both `a` and `b`, or nullopt when the bounds leave none.
std::optional<KeyRange> Intersect(const KeyRange& a, const KeyRange& b);

}  // namespace cerulean::storage
