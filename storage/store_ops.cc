#include "storage/store_ops.h"

#include <algorithm>

namespace cerulean::storage {

std::string LowerAscii(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

void MergeProperties(const std::vector<Property>& updates, std::vector<Property>* props) {
  for (const auto& u : updates) {
    auto it = std::find_if(props->begin(), props->end(),
                           [&](const Property& p) { return p.name == u.name; });
    if (it != props->end()) {
      it->value = u.value;
    } else {
      props->push_back(u);
    }
  }
}

std::optional<KeyBound> EffectiveLower(const std::optional<KeyBound>& lower,
                                       const std::optional<EntityKey>& start) {
  if (!start) return lower;
  KeyBound from{start->partition_key, start->row_key, true};
  if (!lower) return from;
  int c = CompareOrdinal(start->partition_key, lower->partition_key);
  if (!lower->row_key) {
    // A partition-only bound: inclusive admits all of lower's partition,
    // exclusive none of it.
    if (lower->inclusive) return c >= 0 ? from : *lower;
    return c > 0 ? from : *lower;
  }
  if (c == 0) c = CompareOrdinal(start->row_key, *lower->row_key);
  if (c > 0) return from;
  if (c == 0) return lower->inclusive ? from : *lower;
  return *lower;
}

bool SinglePartition(const std::optional<KeyBound>& lower, const std::optional<KeyBound>& upper) {
  return lower && upper && lower->partition_key == upper->partition_key &&
         (lower->row_key || lower->inclusive) && (upper->row_key || upper->inclusive);
}

}  // namespace cerulean::storage
