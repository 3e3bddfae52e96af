// The HTTP/1.1 request parser of a connection, with every limit on what a
// client may make the server hold: request line and headers, each field,
// chunk extensions, trailers, body, and the connection's read buffer.
// HttpSession reads each request through it, and http_request_fuzz.cc
// fuzzes the same configuration; a limit changed here changes both.
//
// It is Beast's http::basic_parser writing into the request model every
// layer above this one sees (HttpRequest, protocol/http_message.h), so that
// only this layer knows Beast. Unlike Beast's http::request_parser:
//  - no callback throws, and every field is bounded (kFieldTooLarge);
//    Beast bounds neither the trailer nor chunk extensions (only the read
//    buffer's size does);
//  - trailer fields are counted and bounded, not merged into the headers
//    (RFC 9110 §6.5.1: a recipient must not merge a trailer field it does
//    not know to be allowed there; no Table operation reads one);
//  - its body can be dropped as it is parsed (DiscardBody), for a request
//    answered without it: the connection stays in step without holding it.
// The session reads the head first (http::async_read_header) and decides
// from it whether the body is read (router.h), so that it can answer
// `Expect: 100-continue` with 100 Continue or a final error before the
// client sends the body.
// Thread-safety: one parser per request, used by one thread.
#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

#include "server/protocol/request.h"

namespace cerulean::server {

// Largest request body accepted (batches included); larger ones get 413
// RequestBodyTooLarge (Azure's limit for every operation, errors-limits.md
// §4.4 and §4.6; entities are further limited to 1 MiB by their codec).
inline constexpr size_t kMaxBodyBytes = 4 * 1024 * 1024;
// Request line plus headers; longer ones get 414 or 431.
inline constexpr size_t kMaxHeaderBytes = 64 * 1024;
// Chunk extensions, summed over all the chunks of one request (no Table
// client sends any).
inline constexpr size_t kMaxChunkExtensionBytes = 4 * 1024;
// Trailer field names and values, summed over one request.
inline constexpr size_t kMaxTrailerBytes = 8 * 1024;
// The read buffer's maximum size: a whole header (up to kMaxHeaderBytes,
// after which the parser reports header_limit) plus one read of 64 KiB
// (Beast's largest). A chunk-size line or trailer that does not end
// within it fails the read with http::error::buffer_overflow.
inline constexpr size_t kMaxReadBufferBytes = kMaxHeaderBytes + 64 * 1024;

// Errors of RequestParser beyond Beast's http::error.
enum class RequestParseError {
  kChunkExtensionsTooLarge = 1,
  kTrailerTooLarge,
  kFieldTooLarge,  // a field name or value over 65,533 bytes
};
}  // namespace cerulean::server

template <>
struct boost::system::is_error_code_enum<cerulean::server::RequestParseError> : std::true_type {};

namespace cerulean::server {

const boost::system::error_category& RequestParseCategory();
inline boost::system::error_code make_error_code(RequestParseError e) {
  return {static_cast<int>(e), RequestParseCategory()};
}

// Told by a RequestParser when it has parsed a request line.
class RequestLineObserver {
 public:
  virtual void OnRequestLine() = 0;

 protected:
  ~RequestLineObserver() = default;
};

class RequestParser : public boost::beast::http::basic_parser<true> {
 public:
  // Sets the header and body limits above.
  RequestParser();

  // The request; valid once is_header_done().
  HttpRequest& get() { return m_; }
  HttpRequest release() { return std::move(m_); }
  // True iff the header asked for 100 Continue (HTTP/1.1 only).
  bool expects_continue() const { return expect_continue_; }
  // Parses the rest of the body without keeping it. REQUIRES: no body byte
  // was parsed yet.
  void DiscardBody() { discard_body_ = true; }
  // Tells `observer` once the request line has been parsed (the session
  // moves from its keep-alive deadline to the request's). Beast parses the
  // request line as soon as the first bytes of a request hold it whole;
  // when they do not, only once the whole header has arrived, so a client
  // that trickles its header stays under the keep-alive deadline.
  // REQUIRES: `observer` outlives the parser.
  void OnRequestLine(RequestLineObserver* observer) { on_request_line_ = observer; }

