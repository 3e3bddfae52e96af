// The operating-system seam: every call that differs between Linux, macOS
// and Windows goes through here, so the rest of the code is plain C++20.
// Each function states what it does where the OS cannot do it.
// Thread-safety: every function may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string>

namespace cerulean::storage {

// The UTC calendar time of `t` (gmtime_r; gmtime_s on Windows).
std::tm UtcTime(std::time_t t);

// CPUs this process may run on (at least 1): its affinity mask on Linux
// (taskset, cgroup cpusets), the processors of all groups on Windows, the
// hardware's count elsewhere.
unsigned UsableCpus();

// Milliseconds of the coarse monotonic clock: cheap (no system call where
// the OS has CLOCK_MONOTONIC_COARSE, Linux; the plain monotonic clock
// elsewhere). Inline: the sessions read it on every request.
inline std::int64_t CoarseMonotonicMs() {
  timespec ts;
#if defined(CLOCK_MONOTONIC_COARSE)
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
#else
  clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
  return std::int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

// 64 random bits from the OS, for seeds and identifiers: getrandom(2) on
// Linux, which needs no /dev (a static server in an empty root or a
// `FROM scratch` image); std::random_device elsewhere (arc4random on macOS,
// rand_s on Windows).
uint64_t RandomU64();

// Names the calling thread (15 characters at most) for top, perf,
// /proc/PID/task/*/comm and debuggers. A no-op where the OS has no names.
void NameThisThread(const char* name);

// A file descriptor kept open only to push a file's writes to the device
// early (PushWriteback). Invalid (and every call a no-op) on systems without
// a write-back request, that is everywhere but Linux.
class WritebackHandle {
 public:
  WritebackHandle() = default;
  // Opens `path` read-only; invalid iff it cannot be opened or the OS has
  // no write-back request.
  explicit WritebackHandle(const char* path);
  ~WritebackHandle();
  WritebackHandle(WritebackHandle&& other) noexcept;
  WritebackHandle& operator=(WritebackHandle&& other) noexcept;
  WritebackHandle(const WritebackHandle&) = delete;
  WritebackHandle& operator=(const WritebackHandle&) = delete;

  bool valid() const { return fd_ >= 0; }

  // Starts writing the file's dirty pages to the device and waits for them
  // (Linux sync_file_range). Advisory: it makes nothing durable, and a
  // failure shows up at the next fsync. A no-op when invalid.
  void PushWriteback() const;

 private:
  int fd_ = -1;
};

// A shared library loaded at run time (dlopen / LoadLibrary), never
// unloaded: the functions taken from it stay valid for the process's life.
class SharedLibrary {
 public:
  // Loads the library of file name `name`; on failure the result is not
  // loaded() and *error says why.
  static SharedLibrary Load(const char* name, std::string* error);

  bool loaded() const { return handle_ != nullptr; }
  // The address of `symbol`, nullptr iff the library has none.
  // REQUIRES: loaded().
  void* Symbol(const char* symbol) const;

 private:
  void* handle_ = nullptr;
};

// Waits up to `timeout_ms` for socket `fd` to be readable (or writable
// too, iff `want_write`). Sets *readable iff it can be read, has failed or
// was closed by the peer. False iff the wait itself failed (not for an
// interrupted wait, which returns true with nothing ready), with the reason
// in *error.
bool WaitForSocket(int fd, bool want_write, int timeout_ms, bool* readable, std::string* error);

// The file name of libpq (PostgreSQL's client library, major version 5) as
// the system's loader finds it.
extern const char* const kLibPqName;

// How the system's libpq is installed, for an error message.
extern const char* const kLibPqHint;

}  // namespace cerulean::storage
