// Tests of RequestBody, the request body type the sessions parse into.
#include "server/request.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <string_view>

namespace cerulean::server {

namespace {

// Feeds `wire` to a parser in pieces of at most `piece` bytes; returns the
// parsed request's body, or "<error>".
std::string ParseInPieces(std::string_view wire, size_t piece) {
  http::request_parser<RequestBody> parser;
  parser.body_limit(1 << 20);
  boost::system::error_code ec;
  size_t offset = 0;
  std::string pending;
  while (!parser.is_done()) {
    if (offset < wire.size()) {
      const size_t n = std::min(piece, wire.size() - offset);
      pending.append(wire.substr(offset, n));
      offset += n;
    } else if (pending.empty()) {
      return "<error>";  // the message never completed
    }
    size_t used = parser.put(boost::asio::buffer(pending), ec);
    if (ec == http::error::need_more) ec = {};
    if (ec) return "<error>";
    pending.erase(0, used);
    if (used == 0 && offset >= wire.size()) return "<error>";
  }
  return parser.release().body();
}

}  // namespace

TEST_CASE("RequestBody: content-length and chunked bodies arrive whole, in any pieces") {
  std::mt19937 rng(11);
  for (int iter = 0; iter < 300; ++iter) {
    std::string body(rng() % 5000, '\0');
    for (char& c : body) c = static_cast<char>(rng());
    const size_t piece = 1 + rng() % 700;
    CAPTURE(body.size());
    CAPTURE(piece);
    const std::string head = "POST /devstoreaccount1/$batch HTTP/1.1\r\nHost: x\r\n";
    const std::string sized =
        head + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    REQUIRE(ParseInPieces(sized, piece) == body);

    std::string chunked = head + "Transfer-Encoding: chunked\r\n\r\n";
    for (size_t at = 0; at < body.size();) {
      const size_t n = std::min<size_t>(1 + rng() % 900, body.size() - at);
      char size_hex[16];
      std::snprintf(size_hex, sizeof size_hex, "%zx", n);
      chunked += std::string(size_hex) + "\r\n" + body.substr(at, n) + "\r\n";
      at += n;
    }
    chunked += "0\r\n\r\n";
    REQUIRE(ParseInPieces(chunked, piece) == body);
  }
}

TEST_CASE("RequestBody: the parser's body limit still holds") {
  http::request_parser<RequestBody> parser;
  parser.body_limit(10);
  boost::system::error_code ec;
  const std::string wire = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello world";
  parser.put(boost::asio::buffer(wire), ec);
  CHECK(ec == http::error::body_limit);
}

}  // namespace cerulean::server
