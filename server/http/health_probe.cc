#include "server/http/health_probe.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

namespace cerulean::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

std::string ProbeHealth(const std::string& host, unsigned short port,
                        std::chrono::milliseconds timeout) {
  asio::io_context ioc(1);
  asio::ip::tcp::resolver resolver(ioc);
  beast::tcp_stream stream(ioc);
  beast::flat_buffer buffer;
  http::request<http::empty_body> request(http::verb::get, "/_health", 11);
  request.set(http::field::host, host);
  http::response<http::string_body> response;
  std::string error;
  bool answered = false;
  auto fail = [&](const boost::system::error_code& ec, const char* what) {
    error = std::string(what) + ": " + ec.message();
  };
  // One deadline for the whole exchange: each step continues the last.
  stream.expires_after(timeout);
  resolver.async_resolve(
      host, std::to_string(port),
      [&](const boost::system::error_code& ec, asio::ip::tcp::resolver::results_type results) {
        if (ec) return fail(ec, "resolve");
        stream.async_connect(
            results, [&](const boost::system::error_code& ec, const asio::ip::tcp::endpoint&) {
              if (ec) return fail(ec, "connect");
              http::async_write(stream, request, [&](const boost::system::error_code& ec, size_t) {
                if (ec) return fail(ec, "write");
                http::async_read(stream, buffer, response,
                                 [&](const boost::system::error_code& ec, size_t) {
                                   if (ec) return fail(ec, "read");
                                   answered = true;
                                 });
              });
            });
      });
  ioc.run_for(timeout + std::chrono::milliseconds(100));
  if (!error.empty()) return error;
  if (!answered) return "no answer within the timeout";
  if (response.result() != http::status::ok) {
    return "GET /_health answered " + std::to_string(response.result_int()) + " " +
           std::string(response.reason());
  }
  return {};
}

}  // namespace cerulean::server
