// Entity group transactions ($batch) through the router's entry point over an
// in-memory store, no sockets: a change set applied, a change set refused by
// the store or by its structure (the single error sub-response, its index
// and format), and the single retrieve.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "server/http/test_server.h"

namespace cerulean::server {
namespace {

using testing::HeaderOf;
using testing::Normalized;
using testing::TestServer;

struct Part {
  std::string method;
  std::string url;  // after http://127.0.0.1:10002/devstoreaccount1/
  testing::Headers headers;
  std::string body;
};

const testing::Headers kJsonPart = {{"Accept", "application/json;odata=minimalmetadata"},
                                    {"Content-Type", "application/json"}};

// A $batch body of `parts`: a change set, or a single retrieve when not
// `changeset`.
std::string BatchBody(const std::vector<Part>& parts, bool changeset = true) {
  std::string out = "--batch_b\r\n";
  std::string delimiter = "--batch_b";
  if (changeset) {
    out += "Content-Type: multipart/mixed; boundary=changeset_c\r\n\r\n";
    delimiter = "--changeset_c";
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    const Part& p = parts[i];
    if (changeset) out += delimiter + "\r\n";
    out += "Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n";
    if (changeset) out += "Content-ID: " + std::to_string(i + 1) + "\r\n";
    out +=
        "\r\n" + p.method + " http://127.0.0.1:10002/devstoreaccount1/" + p.url + " HTTP/1.1\r\n";
    for (const auto& [name, value] : p.headers) out += name + ": " + value + "\r\n";
    out += "\r\n" + p.body + "\r\n";
  }
  if (changeset) out += delimiter + "--\r\n";
  return out + "--batch_b--\r\n";
}

// A server with table "items" holding p/existing.
struct BatchServer : TestServer {
  BatchServer() {
    REQUIRE(Send(http::verb::post, "/devstoreaccount1/Tables", R"({"TableName":"items"})")
                .result_int() == 201);
    REQUIRE(Send(http::verb::post, "/devstoreaccount1/items",
                 R"({"PartitionKey":"p","RowKey":"existing"})")
                .result_int() == 201);
  }
  HttpResponse Batch(const std::vector<Part>& parts, bool changeset = true) {
    HttpResponse res =
        Send(http::verb::post, "/devstoreaccount1/$batch", BatchBody(parts, changeset),
             {{"Content-Type", "multipart/mixed; boundary=batch_b"}});
    CHECK(res.result_int() == 202);
    CHECK(Normalized(HeaderOf(res, "Content-Type")) ==
          "multipart/mixed; boundary=batchresponse_<guid>");
    return res;
  }
  int Status(const std::string& rk) {
    return Send(http::verb::get, "/devstoreaccount1/items(PartitionKey='p',RowKey='" + rk + "')")
        .result_int();
  }
};

Part Insert(const std::string& pk, const std::string& rk,
            const testing::Headers& headers = kJsonPart) {
  return {"POST", "items", headers, R"({"PartitionKey":")" + pk + R"(","RowKey":")" + rk + "\"}"};
}

// The multipart answer carrying one change set sub-response (after the
// status line) with `headers_and_body`, as Normalized shows it.
std::string OneChangeSetAnswer(std::string_view status_line, std::string_view headers_and_body) {
  return "--batchresponse_<guid>\r\n"
         "Content-Type: multipart/mixed; boundary=changesetresponse_<guid>\r\n\r\n"
         "--changesetresponse_<guid>\r\n"
         "Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
         "HTTP/1.1 " +
         std::string(status_line) + "\r\n" + std::string(headers_and_body) +
         "\r\n--changesetresponse_<guid>--\r\n--batchresponse_<guid>--\r\n";
}

TEST_CASE("$batch: a change set is applied as a whole") {
  BatchServer s;
  HttpResponse res = s.Batch({Insert("p", "a"),
                              {"DELETE",
                               "items(PartitionKey='p',RowKey='existing')",
                               {{"If-Match", "*"}, {"Accept", "application/json"}},
                               ""}});
  const std::string body = Normalized(res.body());
  CHECK(body.find("HTTP/1.1 201 Created\r\n") != std::string::npos);
  CHECK(body.find("HTTP/1.1 204 No Content\r\n") != std::string::npos);
  CHECK(s.Status("a") == 200);
  CHECK(s.Status("existing") == 404);
}

TEST_CASE("$batch: a change set the store refuses answers one JSON error, its index first") {
  BatchServer s;
  HttpResponse res = s.Batch({Insert("p", "a"), Insert("p", "existing")});
  CHECK(HeaderOf(res, "x-ms-error-code").empty());
  CHECK(Normalized(res.body()) ==
        OneChangeSetAnswer(
            "409 Conflict",
            "Content-ID: 2\r\n"
            "X-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\n"
            "DataServiceVersion: 3.0;\r\n"
            "Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\r\n"
            "\r\n"
            R"({"odata.error":{"code":"EntityAlreadyExists","message":{"lang":"en-US",)"
            R"("value":"1:The specified entity already exists.\nRequestId:<id>\nTime:<time>"}}})"));
  CHECK(s.Status("a") == 404);  // nothing of the change set was applied
}

TEST_CASE("$batch: a stale If-Match fails the change set with 412") {
  BatchServer s;
  HttpResponse res = s.Batch({{"MERGE",
                               "items(PartitionKey='p',RowKey='existing')",
                               {{"If-Match", "W/\"datetime'2000-01-01T00%3A00%3A00.0000000Z'\""},
                                {"Accept", "application/json;odata=nometadata"},
                                {"Content-Type", "application/json"},
                                {"Prefer", "return-no-content"}},
                               R"({"x":1})"}});
  CHECK(Normalized(res.body()) ==
        OneChangeSetAnswer(
            "412 Precondition Failed",
            "Content-ID: 1\r\n"
            "X-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\n"
            "Preference-Applied: return-no-content\r\n"
            "DataServiceVersion: 3.0;\r\n"
            "Content-Type: application/json;odata=nometadata;streaming=true;charset=utf-8\r\n"
            "\r\n"
            R"({"odata.error":{"code":"UpdateConditionNotSatisfied","message":{"lang":"en-US",)"
            R"("value":"0:The update condition specified in the request was not satisfied.)"
            R"(\nRequestId:<id>\nTime:<time>"}}})"));
}

