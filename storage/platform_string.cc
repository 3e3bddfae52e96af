// The C library's memcmp, bcmp, memchr, memcpy and memmove, defined with the
// functions of platform_string.h, for a server linked statically against a C
// library whose own are slow (CMake option CERULEAN_STRING_FUNCTIONS, which
// links this file into the server as an object file: its definitions then
// keep the C library archive's members out, and replace the weak ones of
// the compiler's runtime). Compiled with -fno-builtin, so that no loop
// becomes a call of the function it is in. Never part of a module library,
// nor of a build linked against a shared C library.
#include "storage/platform_string.h"

#include <cstddef>

extern "C" {

int memcmp(const void* a, const void* b, std::size_t n) {
  return cerulean::storage::CompareBytes(a, b, n);
}

// What the compiler calls for `memcmp(...) == 0`.
int bcmp(const void* a, const void* b, std::size_t n) {
  return cerulean::storage::CompareBytes(a, b, n);
}

void* memchr(const void* s, int c, std::size_t n) {
  return const_cast<void*>(cerulean::storage::FindByte(s, c, n));
}

void* memcpy(void* __restrict dst, const void* __restrict src, std::size_t n) {
  cerulean::storage::CopyBytes(dst, src, n);
  return dst;
}

// Defined as well: musl's x86-64 memmove jumps into its memcpy's object,
// which would then be linked too and define memcpy twice.
void* memmove(void* dst, const void* src, std::size_t n) {
  cerulean::storage::MoveBytes(dst, src, n);
  return dst;
}

}  // extern "C"
