// glibc 2.36 functions for the portable server (CMakeLists.txt,
// CERULEAN_PORTABLE), so that it runs on glibc 2.34 (RHEL 9, Ubuntu 22.04).
//
// The static archives it links were built on glibc 2.36 and call
// arc4random_buf (libexpat.a, to salt its hash tables) and arc4random
// (libstdc++.a, std::random_device). Defined in the executable, these resolve
// those calls here instead of in libc. Thread-safe: they only call
// getrandom(2) (glibc 2.25, Linux 3.17).
#include <sys/random.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

// Fills buf with n bytes from the kernel's random pool; never fails (aborts if
// the kernel has no getrandom, as glibc's own arc4random_buf does).
extern "C" void arc4random_buf(void* buf, std::size_t n) noexcept {
  auto* out = static_cast<unsigned char*>(buf);
  while (n > 0) {
    ssize_t got = getrandom(out, n, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      std::abort();
    }
    out += got;
    n -= static_cast<std::size_t>(got);
  }
}

// Four bytes from arc4random_buf.
extern "C" std::uint32_t arc4random() noexcept {
  std::uint32_t value;
  arc4random_buf(&value, sizeof value);
  return value;
}
