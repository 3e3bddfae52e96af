// Tests of RequestParser and the limits of the connection's read path
// (ReadRequests reads as a session does, without sockets).
#include "server/http/request_parser.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace cerulean::server {

namespace {

using boost::system::error_code;

struct Outcome {
  error_code ec;  // what ended reading
  std::vector<HttpRequest> requests;
};

Outcome Read(const std::string& wire, size_t piece = 1 << 20) {
  Outcome out;
  out.ec = ReadRequests(wire, piece, [&](HttpRequest& req) { out.requests.push_back(req); });
  return out;
}

std::string Chunked(const std::string& chunks_and_trailer) {
  return "POST /t HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks_and_trailer;
}

}  // namespace

TEST_CASE("requests are read whole, pipelined, in pieces of any size") {
  std::string wire =
      "GET /a?x=1 HTTP/1.1\r\nHost: h\r\nX-Ms-Version: 2019-02-02\r\n\r\n"
      "POST /b HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello" +
      Chunked("3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
  for (size_t piece : {1, 7, 100, 1 << 16}) {
    CAPTURE(piece);
    Outcome out = Read(wire, piece);
    CHECK(out.ec == boost::beast::http::error::end_of_stream);
    REQUIRE(out.requests.size() == 3);
    CHECK(out.requests[0].target() == "/a?x=1");
    CHECK(out.requests[0]["x-ms-version"] == "2019-02-02");
    CHECK(out.requests[1].body() == "hello");
    CHECK(out.requests[2].body() == "abcde");
  }
}

TEST_CASE("content-length and chunked bodies arrive whole and exact, in any pieces") {
  std::mt19937 rng(11);
  for (int iter = 0; iter < 300; ++iter) {
    std::string body(rng() % 5000, '\0');
    for (char& c : body) c = static_cast<char>(rng());
    const size_t piece = 1 + rng() % 700;
    CAPTURE(body.size());
    CAPTURE(piece);
    const std::string head = "POST /devstoreaccount1/$batch HTTP/1.1\r\nHost: x\r\n";
    Outcome sized =
        Read(head + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body, piece);
    REQUIRE(sized.requests.size() == 1);
    REQUIRE(sized.requests[0].body() == body);

    std::string chunked = head + "Transfer-Encoding: chunked\r\n\r\n";
    for (size_t at = 0; at < body.size();) {
      const size_t n = std::min<size_t>(1 + rng() % 900, body.size() - at);
      char size_hex[16];
      std::snprintf(size_hex, sizeof size_hex, "%zx", n);
      chunked += std::string(size_hex) + "\r\n" + body.substr(at, n) + "\r\n";
      at += n;
    }
    Outcome out = Read(chunked + "0\r\n\r\n", piece);
    REQUIRE(out.requests.size() == 1);
    REQUIRE(out.requests[0].body() == body);
  }
}

TEST_CASE("a trailer field over 64 KiB is an error, not an exception") {
  // Beast's own parser threw std::length_error for this from the read handler.
  std::string wire = Chunked("1\r\na\r\n0\r\nX-Long: " + std::string(70 * 1024, 'v') + "\r\n\r\n");
  for (size_t piece : {1000, 1 << 20}) {
    Outcome out;
    CHECK_NOTHROW(out = Read(wire, piece));
    CHECK(out.requests.empty());
    CHECK(out.ec);
  }
  // Within the read buffer, but over the trailer limit.
  Outcome out = Read(Chunked("1\r\na\r\n0\r\nX-Long: " + std::string(60 * 1024, 'v') + "\r\n\r\n"));
  CHECK(out.ec == RequestParseError::kTrailerTooLarge);
}

TEST_CASE("an endless trailer or chunk line ends at the read buffer's limit") {
  std::string fields;
  while (fields.size() < 1024 * 1024) fields += "X-A: b\r\n";
  Outcome out = Read(Chunked("1\r\na\r\n0\r\n" + fields), 4096);
  CHECK(out.ec == boost::beast::http::error::buffer_overflow);
  out = Read(Chunked("1;" + std::string(1024 * 1024, 'e')), 4096);
  CHECK(out.ec == boost::beast::http::error::buffer_overflow);
  out = Read(Chunked(std::string(1024 * 1024, '1')), 4096);
  CHECK(out.ec);
}

TEST_CASE("trailer fields are bounded and not merged into the headers") {
  Outcome out = Read(Chunked("2\r\nab\r\n0\r\nAuthorization: SharedKey x\r\nX-T: 1\r\n\r\n"));
  REQUIRE(out.requests.size() == 1);
  CHECK(out.requests[0].body() == "ab");
  CHECK(out.requests[0].find("Authorization") == out.requests[0].end());
  CHECK(out.requests[0].find("X-T") == out.requests[0].end());
}

TEST_CASE("chunk extensions are bounded per request") {
  Outcome out = Read(Chunked("1;a=b\r\nx\r\n0\r\n\r\n"));
  REQUIRE(out.requests.size() == 1);
  CHECK(out.requests[0].body() == "x");
  std::string chunks;
  for (int i = 0; i < 100; ++i) chunks += "1;name=" + std::string(100, 'v') + "\r\nx\r\n";
  out = Read(Chunked(chunks + "0\r\n\r\n"));
  CHECK(out.ec == RequestParseError::kChunkExtensionsTooLarge);
}

TEST_CASE("header and body limits") {
  Outcome out = Read("GET /" + std::string(70 * 1024, 'a') + " HTTP/1.1\r\n\r\n", 8192);
  CHECK(out.ec == boost::beast::http::error::header_limit);
  out = Read("GET / HTTP/1.1\r\nX-Big: " + std::string(70 * 1024, 'a') + "\r\n\r\n", 8192);
  CHECK(out.ec == boost::beast::http::error::header_limit);
  out = Read("PUT /t HTTP/1.1\r\nContent-Length: 4194305\r\n\r\n");
  CHECK(out.ec == boost::beast::http::error::body_limit);
  out = Read("PUT /t HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n");
  CHECK(out.ec);
  CHECK(out.requests.empty());
  out = Read(Chunked("400001\r\n"));
  CHECK(out.ec == boost::beast::http::error::body_limit);
  out = Read(Chunked("zz\r\n"));
  CHECK(out.ec == boost::beast::http::error::bad_chunk);
}

TEST_CASE("the head is read alone; the body after it, kept or dropped") {
  std::string head = "PUT /t HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-Continue\r\n\r\n";
  std::string body = "abc";
  for (bool discard : {false, true}) {
    CAPTURE(discard);
    const std::string whole = head + body;
    internal::StringStream stream(whole, 1 << 20);
    boost::beast::flat_buffer buffer;
    RequestParser parser;
    error_code ec;
    boost::beast::http::read_header(stream, buffer, parser, ec);
    CHECK_MESSAGE(!ec, ec.message());
    CHECK(parser.is_header_done());
    CHECK_FALSE(parser.is_done());
    CHECK(parser.expects_continue());
    // The body came with the head but is not parsed yet.
    CHECK(buffer.size() == body.size());
    CHECK(parser.get().body().empty());
    if (discard) parser.DiscardBody();
    boost::beast::http::read(stream, buffer, parser, ec);
    CHECK(!ec);
    CHECK(parser.is_done());
    CHECK(parser.release().body() == (discard ? "" : "abc"));
  }
  // A dropped chunked body keeps the connection in step: the next request
  // is read whole.
  const std::string wire =
      Chunked("3\r\nabc\r\n0\r\n\r\n") + "GET /next HTTP/1.1\r\nHost: h\r\n\r\n";
  internal::StringStream stream(wire, 5);
  boost::beast::flat_buffer buffer;
  RequestParser first;
  error_code ec;
  boost::beast::http::read_header(stream, buffer, first, ec);
  REQUIRE(!ec);
  first.DiscardBody();
  boost::beast::http::read(stream, buffer, first, ec);
  REQUIRE(!ec);
  CHECK(first.get().body().empty());
  RequestParser second;
  boost::beast::http::read(stream, buffer, second, ec);
  CHECK(!ec);
  CHECK(second.get().target() == "/next");

  // HTTP/1.0 does not expect 100 Continue.
  Outcome out = Read("GET /t HTTP/1.1\r\nExpect: 100-continue\r\n\r\n");
  CHECK(out.requests.size() == 1);
  RequestParser old;
  old.eager(true);
  std::string head10 = "PUT /t HTTP/1.0\r\nContent-Length: 1\r\nExpect: 100-continue\r\n\r\nx";
  old.put(boost::asio::buffer(head10), ec);
  CHECK(!ec);
  CHECK(old.is_done());
  CHECK_FALSE(old.expects_continue());
  out = Read(head + body);
  REQUIRE(out.requests.size() == 1);
  CHECK(out.requests[0].body() == "abc");
}

TEST_CASE("malformed framing fails the read") {
  using namespace std::string_literals;
  for (const std::string& wire : {
           "GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"s,
           "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n"s,
           "GET / HTTP/1.1\r\nX: a\0b\r\n\r\n"s,
           "GET\0/ HTTP/1.1\r\n\r\n"s,
           "HTTP/1.1 200 OK\r\n\r\n"s,
       }) {
    CAPTURE(wire);
    Outcome out;
    CHECK_NOTHROW(out = Read(wire));
    CHECK(out.ec != boost::beast::http::error::end_of_stream);
  }
}

}  // namespace cerulean::server
