#include "server/platform.h"

#include <csignal>
#include <cstdlib>
#include <utility>

#if defined(_WIN32)
#include <windows.h>
#endif

// After a libc header, which defines __GLIBC__.
#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace cerulean::server {

namespace {

#if defined(_WIN32)
// Console events: the C runtime turns Ctrl+C into SIGINT by itself; the
// others become SIGTERM here. raise() runs the handler Asio installed with
// signal(), which hands the signal to the io_context.
BOOL WINAPI OnConsoleEvent(DWORD event) {
  switch (event) {
    case CTRL_C_EVENT:
      std::raise(SIGINT);
      return TRUE;
    case CTRL_BREAK_EVENT:
      std::raise(SIGTERM);
      return TRUE;
    case CTRL_CLOSE_EVENT:
    case CTRL_LOGOFF_EVENT:
    case CTRL_SHUTDOWN_EVENT:
      std::raise(SIGTERM);
      // Returning would end the process now; main's return ends it (and
      // this thread) once the store is closed.
      Sleep(INFINITE);
      return TRUE;
    default:
      return FALSE;
  }
}
#endif

}  // namespace

ShutdownSignals::ShutdownSignals(boost::asio::io_context& ioc) : signals_(ioc, SIGINT, SIGTERM) {
#if defined(_WIN32)
  SetConsoleCtrlHandler(OnConsoleEvent, TRUE);
#endif
}

ShutdownSignals::~ShutdownSignals() {
#if defined(_WIN32)
  SetConsoleCtrlHandler(OnConsoleEvent, FALSE);
#endif
}

void ShutdownSignals::AsyncWait(std::function<void()> on_stop) {
  signals_.async_wait([on_stop = std::move(on_stop)](boost::system::error_code ec, int) {
    if (!ec) on_stop();
  });
}

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
