// Tests of the hand-written HTTP/1.1 serializer: the bytes a client reads,
// parsed back with Beast's own parser.
#include "server/http/response_serializer.h"

#include <doctest/doctest.h>

#include <boost/beast/http.hpp>
#include <string>

namespace cerulean::server {

namespace {

// `wire` (the head and whatever body was copied behind it) followed by
// `rest`, parsed as a response.
boost::beast::http::response<boost::beast::http::string_body> ParseBack(const std::string& wire,
                                                                        const std::string& rest) {
  boost::beast::http::response_parser<boost::beast::http::string_body> parser;
  parser.eager(true);
  boost::beast::error_code ec;
  const std::string all = wire + rest;
  const size_t used = parser.put(boost::asio::buffer(all), ec);
  REQUIRE_FALSE(ec);
  CHECK(used == all.size());
  REQUIRE(parser.is_done());
  return parser.release();
}

}  // namespace

TEST_CASE("a small response is serialized whole: status line, fields, body") {
  HttpResponse res{http::status::created, 11};
  res.set("Content-Type", "application/json");
  res.set("x-ms-request-id", "abc");
  res.body() = R"({"ok":true})";
  res.prepare_payload();
  std::string wire;
  SerializeResponse(res, &wire);
  CHECK(wire.starts_with("HTTP/1.1 201 Created\r\n"));
  CHECK(wire.ends_with("\r\n\r\n" + res.body()));
  const auto back = ParseBack(wire, "");
  CHECK(back.result_int() == 201);
  CHECK(back["Content-Type"] == "application/json");
  CHECK(back["x-ms-request-id"] == "abc");
  CHECK(back.body() == res.body());
}

TEST_CASE("a large body is left out of the head, to be written from the response") {
  HttpResponse res{http::status::ok, 11};
  res.body() = std::string(kCopiedBodyBytes + 1, 'x');
  res.prepare_payload();
  std::string wire;
  SerializeResponse(res, &wire);
  CHECK(wire.ends_with("\r\n\r\n"));
  CHECK(wire.find("xx") == std::string::npos);
  CHECK(ParseBack(wire, res.body()).body() == res.body());
}

TEST_CASE("the reason phrase is the standard one; HTTP/1.0 is kept") {
  HttpResponse res{http::status::service_unavailable, 10};
  res.prepare_payload();
  std::string wire;
  SerializeResponse(res, &wire);
  CHECK(wire.starts_with("HTTP/1.0 503 Service Unavailable\r\n"));
}

}  // namespace cerulean::server
