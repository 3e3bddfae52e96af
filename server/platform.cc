#include "server/platform.h"

#include <cstdlib>

// After a libc header, which defines __GLIBC__.
#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace cerulean::server {

// glibc serves blocks above its mmap threshold (128 KiB at first) with a
// fresh mapping and returns a heap's free top above its trim threshold to
// the kernel at once. A large response page or a batch body then costs a
// page fault per 4 KiB on every request, and its copies go into fresh
// memory. Fixed thresholds keep such blocks in the heaps and reuse them.
// Freed memory above 8 MiB at a heap's top still goes back to the kernel.
// Two heaps ("arenas") at most: by default glibc gives threads up to eight
// per CPU, and each blocking-pool thread that once rendered a large page
// would keep its freed blocks resident in a heap of its own. Two heaps do
// not slow inserts or batches: the threads' small blocks come from glibc's
// per-thread caches without taking a heap's lock.
void TuneAllocator() {
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, 4 * 1024 * 1024);
  mallopt(M_TRIM_THRESHOLD, 8 * 1024 * 1024);
  mallopt(M_ARENA_MAX, 2);
#endif
}

}  // namespace cerulean::server
