// Internal to the key set implementation (key_set.h): the helpers that
// key_set_intervals.cc (Cuts and IntervalSets) and key_set.cc (KeyMaps)
// share.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string_view>

#include "odata/key_set.h"
#include "storage/value.h"

namespace cerulean::odata {

inline bool Less(const Cut& a, const Cut& b) { return CompareCuts(a, b) < 0; }

inline void Count(size_t* steps, size_t n) {
  if (steps != nullptr) *steps += n;
}

// c <= s, for s seen as the point between Before(s) and After(s).
inline bool CutAtOrBelow(const Cut& c, std::string_view s) {
  switch (c.kind) {
    case Cut::Kind::kNegInf:
      return true;
    case Cut::Kind::kPosInf:
      return false;
    case Cut::Kind::kBefore:
      return storage::CompareOrdinal(c.s, s) <= 0;
    case Cut::Kind::kAfter:
      return storage::CompareOrdinal(c.s, s) < 0;
  }
  return false;
}

inline bool AllRows(Intervals rows) {
  return rows.size() == 1 && rows[0].lo.kind == Cut::Kind::kNegInf &&
         rows[0].hi.kind == Cut::Kind::kPosInf;
}

}  // namespace cerulean::odata