TEST_CASE("$batch: a change set over two partitions; without Accept the error is XML") {
  BatchServer s;
  const testing::Headers no_accept = {{"Content-Type", "application/json"}};
  HttpResponse res = s.Batch({Insert("p", "a", no_accept), Insert("q", "b", no_accept)});
  CHECK(Normalized(res.body()) ==
        OneChangeSetAnswer(
            "400 Bad Request",
            "Content-ID: 2\r\n"
            "X-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\n"
            "DataServiceVersion: 3.0;\r\n"
            "Content-Type: application/xml;charset=utf-8\r\n"
            "\r\n"
            "<?xml version=\"1.0\" encoding=\"utf-8\" standalone=\"yes\"?>\r\n"
            "<error xmlns=\"http://schemas.microsoft.com/ado/2007/08/dataservices/metadata\">\r\n"
            "  <code>CommandsInBatchActOnDifferentPartitions</code>\r\n"
            "  <message xml:lang=\"en-US\">1:All commands in a batch must operate on same "
            "entity group.\nRequestId:<id>\nTime:<time></message>\r\n"
            "</error>"));
  CHECK(s.Status("a") == 404);
}

TEST_CASE("$batch: a change set in a missing table fails at its first operation") {
  BatchServer s;
  HttpResponse res = s.Batch({{"POST", "nothere", kJsonPart, R"({"PartitionKey":"p"})"}});
  const std::string body = Normalized(res.body());
  CHECK(body.find("HTTP/1.1 404 Not Found\r\nContent-ID: 1\r\n") != std::string::npos);
  CHECK(body.find(R"("value":"0:The table specified does not exist.)") != std::string::npos);
}

TEST_CASE("$batch: an empty change set answers 400 InvalidInput in XML") {
  BatchServer s;
  HttpResponse res = s.Batch({});
  CHECK(Normalized(res.body()) ==
        OneChangeSetAnswer(
            "400 Bad Request",
            "X-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\n"
            "DataServiceVersion: 1.0;\r\n"
            "Content-Type: application/xml;charset=utf-8\r\n"
            "\r\n"
            "<?xml version=\"1.0\" encoding=\"utf-8\" standalone=\"yes\"?>\r\n"
            "<error xmlns=\"http://schemas.microsoft.com/ado/2007/08/dataservices/metadata\">\r\n"
            "  <code>InvalidInput</code>\r\n"
            "  <message xml:lang=\"en-US\">An error occurred while processing this request.\n"
            "RequestId:<id>\nTime:<time></message>\r\n"
            "</error>"));
}

TEST_CASE("$batch: a single retrieve of a missing entity answers 404 without an index") {
  BatchServer s;
  HttpResponse res = s.Batch({{"GET",
                               "items(PartitionKey='p',RowKey='absent')",
                               {{"Accept", "application/json;odata=minimalmetadata"}},
                               ""}},
                             false);
  CHECK(Normalized(res.body()) ==
        "--batchresponse_<guid>\r\n"
        "Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
        "HTTP/1.1 404 Not Found\r\n"
        "X-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\n"
        "DataServiceVersion: 3.0;\r\n"
        "Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\r\n"
        "\r\n"
        R"({"odata.error":{"code":"ResourceNotFound","message":{"lang":"en-US",)"
        R"("value":"The specified resource does not exist.\nRequestId:<id>\nTime:<time>"}}})"
        "\r\n--batchresponse_<guid>--\r\n");
}

TEST_CASE("$batch: a body that is not multipart answers 400 InvalidInput as the request") {
  BatchServer s;
  HttpResponse res = s.Send(http::verb::post, "/devstoreaccount1/$batch", "not a batch",
                            {{"Content-Type", "multipart/mixed; boundary=batch_b"}});
  CHECK(res.result_int() == 400);
  CHECK(HeaderOf(res, "x-ms-error-code") == "InvalidInput");
}

}  // namespace
}  // namespace cerulean::server
