// Pieces of the Store semantics shared by its backends (SqliteStore,
// PostgresStore): table-name folding, Merge, and how a scan's bounds combine.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/store.h"

namespace cerulean::storage {

// Table names are compared case-insensitively: ASCII lower case (table names
// are ASCII; other bytes are left as they are).
std::string LowerAscii(std::string_view s);

// Overwrites or appends each of `updates` in `*props` (Merge semantics: the
// type of an existing property may change; its position is kept).
void MergeProperties(const std::vector<Property>& updates, std::vector<Property>* props);

// The effective lower bound of a range scanned from continuation `start`:
// whichever of the two admits fewer keys.
std::optional<KeyBound> EffectiveLower(const std::optional<KeyBound>& lower,
                                       const std::optional<EntityKey>& start);

// Decides what `op` does to its row, given the row as read (`exists`, its
// timestamp and encoded properties; `stored_props` is read only for a
// merge): a refusal (kNotFound, kConditionFailed, kTooManyProperties),
// kCorruption if the stored properties do not decode,
// or Ok with *remove set (a delete) or *ts and *props (encoded) the row to
// write. The new timestamp is `base`, or above `prev_ts` if that is not below
// it, so every write of an entity changes its ETag. `scratch` is reused
// between calls. REQUIRES: not an insert whose row exists.
Status PlanWrite(const WriteOp& op, bool exists, int64_t prev_ts, std::string_view stored_props,
                 int64_t base, std::vector<Property>* scratch, bool* remove, int64_t* ts,
                 std::string* props);

// True iff both bounds lie in one partition and admit some of it, so that a
// scan can be written "pk = ? AND rk ..." (a seek to the lower RowKey that
// stops at the upper). An exclusive partition-only bound excludes its whole
// partition: such a range is empty and keeps the general form.
bool SinglePartition(const std::optional<KeyBound>& lower, const std::optional<KeyBound>& upper);

}  // namespace cerulean::storage
