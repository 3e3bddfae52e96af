// libFuzzer entry for the HTTP request parser over the connection's read
// path: RequestParser with its limits and the limited read buffer, reading
// pipelined requests as HttpSession does (ReadRequests). The input's first
// byte sets how many bytes each read returns (1 to 256, or everything when
// it is 0), the rest is what the client sends. Any exception, crash or
// request over the limits is a finding. Build (clang):
//   clang++ -std=c++20 -g -O1 -DNDEBUG -fsanitize=fuzzer,address,undefined -I. \
//     server/http/http_request_fuzz.cc server/http/request_parser.cc
// Seeds: fuzz_seeds/http_request/ (one request or a pipeline each, with the
// piece-size byte first).
//
// The fuzz preset builds with NDEBUG and the sanitizer build defines
// BOOST_DISABLE_ASSERTS (CMakeLists.txt): Boost 1.81's basic_parser.ipp:702
// asserts `n >= 5` when it re-enters the last chunk with 4 bytes buffered
// ("0\r\n" then one trailer byte in a later read), valid input that the code
// below the assertion handles.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "server/http/request_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cerulean::server;
  if (size == 0) return 0;
  const size_t piece = data[0] == 0 ? size : data[0];
  const std::string_view wire(reinterpret_cast<const char*>(data) + 1, size - 1);
  size_t bytes = 0;
  boost::system::error_code ec = ReadRequests(wire, piece, [&](HttpRequest& req) {
    if (req.body().size() > kMaxBodyBytes) std::abort();
    if (req.target().size() > kMaxHeaderBytes) std::abort();
    bytes += req.target().size() + req.body().size();
  });
  // Every request consumed input; reading ends with an error or at the end.
  if (!ec || bytes > wire.size()) std::abort();
  return 0;
}
