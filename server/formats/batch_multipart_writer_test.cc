// Tests of the batch response writer (batch_multipart_writer.cc).
#include <doctest/doctest.h>

#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "server/formats/batch_multipart.h"

namespace cerulean::server {
namespace {

std::string ReplaceAll(std::string s, std::string_view from, std::string_view to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) {
    s.replace(p, from.size(), to);
  }
  return s;
}

// The boundary parameter of a Content-Type written by SerializeBatchResponse.
std::string BoundaryOf(const std::string& content_type) {
  const std::string prefix = "multipart/mixed; boundary=";
  REQUIRE(content_type.rfind(prefix, 0) == 0);
  return content_type.substr(prefix.size());
}

// A minimal independent MIME splitter: the parts between "--boundary" lines
// of a CRLF body, as {headers text, content}; checks the close delimiter.
std::vector<std::pair<std::string, std::string>> SplitMime(const std::string& body,
                                                           const std::string& boundary) {
  std::vector<std::pair<std::string, std::string>> parts;
  const std::string open = "--" + boundary + "\r\n";
  const std::string delimiter = "\r\n--" + boundary;
  REQUIRE(body.rfind(open, 0) == 0);
  size_t pos = open.size();
  while (true) {
    const size_t end = body.find(delimiter, pos);
    REQUIRE(end != std::string::npos);
    const std::string part = body.substr(pos, end - pos);
    const size_t blank = part.find("\r\n\r\n");
    REQUIRE(blank != std::string::npos);
    parts.emplace_back(part.substr(0, blank + 2), part.substr(blank + 4));
    const size_t after = end + delimiter.size();
    if (body.compare(after, 2, "--") == 0) {
      const std::string epilogue = body.substr(after + 2);
      CHECK((epilogue.empty() || epilogue == "\r\n"));
      break;
    }
    REQUIRE(body.compare(after, 2, "\r\n") == 0);
    pos = after + 2;
  }
  return parts;
}

std::string NormalizeBoundaries(std::string body, const std::string& batch,
                                const std::string& changeset) {
  body = ReplaceAll(body, batch, "batchresponse_B");
  if (!changeset.empty()) body = ReplaceAll(body, changeset, "changesetresponse_C");
  return body;
}

std::string ChangesetBoundaryIn(const std::string& body) {
  const std::regex re("boundary=(changesetresponse_[0-9a-f-]+)\r\n");
  std::smatch m;
  REQUIRE(std::regex_search(body, m, re));
  return m[1];
}

const std::string kEtag = "W/\"datetime'2024-11-05T10%3A00%3A00.1234567Z'\"";

std::vector<BatchSubResponse> SuccessSubs() {
  BatchSubResponse insert;
  insert.status = 204;
  insert.content_id = "1";
  insert.headers = {
      {"X-Content-Type-Options", "nosniff"},
      {"Cache-Control", "no-cache"},
      {"Preference-Applied", "return-no-content"},
      {"DataServiceVersion", "3.0;"},
      {"Location",
       "https://myaccount.table.core.windows.net/orders(PartitionKey='p1',RowKey='r1')"},
      {"DataServiceId",
       "https://myaccount.table.core.windows.net/orders(PartitionKey='p1',RowKey='r1')"},
      {"ETag", kEtag}};
  BatchSubResponse created;
  created.status = 201;
  created.headers = {{"X-Content-Type-Options", "nosniff"},
                     {"Cache-Control", "no-cache"},
                     {"DataServiceVersion", "3.0;"},
                     {"Content-Type",
                      "application/json;odata=minimalmetadata;streaming=true;"
                      "charset=utf-8"},
                     {"ETag", kEtag}};
  created.body = "{\"PartitionKey\":\"p1\",\"RowKey\":\"r2\"}";
  BatchSubResponse del;
  del.status = 204;
  del.headers = {{"X-Content-Type-Options", "nosniff"},
                 {"Cache-Control", "no-cache"},
                 {"DataServiceVersion", "1.0;"}};
  return {insert, created, del};
}

TEST_CASE("SerializeBatchResponse: exact bytes of a change set success") {
  std::string content_type;
  const std::string body = SerializeBatchResponse(SuccessSubs(), true, &content_type);
  const std::string batch = BoundaryOf(content_type);
  const std::string expected =
      "--batchresponse_B\r\n"
      "Content-Type: multipart/mixed; boundary=changesetresponse_C\r\n"
      "\r\n"
      "--changesetresponse_C\r\n"
      "Content-Type: application/http\r\n"
      "Content-Transfer-Encoding: binary\r\n"
      "\r\n"
      "HTTP/1.1 204 No Content\r\n"
      "Content-ID: 1\r\n"
      "X-Content-Type-Options: nosniff\r\n"
      "Cache-Control: no-cache\r\n"
      "Preference-Applied: return-no-content\r\n"
      "DataServiceVersion: 3.0;\r\n"
      "Location: https://myaccount.table.core.windows.net/orders(PartitionKey='p1',RowKey='r1')\r\n"
      "DataServiceId: "
      "https://myaccount.table.core.windows.net/orders(PartitionKey='p1',RowKey='r1')\r\n"
      "ETag: W/\"datetime'2024-11-05T10%3A00%3A00.1234567Z'\"\r\n"
      "\r\n"
      "\r\n"
      "--changesetresponse_C\r\n"
      "Content-Type: application/http\r\n"
      "Content-Transfer-Encoding: binary\r\n"
      "\r\n"
      "HTTP/1.1 201 Created\r\n"
      "X-Content-Type-Options: nosniff\r\n"
      "Cache-Control: no-cache\r\n"
      "DataServiceVersion: 3.0;\r\n"
      "Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\r\n"
      "ETag: W/\"datetime'2024-11-05T10%3A00%3A00.1234567Z'\"\r\n"
      "\r\n"
      "{\"PartitionKey\":\"p1\",\"RowKey\":\"r2\"}\r\n"
      "--changesetresponse_C\r\n"
      "Content-Type: application/http\r\n"
      "Content-Transfer-Encoding: binary\r\n"
      "\r\n"
      "HTTP/1.1 204 No Content\r\n"
      "X-Content-Type-Options: nosniff\r\n"
      "Cache-Control: no-cache\r\n"
      "DataServiceVersion: 1.0;\r\n"
      "\r\n"
      "\r\n"
      "--changesetresponse_C--\r\n"
      "--batchresponse_B--\r\n";
  CHECK(NormalizeBoundaries(body, batch, ChangesetBoundaryIn(body)) == expected);
}

TEST_CASE("SerializeBatchResponse: exact bytes of a failure and of a read-only batch") {
  BatchSubResponse conflict;
  conflict.status = 409;
  conflict.content_id = "1";
  conflict.headers = {{"X-Content-Type-Options", "nosniff"},
                      {"Cache-Control", "no-cache"},
                      {"Preference-Applied", "return-no-content"},
                      {"DataServiceVersion", "3.0;"},
                      {"Content-Type",
                       "application/json;odata=minimalmetadata;streaming=true;"
                       "charset=utf-8"}};
  conflict.body =
      "{\"odata.error\":{\"code\":\"EntityAlreadyExists\",\"message\":{\"lang\":\"en-US\","
      "\"value\":\"1:The specified entity already exists.\"}}}";
  std::string content_type;
  std::string body = SerializeBatchResponse({conflict}, true, &content_type);
  CHECK(NormalizeBoundaries(body, BoundaryOf(content_type), ChangesetBoundaryIn(body)) ==
        "--batchresponse_B\r\n"
        "Content-Type: multipart/mixed; boundary=changesetresponse_C\r\n"
        "\r\n"
        "--changesetresponse_C\r\n"
        "Content-Type: application/http\r\n"
        "Content-Transfer-Encoding: binary\r\n"
        "\r\n"
        "HTTP/1.1 409 Conflict\r\n"
        "Content-ID: 1\r\n"
        "X-Content-Type-Options: nosniff\r\n"
        "Cache-Control: no-cache\r\n"
        "Preference-Applied: return-no-content\r\n"
        "DataServiceVersion: 3.0;\r\n"
        "Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\r\n"
        "\r\n" +
            conflict.body +
            "\r\n"
            "--changesetresponse_C--\r\n"
            "--batchresponse_B--\r\n");

  BatchSubResponse found;
  found.status = 200;
  found.headers = {{"Content-Type", "application/json;odata=minimalmetadata"}, {"ETag", kEtag}};
  found.body = "{\"PartitionKey\":\"p1\"}";
  body = SerializeBatchResponse({found}, false, &content_type);
  CHECK(body.find("changesetresponse_") == std::string::npos);
  CHECK(NormalizeBoundaries(body, BoundaryOf(content_type), "") ==
        "--batchresponse_B\r\n"
        "Content-Type: application/http\r\n"
        "Content-Transfer-Encoding: binary\r\n"
        "\r\n"
        "HTTP/1.1 200 OK\r\n"
        "Content-Type: application/json;odata=minimalmetadata\r\n"
        "ETag: W/\"datetime'2024-11-05T10%3A00%3A00.1234567Z'\"\r\n"
        "\r\n"
        "{\"PartitionKey\":\"p1\"}\r\n"
        "--batchresponse_B--\r\n");
}

TEST_CASE("SerializeBatchResponse: a MIME splitter and the client parsers read it back") {
  std::string content_type;
  const std::vector<BatchSubResponse> subs = SuccessSubs();
  const std::string body = SerializeBatchResponse(subs, true, &content_type);
  const std::string batch = BoundaryOf(content_type);
  const std::regex guid_re("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  CHECK(batch.rfind("batchresponse_", 0) == 0);
  CHECK(std::regex_match(batch.substr(14), guid_re));
  CHECK(body.rfind("--batchresponse_", 0) == 0);  // Java

  // Every LF is part of a CRLF.
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] == '\n') CHECK((i > 0 && body[i - 1] == '\r'));
  }

  // Python-like: generic MIME, two levels.
  auto outer = SplitMime(body, batch);
  REQUIRE(outer.size() == 1);
  const std::string cs_prefix = "Content-Type: multipart/mixed; boundary=";
  REQUIRE(outer[0].first.rfind(cs_prefix, 0) == 0);
  const std::string changeset =
      outer[0].first.substr(cs_prefix.size(), outer[0].first.size() - cs_prefix.size() - 2);
  CHECK(changeset.rfind("changesetresponse_", 0) == 0);
  CHECK(std::regex_match(changeset.substr(18), guid_re));
  CHECK(changeset.substr(18) != batch.substr(14));
  auto inner = SplitMime(outer[0].second, changeset);
  REQUIRE(inner.size() == subs.size());
  for (size_t i = 0; i < inner.size(); ++i) {
    CAPTURE(i);
    CHECK(inner[i].first ==
          "Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n");
    // The embedded response: status line, headers, blank line, body.
    const std::string& http = inner[i].second;
    const size_t blank = http.find("\r\n\r\n");
    REQUIRE(blank != std::string::npos);
    CHECK(http.substr(blank + 4) == subs[i].body);
    const std::string status_line = http.substr(0, http.find("\r\n"));
    CHECK(status_line.substr(9, 3) == std::to_string(subs[i].status));  // Java positions
    CHECK(status_line.substr(13) == ReasonPhrase(subs[i].status));
  }

  // JS: split on the literal, drop the first and last pieces.
  std::vector<std::string> pieces;
  for (size_t pos = 0;;) {
    const size_t next = body.find("--changesetresponse_", pos);
    pieces.push_back(body.substr(pos, next == std::string::npos ? next : next - pos));
    if (next == std::string::npos) break;
    pos = next + 20;
  }
  REQUIRE(pieces.size() == subs.size() + 2);
  for (size_t i = 0; i < subs.size(); ++i) {
    const std::string& piece = pieces[i + 1];
    std::smatch m;
    REQUIRE(std::regex_search(piece, m, std::regex("HTTP/1.1 ([0-9]*)")));
    CHECK(m[1] == std::to_string(subs[i].status));
    const bool has_json = std::regex_search(piece, std::regex("\\{(.*)\\}"));
    CHECK(has_json == !subs[i].body.empty());
    if (i == 0) {
      REQUIRE(std::regex_search(piece, m, std::regex("ETag: (.*)")));
      CHECK(m[1] == kEtag);  // `.` stops at the CR
      REQUIRE(std::regex_search(piece, m, std::regex("RowKey='(.*)'")));
      CHECK(m[1] == "r1");
    }
  }
}

