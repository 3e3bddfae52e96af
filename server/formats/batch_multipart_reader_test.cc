// Tests of ParseBatch (batch_multipart_reader.cc): the canonical body, each
// client's spelling of it, every malformation, then randomized round trips
// and mutations. One function's cases over one shared canonical body and its
// checker, hence one file of ~670 lines.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "server/formats/batch_multipart.h"

namespace cerulean::server {
namespace {

using storage::StatusCode;

constexpr std::string_view kBatchType =
    "multipart/mixed; boundary=batch_6d5e2a1c-0f3b-4b8e-9d4a-2f1c0e9b7a11";

// batch.md §2.1, CRLF line endings.
const std::string kCanonical =
    "--batch_6d5e2a1c-0f3b-4b8e-9d4a-2f1c0e9b7a11\r\n"
    "Content-Type: multipart/mixed; boundary=changeset_0a9c5a3e-8d7b-4f61-b8e0-3c2d1e0f9a88\r\n"
    "\r\n"
    "--changeset_0a9c5a3e-8d7b-4f61-b8e0-3c2d1e0f9a88\r\n"
    "Content-Type: application/http\r\n"
    "Content-Transfer-Encoding: binary\r\n"
    "Content-ID: 1\r\n"
    "\r\n"
    "POST https://myaccount.table.core.windows.net/orders HTTP/1.1\r\n"
    "Content-Type: application/json;odata=nometadata\r\n"
    "Accept: application/json;odata=minimalmetadata\r\n"
    "Prefer: return-no-content\r\n"
    "DataServiceVersion: 3.0\r\n"
    "\r\n"
    "{\"PartitionKey\":\"p1\",\"RowKey\":\"r1\",\"Amount\":12.5}\r\n"
    "--changeset_0a9c5a3e-8d7b-4f61-b8e0-3c2d1e0f9a88\r\n"
    "Content-Type: application/http\r\n"
    "Content-Transfer-Encoding: binary\r\n"
    "Content-ID: 2\r\n"
    "\r\n"
    "MERGE https://myaccount.table.core.windows.net/orders(PartitionKey='p1',RowKey='r2') "
    "HTTP/1.1\r\n"
    "Content-Type: application/json\r\n"
    "Accept: application/json;odata=minimalmetadata\r\n"
    "If-Match: *\r\n"
    "DataServiceVersion: 3.0\r\n"
    "\r\n"
    "{\"Status\":\"closed\"}\r\n"
    "--changeset_0a9c5a3e-8d7b-4f61-b8e0-3c2d1e0f9a88\r\n"
    "Content-Type: application/http\r\n"
    "Content-Transfer-Encoding: binary\r\n"
    "Content-ID: 3\r\n"
    "\r\n"
    "DELETE https://myaccount.table.core.windows.net/orders(PartitionKey='p1',RowKey='r3') "
    "HTTP/1.1\r\n"
    "Accept: application/json;odata=minimalmetadata\r\n"
    "If-Match: W/\"datetime'2024-11-05T10%3A00%3A00.1234567Z'\"\r\n"
    "DataServiceVersion: 3.0\r\n"
    "\r\n"
    "--changeset_0a9c5a3e-8d7b-4f61-b8e0-3c2d1e0f9a88--\r\n"
    "--batch_6d5e2a1c-0f3b-4b8e-9d4a-2f1c0e9b7a11--\r\n";

std::string ReplaceAll(std::string s, std::string_view from, std::string_view to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) {
    s.replace(p, from.size(), to);
  }
  return s;
}

// Checks the canonical three operations, whatever the spelling variations.
void CheckCanonicalParts(const ParsedBatch& batch, bool with_content_ids) {
  CHECK(batch.changeset);
  REQUIRE(batch.parts.size() == 3);
  const BatchPart& insert = batch.parts[0];
  CHECK(insert.method == "POST");
  CHECK(insert.url == "https://myaccount.table.core.windows.net/orders");
  CHECK(insert.Header("content-type") == "application/json;odata=nometadata");
  CHECK(insert.Header("PREFER") == "return-no-content");
  CHECK(insert.Header("DataServiceVersion") == "3.0");
  CHECK(insert.Header("If-Match") == std::nullopt);
  CHECK(insert.body == "{\"PartitionKey\":\"p1\",\"RowKey\":\"r1\",\"Amount\":12.5}");
  const BatchPart& merge = batch.parts[1];
  CHECK(merge.method == "MERGE");
  CHECK(merge.url ==
        "https://myaccount.table.core.windows.net/orders(PartitionKey='p1',RowKey='r2')");
  CHECK(merge.Header("If-Match") == "*");
  CHECK(merge.body == "{\"Status\":\"closed\"}");
  const BatchPart& del = batch.parts[2];
  CHECK(del.method == "DELETE");
  CHECK(del.Header("if-match") == "W/\"datetime'2024-11-05T10%3A00%3A00.1234567Z'\"");
  CHECK(del.body.empty());
  CHECK(del.headers.size() == 3);
  if (with_content_ids) {
    CHECK(insert.content_id == "1");
    CHECK(merge.content_id == "2");
    CHECK(del.content_id == "3");
  } else {
    for (const BatchPart& part : batch.parts) CHECK(part.content_id == std::nullopt);
  }
}

storage::Status ParseStatus(std::string_view content_type, std::string_view body) {
  auto result = ParseBatch(content_type, body);
  return result.status();
}

TEST_CASE("ParseBatch: an empty body (a view with no data) is an error, not a null memmem") {
  // Found by batch_multipart_fuzz under UBSan.
  CHECK(ParseStatus(kBatchType, std::string_view()).code() ==
        storage::StatusCode::kInvalidArgument);
  CHECK(ParseStatus(kBatchType, "").code() == storage::StatusCode::kInvalidArgument);
}

TEST_CASE("ParseBatch: canonical change set (batch.md 2.1)") {
  auto batch = ParseBatch(kBatchType, kCanonical);
  REQUIRE_MESSAGE(batch.ok(), batch.status().ToString());
  CheckCanonicalParts(*batch, true);
  CHECK(batch->parts[0].headers.front().first == "Content-Type");
  // The epilogue after the close delimiter is ignored.
  CHECK(ParseBatch(kBatchType, kCanonical + "trailing epilogue\r\n").ok());
  // So is an upper-case media type and extra parameters.
  CHECK(ParseBatch("Multipart/Mixed ; charset=utf-8; boundary=batch_6d5e2a1c-0f3b-4b8e-9d4a-"
                   "2f1c0e9b7a11",
                   kCanonical)
            .ok());
}

TEST_CASE("ParseBatch: JS variations (lower case, extra CRLFs, no close delimiter)") {
  std::string body = kCanonical;
  body = ReplaceAll(body, "Content-Type:", "content-type:");
  body = ReplaceAll(body, "Content-Transfer-Encoding:", "content-transfer-encoding:");
  body = ReplaceAll(body, "Accept:", "accept:");
  body = ReplaceAll(body, "DataServiceVersion:", "dataserviceversion:");
  body = ReplaceAll(body, "Prefer:", "prefer:");
  body = ReplaceAll(body, "If-Match:", "if-match:");
  body = ReplaceAll(body, "Content-ID: 1\r\n", "");
  body = ReplaceAll(body, "Content-ID: 2\r\n", "");
  body = ReplaceAll(body, "Content-ID: 3\r\n", "");
  // Changeset preamble of CRLF.
  body = ReplaceAll(body, "8a88\r\n\r\n--changeset", "8a88\r\n\r\n\r\n--changeset");
  // Extra CRLF before each JSON body.
  body = ReplaceAll(body, "\r\n\r\n{", "\r\n\r\n\r\n{");
  // No close delimiter: the body ends with the delimiter line.
  body = ReplaceAll(body, "--batch_6d5e2a1c-0f3b-4b8e-9d4a-2f1c0e9b7a11--\r\n",
                    "--batch_6d5e2a1c-0f3b-4b8e-9d4a-2f1c0e9b7a11\r\n");
  auto batch = ParseBatch(kBatchType, body);
  REQUIRE_MESSAGE(batch.ok(), batch.status().ToString());
  CheckCanonicalParts(*batch, false);
  CHECK(batch->parts[0].headers.front().first == "content-type");
  // Also without the final line break.
  body.resize(body.size() - 2);
  CHECK(ParseBatch(kBatchType, body).ok());
}

TEST_CASE("ParseBatch: Python shape (Content-ID in MIME headers, Host and Content-Length)") {
  const std::string body =
      "--batch_b\r\n"
      "Content-Type: multipart/mixed; boundary=changeset_c\r\n"
      "\r\n"
      "--changeset_c\r\n"
      "Content-Type: application/http\r\n"
      "Content-Transfer-Encoding: binary\r\n"
      "Content-ID: 1\r\n"
      "\r\n"
      "PATCH http://127.0.0.1:10002/devstoreaccount1/t(PartitionKey='a',RowKey='b') HTTP/1.1\r\n"
      "Host: 127.0.0.1:10002\r\n"
      "x-ms-version: 2019-02-02\r\n"
      "Content-Length: 3\r\n"  // wrong on purpose: must not be relied on
      "Content-Type: application/json\r\n"
      "\r\n"
      "{\"x\": \"y\"}\r\n"
      "--changeset_c\r\n"
      "Content-Type: application/http\r\n"
      "Content-Transfer-Encoding: binary\r\n"
      "Content-ID: 2\r\n"
      "\r\n"
      "PUT /t(PartitionKey='a',RowKey='c')?$format=application/json;odata=minimalmetadata "
      "HTTP/1.1\r\n"
      "\r\n"
      "  {\"z\": 1}  \r\n\r\n"
      "--changeset_c--\r\n"
      "\r\n"
      "--batch_b--\r\n";
  auto batch = ParseBatch("multipart/mixed; boundary=batch_b", body);
  REQUIRE_MESSAGE(batch.ok(), batch.status().ToString());
  REQUIRE(batch->parts.size() == 2);
  CHECK(batch->parts[0].method == "PATCH");
  CHECK(batch->parts[0].url ==
        "http://127.0.0.1:10002/devstoreaccount1/t(PartitionKey='a',RowKey='b')");
  CHECK(batch->parts[0].body == "{\"x\": \"y\"}");
  CHECK(batch->parts[0].Header("Content-Length") == "3");
  CHECK(batch->parts[0].Header("Host") == "127.0.0.1:10002");
  CHECK(batch->parts[0].content_id == "1");
  CHECK(batch->parts[1].method == "PUT");
  CHECK(batch->parts[1].url ==
        "/t(PartitionKey='a',RowKey='c')?$format=application/json;odata=minimalmetadata");
  CHECK(batch->parts[1].body == "{\"z\": 1}");
  CHECK(batch->parts[1].content_id == "2");
}

TEST_CASE("ParseBatch: Content-ID among the inner headers (older Node clients)") {
  const std::string body =
      "--b\r\n"
      "Content-Type: multipart/mixed; boundary=c\r\n"
      "\r\n"
      "--c\r\n"
      "Content-Type: application/http\r\n"
      "Content-Transfer-Encoding: binary\r\n"
      "\r\n"
      "POST http://acct.table.core.windows.net/%24t HTTP/1.1\r\n"
      "content-id: 7\r\n"
      "\r\n"
      "{}\r\n"
      "--c\r\n"
      "Content-Type: application/http\r\n"
      "Content-ID: 9\r\n"
      "\r\n"
      "DELETE /t(PartitionKey='a',RowKey='b') HTTP/1.1\r\n"
      "Content-ID: 8\r\n"
      "--c--\r\n"
      "--b--";
  auto batch = ParseBatch("multipart/mixed; boundary=b", body);
  REQUIRE_MESSAGE(batch.ok(), batch.status().ToString());
  REQUIRE(batch->parts.size() == 2);
  CHECK(batch->parts[0].url == "http://acct.table.core.windows.net/%24t");
  CHECK(batch->parts[0].content_id == "7");
  CHECK(batch->parts[0].body == "{}");
  // The MIME header wins over the inner one.
  CHECK(batch->parts[1].content_id == "9");
  CHECK(batch->parts[1].body.empty());
}

TEST_CASE("ParseBatch: bare LF line endings") {
  const std::string body = ReplaceAll(kCanonical, "\r\n", "\n");
  auto batch = ParseBatch(kBatchType, body);
  REQUIRE_MESSAGE(batch.ok(), batch.status().ToString());
  CheckCanonicalParts(*batch, true);
  // Mixed: LF in the outer level, CRLF inside.
  std::string mixed = kCanonical;
  mixed = ReplaceAll(mixed, "7a11\r\n", "7a11\n");
  mixed = ReplaceAll(mixed, "7a11--\r\n", "7a11--\n");
  auto batch2 = ParseBatch(kBatchType, mixed);
  REQUIRE_MESSAGE(batch2.ok(), batch2.status().ToString());
  CheckCanonicalParts(*batch2, true);
}

TEST_CASE("ParseBatch: quoted boundaries") {
  std::string body =
      ReplaceAll(kCanonical, "boundary=changeset_0a9c5a3e-8d7b-4f61-b8e0-3c2d1e0f9a88",
                 "boundary=\"changeset_0a9c5a3e-8d7b-4f61-b8e0-3c2d1e0f9a88\"");
  auto batch =
      ParseBatch("multipart/mixed; boundary=\"batch_6d5e2a1c-0f3b-4b8e-9d4a-2f1c0e9b7a11\"", body);
  REQUIRE_MESSAGE(batch.ok(), batch.status().ToString());
  CheckCanonicalParts(*batch, true);
  // A quoted boundary may hold characters a token cannot (RFC 2046 bchars).
  const std::string spaced =
      "--a b:c\r\nContent-Type: multipart/mixed; boundary=\"x=y\"\r\n\r\n--x=y--\r\n--a b:c--\r\n";
  auto batch2 = ParseBatch("multipart/mixed;boundary=\"a b:c\"", spaced);
  REQUIRE_MESSAGE(batch2.ok(), batch2.status().ToString());
  CHECK(batch2->parts.empty());
}

TEST_CASE("ParseBatch: read-only single GET (batch.md 2.4)") {
  const std::string body =
      "--batch_X\r\n"
      "Content-Type: application/http\r\n"
      "Content-Transfer-Encoding: binary\r\n"
      "\r\n"
      "GET https://myaccount.table.core.windows.net/orders(PartitionKey='p1',RowKey='r1') "
      "HTTP/1.1\r\n"
      "Accept: application/json;odata=minimalmetadata\r\n"
      "DataServiceVersion: 3.0\r\n"
      "\r\n"
      "--batch_X--\r\n";
  auto batch = ParseBatch("multipart/mixed; boundary=batch_X", body);
  REQUIRE_MESSAGE(batch.ok(), batch.status().ToString());
  CHECK_FALSE(batch->changeset);
  REQUIRE(batch->parts.size() == 1);
  CHECK(batch->parts[0].method == "GET");
  CHECK(batch->parts[0].url ==
        "https://myaccount.table.core.windows.net/orders(PartitionKey='p1',RowKey='r1')");
  CHECK(batch->parts[0].Header("Accept") == "application/json;odata=minimalmetadata");
  CHECK(batch->parts[0].body.empty());
  CHECK(batch->parts[0].content_id == std::nullopt);
}

TEST_CASE("ParseBatch: empty and oversized change sets are left to the caller") {
  auto empty =
      ParseBatch("multipart/mixed; boundary=b",
                 "--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c--\r\n--b--\r\n");
  REQUIRE_MESSAGE(empty.ok(), empty.status().ToString());
  CHECK(empty->changeset);
  CHECK(empty->parts.empty());

  std::string body = "--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n";
  for (int i = 0; i < 150; ++i) {
    body += "--c\r\nContent-Type: application/http\r\n\r\nDELETE /t(PartitionKey='p',RowKey='" +
            std::to_string(i) + "') HTTP/1.1\r\nIf-Match: *\r\n\r\n";
  }
  body += "--c--\r\n--b--\r\n";
  auto big = ParseBatch("multipart/mixed; boundary=b", body);
  REQUIRE_MESSAGE(big.ok(), big.status().ToString());
  REQUIRE(big->parts.size() == 150);
  CHECK(big->parts[149].url == "/t(PartitionKey='p',RowKey='149')");
}

TEST_CASE("ParseBatch: folded header lines and lines resembling delimiters") {
  const std::string body =
      "--b\r\n"
      "Content-Type: multipart/mixed;\r\n"
      " boundary=c\r\n"
      "\r\n"
      "--c\r\n"
      "Content-Type: application/http\r\n"
      "\r\n"
      "POST /t HTTP/1.1\r\n"
      "\r\n"
      "{\"a\":\"--c is not at a line start\",\r\n"
      "--cc\r\n"
      "--b2\r\n"
      "\"b\":1}\r\n"
      "--c  \r\n"  // transport padding after a delimiter
      "Content-Type: application/http\r\n"
      "\r\n"
      "POST /t HTTP/1.1\r\n"
      "\r\n"
      "{}\r\n"
      "--c--\r\n"
      "--b--\r\n";
  auto batch = ParseBatch("multipart/mixed; boundary=b", body);
  REQUIRE_MESSAGE(batch.ok(), batch.status().ToString());
  REQUIRE(batch->parts.size() == 2);
  CHECK(batch->parts[0].body ==
        "{\"a\":\"--c is not at a line start\",\r\n--cc\r\n--b2\r\n\"b\":1}");
  CHECK(batch->parts[1].body == "{}");
}

TEST_CASE("ParseBatch: malformed bodies are InvalidArgument") {
  const std::string changeset_start =
      "--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\n"
      "Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n";
  const std::string changeset_end = "--c--\r\n--b--\r\n";
  const std::string insert = "POST /t HTTP/1.1\r\nAccept: application/json\r\n\r\n{}\r\n";
  const std::string good = changeset_start + insert + changeset_end;
  REQUIRE(ParseBatch("multipart/mixed; boundary=b", good).ok());

  struct Case {
    const char* name;
    std::string content_type;
    std::string body;
  };
  const std::string type = "multipart/mixed; boundary=b";
  const std::vector<Case> cases = {
      {"wrong content type", "application/json", good},
      {"multipart/related", "multipart/related; boundary=b", good},
      {"empty content type", "", good},
      {"missing boundary", "multipart/mixed", good},
      {"missing boundary with other params", "multipart/mixed; charset=utf-8", good},
      {"empty boundary", "multipart/mixed; boundary=", good},
      {"empty quoted boundary", "multipart/mixed; boundary=\"\"", good},
      {"unterminated quoted boundary", "multipart/mixed; boundary=\"b", good},
      {"text after quoted boundary", "multipart/mixed; boundary=\"b\"x", good},
      {"boundary too long", "multipart/mixed; boundary=" + std::string(71, 'b'), good},
      {"boundary mismatch", "multipart/mixed; boundary=x", good},
      {"empty body", type, ""},
      {"blank body", type, "\r\n\r\n"},
      {"garbage", type, "this is not multipart at all"},
      {"binary garbage", type, std::string("\0\xff\x01--b", 6)},
      {"preamble text", type, "hello\r\n" + good},
      {"boundary only", type, "--b--\r\n"},
      {"delimiter only", type, "--b\r\n"},
      {"truncated part", type, good.substr(0, good.size() / 2)},
      {"truncated after changeset delimiter", type, changeset_start},
      {"truncated change set", type, changeset_start + insert + "--b--\r\n"},
      {"outer part without content type", type, "--b\r\n\r\nGET /t HTTP/1.1\r\n\r\n--b--\r\n"},
      {"outer part text/plain", type, "--b\r\nContent-Type: text/plain\r\n\r\nhi\r\n--b--\r\n"},
      {"change set without boundary", type,
       "--b\r\nContent-Type: multipart/mixed\r\n\r\n--c--\r\n--b--\r\n"},
      {"change set part not application/http", type,
       "--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\n"
       "Content-Type: application/json\r\n\r\nPOST /t HTTP/1.1\r\n\r\n{}\r\n" +
           changeset_end},
      {"change set part without content type", type,
       "--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\n"
       "Content-ID: 1\r\n\r\nPOST /t HTTP/1.1\r\n\r\n{}\r\n" +
           changeset_end},
      {"nested change set", type,
       "--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\n"
       "Content-Type: multipart/mixed; boundary=d\r\n\r\n--d--\r\n" +
           changeset_end},
      {"base64 transfer encoding", type,
       "--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\n"
       "Content-Type: application/http\r\nContent-Transfer-Encoding: base64\r\n\r\n" +
           insert + changeset_end},
      {"missing request line", type, changeset_start + changeset_end},
      {"request line without version", type,
       changeset_start + "POST /t\r\n\r\n{}\r\n" + changeset_end},
      {"request line HTTP/2", type,
       changeset_start + "POST /t HTTP/2\r\n\r\n{}\r\n" + changeset_end},
      {"request line lower-case version", type,
       changeset_start + "POST /t http/1.1\r\n\r\n{}\r\n" + changeset_end},
      {"request line extra token", type,
       changeset_start + "POST /t x HTTP/1.1\r\n\r\n{}\r\n" + changeset_end},
      {"request line bad method", type,
       changeset_start + "PO(ST /t HTTP/1.1\r\n\r\n{}\r\n" + changeset_end},
      {"request line is JSON", type, changeset_start + "{\"a\":1}\r\n" + changeset_end},
      {"header without colon", type,
       changeset_start + "POST /t HTTP/1.1\r\nAccept application/json\r\n\r\n{}\r\n" +
           changeset_end},
      {"header with empty name", type,
       changeset_start + "POST /t HTTP/1.1\r\n: x\r\n\r\n{}\r\n" + changeset_end},
      {"bare CR in inner header", type,
       changeset_start + "POST /t HTTP/1.1\r\nContent-ID: 1\rX: y\r\n\r\n{}\r\n" + changeset_end},
      {"NUL in MIME header", type,
       "--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\n"
       "Content-Type: application/http\r\nContent-ID: 1" +
           std::string(1, '\0') + "2\r\n\r\n" + insert + changeset_end},
      {"two change sets", type,
       "--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c--\r\n"
       "--b\r\nContent-Type: multipart/mixed; boundary=d\r\n\r\n--d--\r\n--b--\r\n"},
      {"change set then GET", type,
       "--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c--\r\n"
       "--b\r\nContent-Type: application/http\r\n\r\nGET /t(PartitionKey='a',RowKey='b') "
       "HTTP/1.1\r\n\r\n--b--\r\n"},
      {"GET then change set", type,
       "--b\r\nContent-Type: application/http\r\n\r\nGET /t(PartitionKey='a',RowKey='b') "
       "HTTP/1.1\r\n\r\n"
       "--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c--\r\n--b--\r\n"},
      {"two GETs", type,
       "--b\r\nContent-Type: application/http\r\n\r\nGET /t(PartitionKey='a',RowKey='b') "
       "HTTP/1.1\r\n\r\n"
       "--b\r\nContent-Type: application/http\r\n\r\nGET /t(PartitionKey='a',RowKey='c') "
       "HTTP/1.1\r\n\r\n--b--\r\n"},
      {"POST outside a change set", type,
       "--b\r\nContent-Type: application/http\r\n\r\nPOST /t HTTP/1.1\r\n\r\n{}\r\n--b--\r\n"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    storage::Status s = ParseStatus(c.content_type, c.body);
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK_FALSE(s.message().empty());
  }
}

TEST_CASE("ParseBatch: error messages give the byte offset") {
  const std::string type = "multipart/mixed; boundary=b";
  storage::Status s = ParseStatus(type, "  \r\nxyz");
  CHECK(s.message() == "expected multipart delimiter '--b' at 4");
  const std::string head =
      "--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\n"
      "Content-Type: application/http\r\n\r\n";
  s = ParseStatus(type, head + "POST /t HTTP/9\r\n\r\n--c--\r\n--b--\r\n");
  CHECK(s.message() ==
        "expected HTTP/1.1 in batch part request line at " + std::to_string(head.size() + 8));
  s = ParseStatus("text/plain", "");
  CHECK(s.message() == "batch Content-Type must be multipart/mixed");
}

// ---------------------------------------------------------------------------
// Randomized: round trip through a client-like writer, and mutations.

struct RandomOp {
  std::string method, url, body, content_id;
  std::vector<std::pair<std::string, std::string>> headers;
};

// Writes a change set request the way one of the clients of batch.md §2.2
// might, choosing the variations at random.
std::string WriteRequest(const std::vector<RandomOp>& ops, std::mt19937& rng,
                         std::string* content_type) {
  auto coin = [&rng] { return std::uniform_int_distribution<int>(0, 1)(rng) == 1; };
  const std::string nl = coin() ? "\r\n" : "\n";
  const bool lower = coin();
  const bool quote = coin();
  const bool inner_ids = coin();
  const std::string batch = "batch_" + std::to_string(rng());
  const std::string changeset = "changeset_" + std::to_string(rng());
  auto name = [&](std::string n) {
    if (lower) {
      for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return n;
  };
  auto boundary_param = [&](const std::string& b) { return quote ? "\"" + b + "\"" : b; };
  *content_type = "multipart/mixed; boundary=" + boundary_param(batch);
  std::string out = "--" + batch + nl + name("Content-Type") +
                    ": multipart/mixed; boundary=" + boundary_param(changeset) + nl + nl;
  if (coin()) out += nl;  // JS changeset preamble
  for (const RandomOp& op : ops) {
    out += "--" + changeset + nl + name("Content-Type") + ": application/http" + nl +
           name("Content-Transfer-Encoding") + ": binary" + nl;
    if (!inner_ids) out += "Content-ID: " + op.content_id + nl;
    out += nl + op.method + " " + op.url + " HTTP/1.1" + nl;
    if (inner_ids) out += "Content-ID: " + op.content_id + nl;
    for (const auto& [k, v] : op.headers) out += name(k) + ": " + v + nl;
    out += nl;
    if (coin()) out += nl;  // extra line break before the body
    out += op.body + nl;
  }
  out += "--" + changeset + "--" + nl;
  out += "--" + batch + (coin() ? "--" : "") + nl;
  return out;
}

std::string RandomText(std::mt19937& rng, size_t max_len, std::string_view alphabet) {
  std::string s(std::uniform_int_distribution<size_t>(1, max_len)(rng), ' ');
  for (char& c : s)
    c = alphabet[std::uniform_int_distribution<size_t>(0, alphabet.size() - 1)(rng)];
  return s;
}

TEST_CASE("ParseBatch: random client-like requests round trip") {
  const uint32_t seed = std::random_device{}();
  CAPTURE(seed);
  std::mt19937 rng(seed);
  const std::string_view key_chars = "abcXYZ019'_-%$ ";
  const std::string_view json_chars = "{}[]\":,abc 019-\r\n\\";
  const char* methods[] = {"POST", "PUT", "MERGE", "PATCH", "DELETE"};
  for (int iter = 0; iter < 300; ++iter) {
    std::vector<RandomOp> ops(std::uniform_int_distribution<int>(0, 12)(rng));
    for (size_t i = 0; i < ops.size(); ++i) {
      RandomOp& op = ops[i];
      op.method = methods[std::uniform_int_distribution<int>(0, 4)(rng)];
      op.url = "http://127.0.0.1:10002/devstoreaccount1/t(PartitionKey='" +
               ReplaceAll(RandomText(rng, 8, key_chars), " ", "%20") + "')";
      op.content_id = std::to_string(i + 1);
      op.headers = {{"Accept", "application/json;odata=minimalmetadata"},
                    {"If-Match", "W/\"datetime'2024'\""}};
      if (op.method != "DELETE") {
        // Bodies never hold a delimiter line (the client picks the boundary).
        op.body = "{" + RandomText(rng, 40, json_chars) + "}";
      }
    }
    std::string content_type;
    const std::string body = WriteRequest(ops, rng, &content_type);
    CAPTURE(body);
    auto batch = ParseBatch(content_type, body);
    REQUIRE_MESSAGE(batch.ok(), batch.status().ToString());
    CHECK(batch->changeset);
    REQUIRE(batch->parts.size() == ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      const BatchPart& part = batch->parts[i];
      CHECK(part.method == ops[i].method);
      CHECK(part.url == ops[i].url);
      CHECK(part.body == ops[i].body);
      CHECK(part.content_id == ops[i].content_id);
      CHECK(part.Header("If-Match") == "W/\"datetime'2024'\"");
    }
  }
}

// Applies one random mutation to `s`.
void Mutate(std::string* s, std::mt19937& rng) {
  static const char* const kTokens[] = {"\r\n",
                                        "\n",
                                        "\r",
                                        "--",
                                        "--c\r\n",
                                        "--c--",
                                        "--b\r\n",
                                        "--b--",
                                        ":",
                                        "\r\n\r\n",
                                        "\"",
                                        "HTTP/1.1",
                                        "Content-Type: ",
                                        " ",
                                        "\0",
                                        "multipart/mixed; boundary=c",
                                        "application/http",
                                        "Content-ID: 1\r\n"};
  auto pick = [&rng](size_t n) { return std::uniform_int_distribution<size_t>(0, n)(rng); };
  const size_t pos = pick(s->size());
  switch (pick(6)) {
    case 0:  // flip a byte
      if (!s->empty()) (*s)[std::min(pos, s->size() - 1)] = static_cast<char>(rng());
      break;
    case 1:  // delete a range
      s->erase(pos, pick(16));
      break;
    case 2:  // insert a structural token
      s->insert(pos, kTokens[pick(std::size(kTokens) - 1)]);
      break;
    case 3:  // truncate
      s->resize(pos);
      break;
    case 4: {  // duplicate a range
      const std::string chunk = s->substr(pos, pick(64));
      s->insert(pick(s->size()), chunk);
      break;
    }
    case 5:  // swap line endings
      *s = ReplaceAll(*s, "\r\n", "\n");
      break;
    default:  // insert random bytes
      s->insert(pos, RandomText(rng, 8, std::string_view("\0\r\n-\"\\:;= a\xff", 12)));
      break;
  }
}

TEST_CASE("ParseBatch: random mutations never crash") {
  const uint32_t seed = std::random_device{}();
  CAPTURE(seed);
  std::mt19937 rng(seed);
  const std::string small =
      "--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\n"
      "Content-Type: application/http\r\nContent-ID: 1\r\n\r\nPOST /t HTTP/1.1\r\n"
      "Content-Type: application/json\r\n\r\n{\"a\":1}\r\n--c\r\n"
      "Content-Type: application/http\r\n\r\nDELETE /t(PartitionKey='a',RowKey='b') "
      "HTTP/1.1\r\nIf-Match: *\r\n\r\n--c--\r\n--b--\r\n";
  const std::string get =
      "--b\r\nContent-Type: application/http\r\n\r\nGET /t(PartitionKey='a',RowKey='b') "
      "HTTP/1.1\r\n\r\n--b--\r\n";
  const std::string canonical_lf = ReplaceAll(kCanonical, "\r\n", "\n");
  const std::vector<std::pair<std::string_view, const std::string*>> seeds = {
      {"multipart/mixed; boundary=b", &small},
      {"multipart/mixed; boundary=\"b\"", &get},
      {kBatchType, &kCanonical},
      {kBatchType, &canonical_lf}};
  int accepted = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    const auto& [type, base] = seeds[iter % seeds.size()];
    std::string body = *base;
    const int mutations = std::uniform_int_distribution<int>(1, 6)(rng);
    for (int m = 0; m < mutations; ++m) Mutate(&body, rng);
    std::string content_type(type);
    if (iter % 10 == 0) Mutate(&content_type, rng);
    auto batch = ParseBatch(content_type, body);
    if (batch.ok()) {
      ++accepted;
      if (!batch->changeset) CHECK(batch->parts.size() == 1);
      for (const BatchPart& part : batch->parts) {
        CHECK_FALSE(part.method.empty());
        CHECK_FALSE(part.url.empty());
        if (part.content_id) {
          CHECK(part.content_id->find_first_of("\r\n") == std::string::npos);
        }
      }
    } else {
      CHECK(batch.status().code() == StatusCode::kInvalidArgument);
    }
  }
  MESSAGE("accepted " << accepted << " of 20000 mutated bodies");
}

TEST_CASE("ParseBatch: pathological inputs stay linear") {
  const std::string type = "multipart/mixed; boundary=" + std::string(70, 'b');
  const std::string dash = "--" + std::string(70, 'b');
  // Near-delimiters on every line, 4 MiB.
  std::string body = dash + "\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\n";
  while (body.size() < (4u << 20)) body += dash.substr(0, 71) + "x\n";
  CHECK(ParseStatus(type, body).code() == StatusCode::kInvalidArgument);
  // Dashes only: every byte starts a candidate match.
  CHECK(ParseStatus(type, std::string(4u << 20, '-')).code() == StatusCode::kInvalidArgument);
  std::string dashes_lines;
  while (dashes_lines.size() < (4u << 20)) dashes_lines += std::string(72, '-') + "\n";
  CHECK(ParseStatus(type, dashes_lines).code() == StatusCode::kInvalidArgument);
  // Many empty parts.
  std::string empties;
  while (empties.size() < (1u << 20)) empties += "--c\n";
  CHECK(ParseStatus("multipart/mixed; boundary=c", empties).code() == StatusCode::kInvalidArgument);
  // A huge header block.
  std::string headers = "--c\r\nContent-Type: application/http\r\n\r\nGET /t HTTP/1.1\r\n";
  while (headers.size() < (1u << 20)) headers += "X: y\r\n\t folded\r\n";
  headers += "\r\n--c--";
  CHECK(ParseBatch("multipart/mixed; boundary=c", headers).ok());
}

}  // namespace
}  // namespace cerulean::server