 private:
  void on_request_impl(boost::beast::http::verb method, boost::beast::string_view method_str,
                       boost::beast::string_view target, int version,
                       boost::system::error_code& ec) override;
  void on_response_impl(int, boost::beast::string_view, int,
                        boost::system::error_code& ec) override;
  void on_field_impl(boost::beast::http::field name, boost::beast::string_view name_string,
                     boost::beast::string_view value, boost::system::error_code& ec) override;
  void on_header_impl(boost::system::error_code& ec) override;
  void on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                         boost::system::error_code& ec) override;
  std::size_t on_body_impl(boost::beast::string_view body, boost::system::error_code& ec) override;
  void on_chunk_header_impl(std::uint64_t size, boost::beast::string_view extensions,
                            boost::system::error_code& ec) override;
  std::size_t on_chunk_body_impl(std::uint64_t remain, boost::beast::string_view body,
                                 boost::system::error_code& ec) override;
  void on_finish_impl(boost::system::error_code& ec) override;
  // Appends `bytes` to the body, unless it is being discarded; returns
  // their count.
  std::size_t Take(boost::beast::string_view bytes);

  HttpRequest m_;
  std::size_t extension_bytes_ = 0;
  std::size_t trailer_bytes_ = 0;
  bool header_done_ = false;  // fields from now on are trailer fields
  bool expect_continue_ = false;
  bool discard_body_ = false;
  RequestLineObserver* on_request_line_ = nullptr;
};

// Makes `buffer` a connection's read buffer: limited to kMaxReadBufferBytes.
void LimitReadBuffer(boost::beast::flat_buffer& buffer);

namespace internal {

// A SyncReadStream over a string, at most `piece` bytes per read.
class StringStream {
 public:
  StringStream(std::string_view data, size_t piece) : data_(data), piece_(piece) {}

  template <class MutableBufferSequence>
  std::size_t read_some(const MutableBufferSequence& buffers, boost::system::error_code& ec) {
    ec = {};
    if (data_.empty()) {
      ec = boost::asio::error::eof;
      return 0;
    }
    size_t n = boost::asio::buffer_copy(buffers, boost::asio::buffer(data_.substr(0, piece_)));
    data_.remove_prefix(n);
    return n;
  }
  template <class MutableBufferSequence>
  std::size_t read_some(const MutableBufferSequence& buffers) {
    boost::system::error_code ec;
    size_t n = read_some(buffers, ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }

 private:
  std::string_view data_;
  const size_t piece_;
};

}  // namespace internal

// Reads the requests in `wire` one after another as a connection does (a
// RequestParser each, one limited read buffer, the head first and then the
// body), the bytes arriving at most `piece` at a time; calls
// `on_request` with each complete request. Returns the error that ended
// reading: http::error::end_of_stream when the bytes ended between
// requests. For tests and the fuzzer (http_request_fuzz.cc).
// REQUIRES: piece > 0. Inline, so that the parser's code is compiled with
// the caller's assertion settings (http_request_fuzz.cc).
inline boost::system::error_code ReadRequests(std::string_view wire, size_t piece,
                                              const std::function<void(HttpRequest&)>& on_request) {
  internal::StringStream stream(wire, piece);
  boost::beast::flat_buffer buffer;
  LimitReadBuffer(buffer);
  for (;;) {
    RequestParser parser;
    boost::system::error_code ec;
    boost::beast::http::read_header(stream, buffer, parser, ec);
    if (!ec && !parser.is_done()) boost::beast::http::read(stream, buffer, parser, ec);
    if (ec) return ec;
    HttpRequest request = parser.release();
    on_request(request);
  }
}

}  // namespace cerulean::server
