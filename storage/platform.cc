#include "storage/platform.h"

#include <algorithm>
#include <random>
#include <thread>
#include <utility>

#if defined(_WIN32)
// winsock2.h before windows.h, which would include the old winsock.h.
#include <windows.h>
#include <winsock2.h>
#else
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/random.h>
#endif

#include <cerrno>
#include <cstring>
#endif

namespace cerulean::storage {

std::tm UtcTime(std::time_t t) {
  std::tm tm{};
#if defined(_WIN32)
  gmtime_s(&tm, &t);
#else
  gmtime_r(&t, &tm);
#endif
  return tm;
}

unsigned UsableCpus() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
#elif defined(_WIN32)
  // hardware_concurrency counts only the calling thread's processor group.
  const DWORD count = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
  if (count > 0) return static_cast<unsigned>(count);
#endif
  return std::max(1u, std::thread::hardware_concurrency());
}

uint64_t RandomU64() {
#if defined(__linux__)
  uint64_t v = 0;
  // Up to 256 bytes never return short once the pool is initialised; EINTR
  // only before it is.
  for (int tries = 0; tries < 100; ++tries) {
    if (getrandom(&v, sizeof v, 0) == static_cast<ssize_t>(sizeof v)) return v;
  }
#endif
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

void NameThisThread(const char* name) {
#if defined(__APPLE__)
  pthread_setname_np(name);  // names only the calling thread
#elif defined(_WIN32)
  // SetThreadDescription (Windows 10 1607), looked up at run time: MinGW's
  // headers do not declare it.
  using SetDescription = HRESULT(WINAPI*)(HANDLE, PCWSTR);
  static const auto set_description = reinterpret_cast<SetDescription>(reinterpret_cast<void*>(
      GetProcAddress(GetModuleHandleW(L"kernel32.dll"), "SetThreadDescription")));
  if (set_description == nullptr) return;
  wchar_t wide[16] = {};
  for (int i = 0; i < 15 && name[i] != '\0'; ++i) wide[i] = static_cast<unsigned char>(name[i]);
  set_description(GetCurrentThread(), wide);
#else
  pthread_setname_np(pthread_self(), name);
#endif
}

WritebackHandle::WritebackHandle(const char* path) {
#if defined(__linux__)
  fd_ = open(path, O_RDONLY | O_CLOEXEC);
#else
  (void)path;
#endif
}

WritebackHandle::~WritebackHandle() {
#if !defined(_WIN32)
  if (fd_ >= 0) close(fd_);
#endif
}

WritebackHandle::WritebackHandle(WritebackHandle&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)) {}

WritebackHandle& WritebackHandle::operator=(WritebackHandle&& other) noexcept {
  std::swap(fd_, other.fd_);
  return *this;
}

void WritebackHandle::PushWriteback() const {
#if defined(__linux__)
  if (fd_ < 0) return;
  sync_file_range(fd_, 0, 0,
                  SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
#endif
}

SharedLibrary SharedLibrary::Load(const char* name, std::string* error) {
  SharedLibrary lib;
#if defined(_WIN32)
  lib.handle_ = reinterpret_cast<void*>(LoadLibraryA(name));
  if (lib.handle_ == nullptr) *error = "error " + std::to_string(GetLastError());
#else
  lib.handle_ = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (lib.handle_ == nullptr) {
    const char* why = dlerror();
    *error = why != nullptr ? why : "unknown error";
  }
#endif
  return lib;
}

void* SharedLibrary::Symbol(const char* symbol) const {
#if defined(_WIN32)
  return reinterpret_cast<void*>(GetProcAddress(static_cast<HMODULE>(handle_), symbol));
#else
  return dlsym(handle_, symbol);
#endif
}

bool WaitForSocket(int fd, bool want_write, int timeout_ms, bool* readable, std::string* error) {
  *readable = false;
#if defined(_WIN32)
  WSAPOLLFD p{static_cast<SOCKET>(fd),
              static_cast<short>(POLLRDNORM | (want_write ? POLLWRNORM : 0)), 0};
  const int ready = WSAPoll(&p, 1, timeout_ms);
  if (ready == SOCKET_ERROR) {
    *error = "WSAPoll: error " + std::to_string(WSAGetLastError());
    return false;
  }
  *readable = ready > 0 && (p.revents & (POLLRDNORM | POLLERR | POLLHUP)) != 0;
#else
  pollfd p{fd, static_cast<short>(POLLIN | (want_write ? POLLOUT : 0)), 0};
  const int ready = poll(&p, 1, timeout_ms);
  if (ready < 0) {
    if (errno == EINTR) return true;
    *error = std::string("poll: ") + std::strerror(errno);
    return false;
  }
  *readable = ready > 0 && (p.revents & (POLLIN | POLLERR | POLLHUP)) != 0;
#endif
  return true;
}

#if defined(_WIN32)
const char* const kLibPqName = "libpq.dll";
const char* const kLibPqHint = "PostgreSQL's bin folder on PATH";
#elif defined(__APPLE__)
const char* const kLibPqName = "libpq.5.dylib";
const char* const kLibPqHint = "Homebrew's libpq, or DYLD_LIBRARY_PATH naming its lib folder";
#else
const char* const kLibPqName = "libpq.so.5";
const char* const kLibPqHint = "Debian package libpq5";
#endif

}  // namespace cerulean::storage
