// One HTTP/1.1 connection: read with timeouts and size limits, answer,
// keep alive, close gracefully (Beast advanced_server).
// Thread-safety: a Session runs on its own strand.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <memory>
#include <optional>
#include <string>

#include "server/request.h"

namespace cerulean::server {

// Largest request body accepted (batches included); larger ones get 413.
inline constexpr size_t kMaxBodyBytes = 4 * 1024 * 1024;

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(boost::asio::ip::tcp::socket&& socket, const ServerContext& ctx);
  void Run();

 private:
  void DoRead();
  void OnRead(boost::beast::error_code ec, std::size_t bytes);
  // Sends the answer to request_ (on the session's strand).
  void Respond(HttpResponse res);
  void DoWrite(HttpResponse res, bool close);
  void OnWrite(bool close, boost::beast::error_code ec, std::size_t bytes);
  void DoClose();
  void Fail(boost::beast::error_code ec, const char* what);
  // Answers 413 RequestBodyTooLarge for an oversized body, then closes.
  void RejectTooLarge();

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  const ServerContext& ctx_;
  std::optional<http::request_parser<http::string_body>> parser_;
  HttpRequest request_;  // the request being answered
  HttpResponse response_;
  std::string peer_;
};

}  // namespace cerulean::server
