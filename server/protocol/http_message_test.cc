// Tests of the HTTP messages every layer above the HTTP layer sees: field
// look-up by name in any case, among few fields or thousands; set and
// erase; views that outlive changes; keep-alive by version; the payload's
// Content-Length.
#include "server/protocol/http_message.h"

#include <doctest/doctest.h>

#include <string>
#include <utility>

namespace cerulean::server::http {

TEST_CASE("Fields: the first field of a name, in any case, among few fields or thousands") {
  for (int n : {0, 3, 32, 33, 5000}) {
    CAPTURE(n);
    Request req;
    for (int i = 0; i < n; ++i) req.insert("X-F-" + std::to_string(i % 700), std::to_string(i));
    req.insert("Content-Type", "a");
    req.insert("content-type", "b");
    CHECK(req["CONTENT-TYPE"] == "a");
    CHECK(req.count("content-type") == 2);
    CHECK(req.find("Accept") == req.end());
    CHECK(req["accept"].empty());
    if (n > 0) CHECK(req["x-f-0"] == "0");
    // The index follows a change.
    req.set("Content-Type", "c");
    CHECK(req["content-type"] == "c");
    CHECK(req.count("Content-Type") == 1);
    CHECK(req.erase("CONTENT-type") == 1);
    CHECK(req["content-type"].empty());
  }
}

TEST_CASE("Fields: a view stays valid as fields are added, set, erased and the message moves") {
  Response res;
  res.insert("ETag", "W/\"1\"");
  const std::string_view etag = res["etag"];
  for (int i = 0; i < 2000; ++i) res.insert("X-" + std::to_string(i), std::string(40, 'v'));
  res.set("ETag", "W/\"2\"");
  Response moved = std::move(res);
  CHECK(etag == "W/\"1\"");
  CHECK(moved["ETag"] == "W/\"2\"");
  Response copy = moved;
  CHECK(copy["x-1999"] == std::string(40, 'v'));
  CHECK(copy.fields() == moved.fields());
}

TEST_CASE("Fields: a moved-from message is empty and writes nothing into the other's chunks") {
  Response from;
  from.insert("ETag", "W/\"1\"");
  Response to = std::move(from);
  CHECK(from.fields() == 0);
  from.insert("Location", "elsewhere");
  to.insert("Server", "Cerulean");
  CHECK(to["ETag"] == "W/\"1\"");
  CHECK(to["Server"] == "Cerulean");
  CHECK(from["Location"] == "elsewhere");
  Response assigned;
  assigned.insert("A", "1");
  assigned = std::move(to);
  CHECK(to.fields() == 0);
  to.insert("B", std::string(2000, 'b'));
  CHECK(assigned.fields() == 2);
  CHECK(assigned["ETag"] == "W/\"1\"");
  CHECK(assigned["Server"] == "Cerulean");
  CHECK(assigned["A"].empty());
  CHECK(to["B"].size() == 2000);
}

TEST_CASE("keep-alive: HTTP/1.1 unless Connection: close, HTTP/1.0 only with keep-alive") {
  Request req(verb::get, "/", 11);
  CHECK(req.keep_alive());
  req.insert("Connection", "Upgrade, Close");
  CHECK_FALSE(req.keep_alive());
  Request old(verb::get, "/", 10);
  CHECK_FALSE(old.keep_alive());
  old.insert("Connection", "keep-alive");
  CHECK(old.keep_alive());

  Response res(status::ok, 11);
  res.keep_alive(false);
  CHECK(res["Connection"] == "close");
  CHECK(res.need_eof());
  res.keep_alive(true);
  CHECK(res.find("Connection") == res.end());
  Response res10(status::ok, 10);
  res10.keep_alive(true);
  CHECK(res10["Connection"] == "keep-alive");
}

TEST_CASE("prepare_payload: Content-Length of the body; none where the status has no body") {
  Response res(status::ok, 11);
  res.body() = "hello";
  res.prepare_payload();
  CHECK(res["Content-Length"] == "5");
  res.result(status::no_content);
  res.prepare_payload();
  CHECK(res.find("Content-Length") == res.end());
  CHECK(res.body().empty());
  CHECK(res.result_int() == 204);

  Request get(verb::get, "/t", 11);
  get.prepare_payload();
  CHECK(get.find("Content-Length") == get.end());
  Request put(verb::put, "/t", 11);
  put.prepare_payload();
  CHECK(put["Content-Length"] == "0");
}

TEST_CASE("verbs: the Table service's methods by name, any other unknown with its name kept") {
  Request req;
  req.method_string("MERGE");
  CHECK(req.method() == verb::merge);
  req.method_string("BREW");
  CHECK(req.method() == verb::unknown);
  CHECK(req.method_string() == "BREW");
  req.method(verb::delete_);
  CHECK(req.method_string() == "DELETE");
  CHECK(StringToVerb("get") == verb::unknown);
}

}  // namespace cerulean::server::http