TEST_CASE("SerializeBatchResponse: edge cases") {
  std::string content_type;
  std::string body = SerializeBatchResponse({}, false, &content_type);
  CHECK(body == "--" + BoundaryOf(content_type) + "--\r\n");
  body = SerializeBatchResponse({}, true, &content_type);
  CHECK(body.find("--changesetresponse_") != std::string::npos);
  CHECK(body.size() > 0);

  BatchSubResponse evil;
  evil.status = 42;
  evil.content_id = "1\r\nX-Injected: yes";
  evil.headers = {{"A\nB", "c\r\nd"}};
  body = SerializeBatchResponse({evil}, true, &content_type);
  CHECK(body.find("HTTP/1.1 500 Internal Server Error\r\n") != std::string::npos);
  CHECK(body.find("Content-ID: 1  X-Injected: yes\r\n") != std::string::npos);
  CHECK(body.find("A B: c  d\r\n") != std::string::npos);

  std::string other_type;
  SerializeBatchResponse({}, true, &other_type);
  CHECK(other_type != content_type);
}

TEST_CASE("ReasonPhrase") {
  CHECK(ReasonPhrase(200) == "OK");
  CHECK(ReasonPhrase(201) == "Created");
  CHECK(ReasonPhrase(202) == "Accepted");
  CHECK(ReasonPhrase(204) == "No Content");
  CHECK(ReasonPhrase(400) == "Bad Request");
  CHECK(ReasonPhrase(403) == "Forbidden");
  CHECK(ReasonPhrase(404) == "Not Found");
  CHECK(ReasonPhrase(409) == "Conflict");
  CHECK(ReasonPhrase(412) == "Precondition Failed");
  CHECK(ReasonPhrase(413) == "Request Entity Too Large");
  CHECK(ReasonPhrase(500) == "Internal Server Error");
  CHECK(ReasonPhrase(299) == "Unknown");
}

}  // namespace
}  // namespace cerulean::server
