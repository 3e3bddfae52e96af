// Table operations (Create, Get, Delete Table, Table ACL) and the error
// answer's negotiated forms (JSON, XML, none for HEAD) through the router's
// entry point over an in-memory store, no sockets.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "server/http/test_server.h"

namespace cerulean::server {
namespace {

using testing::CheckJsonError;
using testing::HeaderOf;
using testing::kMinimalJson;
using testing::Normalized;
using testing::TestServer;

TEST_CASE("Create Table: 201 with the table, then 409 TableAlreadyExists") {
  TestServer s;
  HttpResponse res =
      s.Send(http::verb::post, "/devstoreaccount1/Tables", R"({"TableName":"tone"})");
  REQUIRE(res.result_int() == 201);
  CHECK(HeaderOf(res, "Content-Type") == kMinimalJson);
  CHECK(HeaderOf(res, "Location") == "http://127.0.0.1:10002/devstoreaccount1/Tables('tone')");
  CHECK(res.body() ==
        R"({"odata.metadata":"http://127.0.0.1:10002/devstoreaccount1/$metadata#Tables/@Element",)"
        R"("TableName":"tone"})");

  HttpResponse again =
      s.Send(http::verb::post, "/devstoreaccount1/Tables", R"({"TableName":"tone"})");
  CheckJsonError(again, 409, "TableAlreadyExists", "The table specified already exists.");
  CHECK(HeaderOf(again, "x-ms-request-id").size() == 36);
  CHECK(HeaderOf(again, "x-ms-version") == "2019-02-02");
}

TEST_CASE("Create Table: Prefer return-no-content answers 204 and is echoed on its error") {
  TestServer s;
  const testing::Headers prefer = {{"Prefer", "return-no-content"}};
  HttpResponse res =
      s.Send(http::verb::post, "/devstoreaccount1/Tables", R"({"TableName":"ttwo"})", prefer);
  CHECK(res.result_int() == 204);
  CHECK(HeaderOf(res, "Preference-Applied") == "return-no-content");
  CHECK(HeaderOf(res, "DataServiceId") == "http://127.0.0.1:10002/devstoreaccount1/Tables('ttwo')");
  HttpResponse again =
      s.Send(http::verb::post, "/devstoreaccount1/Tables", R"({"TableName":"ttwo"})", prefer);
  CHECK(again.result_int() == 409);
  CHECK(HeaderOf(again, "Preference-Applied") == "return-no-content");
}

TEST_CASE("Create Table with a bad name: 400 InvalidResourceName") {
  TestServer s;
  HttpResponse res =
      s.Send(http::verb::post, "/devstoreaccount1/Tables", R"({"TableName":"1xyz"})");
  CHECK(res.result_int() == 400);
  CHECK(HeaderOf(res, "x-ms-error-code") == "InvalidResourceName");
}

TEST_CASE("Get and Delete Table: 200, 204, then 404 ResourceNotFound") {
  TestServer s;
  REQUIRE(s.Send(http::verb::post, "/devstoreaccount1/Tables", R"({"TableName":"tthree"})")
              .result_int() == 201);
  HttpResponse got = s.Send(http::verb::get, "/devstoreaccount1/Tables('tthree')");
  CHECK(got.result_int() == 200);
  CHECK(nlohmann::json::parse(got.body())["TableName"] == "tthree");
  HttpResponse res = s.Send(http::verb::delete_, "/devstoreaccount1/Tables('tthree')");
  CHECK(res.result_int() == 204);
  CHECK(res.body().empty());
  for (http::verb verb : {http::verb::delete_, http::verb::get}) {
    CAPTURE(verb);
    CheckJsonError(s.Send(verb, "/devstoreaccount1/Tables('tthree')"), 404, "ResourceNotFound",
                   "The specified resource does not exist.");
  }
}

TEST_CASE("Table ACL of a missing table: the error is XML") {
  TestServer s;
  HttpResponse res = s.Send(http::verb::get, "/devstoreaccount1/nothere?comp=acl");
  CHECK(res.result_int() == 404);
  CHECK(HeaderOf(res, "x-ms-error-code") == "TableNotFound");
  CHECK(HeaderOf(res, "Content-Type") == "application/xml");
  CHECK(Normalized(res.body()) ==
        "<?xml version=\"1.0\" encoding=\"utf-8\" standalone=\"yes\"?>\r\n"
        "<error xmlns=\"http://schemas.microsoft.com/ado/2007/08/dataservices/metadata\">\r\n"
        "  <code>TableNotFound</code>\r\n"
        "  <message xml:lang=\"en-US\">The table specified does not exist.\n"
        "RequestId:<id>\nTime:<time></message>\r\n"
        "</error>");
}

TEST_CASE("An error answered to HEAD has its code and no body") {
  TestServer s;
  HttpResponse res = s.Send(http::verb::head, "/devstoreaccount1/Tables");
  CHECK(res.result_int() == 405);
  CHECK(HeaderOf(res, "x-ms-error-code") == "MethodNotAllowed");
  CHECK(HeaderOf(res, "Content-Type").empty());
  CHECK(res.body().empty());
}

TEST_CASE("An error before dispatch: an unsigned request is refused") {
  TestServer s;
  HttpResponse res = s.Send(http::verb::get, "/devstoreaccount1/Tables", "", {}, false);
  CHECK(res.result_int() == 403);
  CHECK(HeaderOf(res, "x-ms-error-code") == "AuthenticationFailed");
  CHECK(Normalized(res.body()).starts_with(R"({"odata.error":{"code":"AuthenticationFailed",)"));
}

}  // namespace
}  // namespace cerulean::server
