#include "server/http/response_serializer.h"

// <ostream> before Beast: Boost 1.81's string_view.hpp uses std::ostream,
// which libc++'s <iosfwd> leaves undefined (the Zig targets).
// clang-format off
#include <ostream>
#include <boost/beast/http/status.hpp>
// clang-format on

namespace cerulean::server {

void SerializeResponse(const HttpResponse& res, std::string* out) {
  bool copy_body = res.body().size() <= kCopiedBodyBytes;
  out->clear();
  out->reserve(512 + (copy_body ? res.body().size() : 0));
  // Lengths spelled out: append(const char*) costs a strlen per call
  // whenever the compiler does not inline it.
  out->append(res.version() == 10 ? "HTTP/1.0 " : "HTTP/1.1 ", 9);
  unsigned code = res.result_int();
  char digits[3] = {static_cast<char>('0' + code / 100 % 10),
                    static_cast<char>('0' + code / 10 % 10), static_cast<char>('0' + code % 10)};
  out->append(digits, 3);
  out->push_back(' ');
  const auto reason = boost::beast::http::obsolete_reason(
      static_cast<boost::beast::http::status>(res.result_int()));
  out->append(reason.data(), reason.size());
  out->append("\r\n", 2);
  for (const auto& field : res) {
    std::string_view name = field.name_string();
    std::string_view value = field.value();
    out->append(name);
    out->append(": ", 2);
    out->append(value);
    out->append("\r\n", 2);
  }
  out->append("\r\n", 2);
  if (copy_body) out->append(res.body());
}

}  // namespace cerulean::server
