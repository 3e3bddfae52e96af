#include "storage/postgres/libpq_api.h"

#include "storage/platform.h"

namespace cerulean::storage {

const LibPq& Pq() {
  static const LibPq lib = [] {
    LibPq l;
    std::string why;
    const SharedLibrary lib = SharedLibrary::Load(kLibPqName, &why);
    if (!lib.loaded()) {
      l.error = std::string("cannot load ") + kLibPqName + " (" + kLibPqHint + "): " + why;
      return l;
    }
#define CERULEAN_LOAD(f)                                  \
  l.f = reinterpret_cast<decltype(&::f)>(lib.Symbol(#f)); \
  if (l.f == nullptr && l.error.empty()) l.error = std::string(kLibPqName) + " has no " #f;
    CERULEAN_LIBPQ_FUNCTIONS(CERULEAN_LOAD)
#undef CERULEAN_LOAD
    return l;
  }();
  return lib;
}

std::string PqMessage(const char* msg) {
  std::string s = msg != nullptr ? msg : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  // libpq's multi-line messages (one per host tried) on one line.
  std::string out;
  for (char c : s) {
    if (c == '\n' || c == '\t') c = ' ';
    if (c != ' ' || (!out.empty() && out.back() != ' ')) out += c;
  }
  return out;
}

}  // namespace cerulean::storage
