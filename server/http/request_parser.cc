#include "server/http/request_parser.h"

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <limits>
#include <new>
#include <string>

namespace cerulean::server {

namespace {

using boost::system::error_code;

// The longest field name, value, method or target accepted: each fits in
// 16 bits, as in Beast's basic_fields.
constexpr size_t kMaxFieldPartBytes = std::numeric_limits<std::uint16_t>::max() - 2;

class RequestParseCategoryImpl : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "cerulean.request"; }
  std::string message(int ev) const override {
    switch (static_cast<RequestParseError>(ev)) {
      case RequestParseError::kChunkExtensionsTooLarge:
        return "chunk extensions too large";
      case RequestParseError::kTrailerTooLarge:
        return "trailer too large";
      case RequestParseError::kFieldTooLarge:
        return "header field too large";
    }
    return "request parse error";
  }
};

}  // namespace

const boost::system::error_category& RequestParseCategory() {
  static const RequestParseCategoryImpl category;
  return category;
}

RequestParser::RequestParser() {
  body_limit(kMaxBodyBytes);
  header_limit(static_cast<std::uint32_t>(kMaxHeaderBytes));
}

void RequestParser::on_request_impl(boost::beast::http::verb /*method*/,
                                    boost::beast::string_view method_str,
                                    boost::beast::string_view target, int version, error_code& ec) {
  // The header limit bounds the request line already; the check keeps the
  // bound if that limit grows.
  if (target.size() > kMaxFieldPartBytes || method_str.size() > kMaxFieldPartBytes) {
    ec = RequestParseError::kFieldTooLarge;
    return;
  }
  m_.target(target);
  m_.method_string(std::string_view(method_str.data(), method_str.size()));
  m_.version(version);
  if (on_request_line_ != nullptr) on_request_line_->OnRequestLine();
}

void RequestParser::on_response_impl(int, boost::beast::string_view, int, error_code& ec) {
  ec = boost::beast::http::error::bad_method;  // a request parser never sees a status line
}

void RequestParser::on_field_impl(boost::beast::http::field name,
                                  boost::beast::string_view name_string,
                                  boost::beast::string_view value, error_code& ec) {
  if (header_done_) {
    trailer_bytes_ += name_string.size() + value.size();
    if (trailer_bytes_ > kMaxTrailerBytes) ec = RequestParseError::kTrailerTooLarge;
    return;
  }
  if (name_string.size() > kMaxFieldPartBytes || value.size() > kMaxFieldPartBytes) {
    ec = RequestParseError::kFieldTooLarge;
    return;
  }
  if (name == boost::beast::http::field::expect && m_.version() >= 11 &&
      boost::beast::iequals(value, "100-continue")) {
    expect_continue_ = true;
  }
  m_.insert(std::string_view(name_string.data(), name_string.size()),
            std::string_view(value.data(), value.size()));
}

void RequestParser::on_header_impl(error_code& ec) {
  header_done_ = true;
  ec = {};
}

void RequestParser::on_body_init_impl(const boost::optional<std::uint64_t>& /*content_length*/,
                                      error_code& ec) {
  // Nothing reserved: the session reserves room as the body takes it from
  // the body budget (body_budget.h), so that a body's memory follows what
  // has arrived, not what its head announced.
  ec = {};
}

std::size_t RequestParser::Take(boost::beast::string_view bytes) {
  if (!discard_body_) m_.body().append(bytes.data(), bytes.size());
  return bytes.size();
}

std::size_t RequestParser::on_body_impl(boost::beast::string_view body, error_code& ec) {
  ec = {};
  return Take(body);
}

void RequestParser::on_chunk_header_impl(std::uint64_t, boost::beast::string_view extensions,
                                         error_code& ec) {
  extension_bytes_ += extensions.size();
  if (extension_bytes_ > kMaxChunkExtensionBytes) ec = RequestParseError::kChunkExtensionsTooLarge;
}

std::size_t RequestParser::on_chunk_body_impl(std::uint64_t, boost::beast::string_view body,
                                              error_code& ec) {
  ec = {};
  return Take(body);
}

void RequestParser::on_finish_impl(error_code& ec) { ec = {}; }

void LimitReadBuffer(boost::beast::flat_buffer& buffer) { buffer.max_size(kMaxReadBufferBytes); }

}  // namespace cerulean::server
