// The command line's operating-system seam (storage/platform.h has the
// rest; the requests to shut down are http/shutdown_signals.h): the
// allocator's settings.
// Thread-safety: TuneAllocator is called once, first thing in main.
#pragma once

namespace cerulean::server {

// Sets the C library allocator's thresholds for the server's allocation
// pattern (platform.cc says why); a no-op where the allocator is not
// glibc's.
void TuneAllocator();

}  // namespace cerulean::server
