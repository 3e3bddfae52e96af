#include "storage/store_ops.h"

#include <algorithm>

#include "storage/codec.h"

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

Status PlanWrite(const WriteOp& op, bool exists, int64_t prev_ts, std::string_view stored_props,
                 int64_t base, std::vector<Property>* scratch, bool* remove, int64_t* ts,
                 std::string* props) {
  *remove = false;
  const bool conditional = op.kind == WriteKind::kUpdate || op.kind == WriteKind::kMerge ||
                           op.kind == WriteKind::kDelete;
  if (conditional && !exists) return Status::NotFound();
  if (conditional && op.if_match && *op.if_match != prev_ts) return Status::ConditionFailed();
  if (op.kind == WriteKind::kDelete) {
    *remove = true;
    return Status::Ok();
  }
  const bool merge =
      exists && (op.kind == WriteKind::kMerge || op.kind == WriteKind::kInsertOrMerge);
  const std::vector<Property>* final_props = &op.entity.properties;
  if (merge) {
    Status s = DecodeProperties(stored_props, scratch);
    if (!s.ok()) return s;
    MergeProperties(op.entity.properties, scratch);
    final_props = scratch;
  }
  if (final_props->size() > kMaxCustomProperties) {
    return Status::TooManyProperties();
  }
  *ts = exists ? std::max(base, prev_ts + 1) : base;
  EncodeProperties(*final_props, props);
  return Status::Ok();
}

bool SinglePartition(const std::optional<KeyBound>& lower, const std::optional<KeyBound>& upper) {
  return lower && upper && lower->partition_key == upper->partition_key &&
         (lower->row_key || lower->inclusive) && (upper->row_key || upper->inclusive);
}

}  // namespace cerulean::storage
