// Entity operations (Insert, Query with continuation, Update, Merge, Delete)
// through the router's entry point over an in-memory store, no sockets:
// status, headers and body as a client sees them.
#include <doctest/doctest.h>

#include <cctype>
#include <nlohmann/json.hpp>
#include <string>

#include "server/http/test_server.h"
#include "server/runtime/response_budget.h"

namespace cerulean::server {
namespace {

using testing::CheckJsonError;
using testing::HeaderOf;
using testing::kMinimalJson;
using testing::QueryEncoded;
using testing::TestServer;

// A server with table "items".
struct ItemsServer : TestServer {
  ItemsServer() {
    REQUIRE(Send(http::verb::post, "/devstoreaccount1/Tables", R"({"TableName":"items"})")
                .result_int() == 201);
  }
  HttpResponse Insert(const std::string& pk, const std::string& rk, const std::string& extra = "",
                      const testing::Headers& headers = {}) {
    std::string body = R"({"PartitionKey":")" + pk + R"(","RowKey":")" + rk + '"' +
                       (extra.empty() ? "" : "," + extra) + "}";
    return Send(http::verb::post, "/devstoreaccount1/items", body, headers);
  }
  static std::string EntityUrl(const std::string& pk, const std::string& rk) {
    return "/devstoreaccount1/items(PartitionKey='" + pk + "',RowKey='" + rk + "')";
  }
};

TEST_CASE("Insert Entity: 201 with the entity, then 409 EntityAlreadyExists") {
  ItemsServer s;
  HttpResponse res = s.Insert("p", "r", R"("Amount":12)");
  REQUIRE(res.result_int() == 201);
  CHECK(HeaderOf(res, "Content-Type") == kMinimalJson);
  CHECK(HeaderOf(res, "ETag").starts_with("W/\"datetime'"));
  CHECK(HeaderOf(res, "Location") ==
        "http://127.0.0.1:10002/devstoreaccount1/items(PartitionKey='p',RowKey='r')");
  CHECK(HeaderOf(res, "x-ms-request-id").size() == 36);
  auto body = nlohmann::json::parse(res.body());
  CHECK(body["odata.metadata"] ==
        "http://127.0.0.1:10002/devstoreaccount1/$metadata#items/@Element");
  CHECK(body["PartitionKey"] == "p");
  CHECK(body["RowKey"] == "r");
  CHECK(body["Amount"] == 12);
  CHECK(body["odata.etag"] == HeaderOf(res, "ETag"));

  HttpResponse again = s.Insert("p", "r");
  CheckJsonError(again, 409, "EntityAlreadyExists", "The specified entity already exists.");
  CHECK(HeaderOf(again, "Preference-Applied").empty());
}

TEST_CASE("Insert Entity: Prefer is echoed on success and on error") {
  ItemsServer s;
  HttpResponse res = s.Insert("p", "r", "", {{"Prefer", "return-no-content"}});
  CHECK(res.result_int() == 204);
  CHECK(HeaderOf(res, "Preference-Applied") == "return-no-content");
  CHECK(res.body().empty());
  HttpResponse again = s.Insert("p", "r", "", {{"Prefer", "return-no-content"}});
  CheckJsonError(again, 409, "EntityAlreadyExists", "The specified entity already exists.");
  CHECK(HeaderOf(again, "Preference-Applied") == "return-no-content");
}

TEST_CASE("Insert Entity into a missing table: 404 TableNotFound, even for a bad body") {
  TestServer s;
  HttpResponse res =
      s.Send(http::verb::post, "/devstoreaccount1/nothere", R"({"PartitionKey":"p","RowKey":"r"})");
  CheckJsonError(res, 404, "TableNotFound", "The table specified does not exist.");
  res = s.Send(http::verb::post, "/devstoreaccount1/nothere", R"({"PartitionKey":"p"})");
  CheckJsonError(res, 404, "TableNotFound", "The table specified does not exist.");
}

TEST_CASE("Merge Entity past 252 properties: 400 TooManyProperties from the store") {
  ItemsServer s;
  std::string props;
  for (int i = 0; i < 252; ++i) props += (i ? "," : "") + ("\"p" + std::to_string(i) + "\":1");
  REQUIRE(s.Insert("p", "r", props).result_int() == 201);
  HttpResponse res = s.Send(http::verb::merge, ItemsServer::EntityUrl("p", "r"), R"({"extra":1})",
                            {{"If-Match", "*"}});
  CheckJsonError(res, 400, "TooManyProperties",
                 "The entity contains more properties than allowed. Each entity can include up "
                 "to 252 properties to store data. Each entity also has 3 system properties.");
  // Upserts refuse it the same way.
  res = s.Send(http::verb::merge, ItemsServer::EntityUrl("p", "r"), R"({"extra":1})");
  CHECK(res.result_int() == 400);
  CHECK(HeaderOf(res, "x-ms-error-code") == "TooManyProperties");
}

TEST_CASE("Update and Merge Entity with If-Match: 204 with a new ETag, 412 when stale") {
  ItemsServer s;
  HttpResponse inserted = s.Insert("p", "r", R"("a":1)");
  REQUIRE(inserted.result_int() == 201);
  const std::string etag = HeaderOf(inserted, "ETag");
  const std::string url = ItemsServer::EntityUrl("p", "r");

  HttpResponse merged = s.Send(http::verb::merge, url, R"({"b":2})", {{"If-Match", etag}});
  CHECK(merged.result_int() == 204);
  CHECK(merged.body().empty());
  const std::string etag2 = HeaderOf(merged, "ETag");
  CHECK(etag2.starts_with("W/\"datetime'"));
  CHECK(etag2 != etag);

  const std::string not_satisfied =
      "The update condition specified in the request was not satisfied.";
  CheckJsonError(s.Send(http::verb::merge, url, R"({"c":3})", {{"If-Match", etag}}), 412,
                 "UpdateConditionNotSatisfied", not_satisfied);
  CheckJsonError(s.Send(http::verb::put, url, R"({"c":3})", {{"If-Match", etag}}), 412,
                 "UpdateConditionNotSatisfied", not_satisfied);

  HttpResponse replaced = s.Send(http::verb::put, url, R"({"c":3})", {{"If-Match", etag2}});
  CHECK(replaced.result_int() == 204);
  auto got = nlohmann::json::parse(s.Send(http::verb::get, url).body());
  CHECK(got["c"] == 3);
  CHECK_FALSE(got.contains("a"));

  CheckJsonError(s.Send(http::verb::put, ItemsServer::EntityUrl("p", "absent"), R"({"c":3})",
                        {{"If-Match", "*"}}),
                 404, "ResourceNotFound", "The specified resource does not exist.");
}

TEST_CASE("Delete Entity: 204, then 404 ResourceNotFound; HEAD-less GET of it too") {
  ItemsServer s;
  REQUIRE(s.Insert("p", "r").result_int() == 201);
  const std::string url = ItemsServer::EntityUrl("p", "r");
  HttpResponse res = s.Send(http::verb::delete_, url, "", {{"If-Match", "*"}});
  CHECK(res.result_int() == 204);
  CHECK(res.body().empty());
  CheckJsonError(s.Send(http::verb::delete_, url, "", {{"If-Match", "*"}}), 404, "ResourceNotFound",
                 "The specified resource does not exist.");
  CheckJsonError(s.Send(http::verb::get, url), 404, "ResourceNotFound",
                 "The specified resource does not exist.");
}

TEST_CASE("Query Entities: pages joined by continuation headers") {
  ItemsServer s;
  for (int i = 1; i <= 5; ++i) REQUIRE(s.Insert("p", "r" + std::to_string(i)).result_int() == 201);
  std::vector<std::string> seen;
  std::string target = "/devstoreaccount1/items()?$top=2";
  int pages = 0;
  while (true) {
    HttpResponse res = s.Send(http::verb::get, target);
    REQUIRE(res.result_int() == 200);
    CHECK(HeaderOf(res, "Content-Type") == kMinimalJson);
    auto body = nlohmann::json::parse(res.body());
    CHECK(body["odata.metadata"] == "http://127.0.0.1:10002/devstoreaccount1/$metadata#items");
    for (const auto& e : body["value"]) seen.push_back(e["RowKey"]);
    ++pages;
    const std::string npk = HeaderOf(res, "x-ms-continuation-NextPartitionKey");
    const std::string nrk = HeaderOf(res, "x-ms-continuation-NextRowKey");
    CHECK(npk.empty() == nrk.empty());
    if (npk.empty()) break;
    REQUIRE(pages < 5);
    target = "/devstoreaccount1/items()?$top=2&NextPartitionKey=" + QueryEncoded(npk) +
             "&NextRowKey=" + QueryEncoded(nrk);
  }
  CHECK(pages == 3);
  CHECK(seen == std::vector<std::string>{"r1", "r2", "r3", "r4", "r5"});

  CheckJsonError(s.Send(http::verb::get, "/devstoreaccount1/items()?NextPartitionKey=garbage"), 400,
                 "InvalidInput", "One of the request inputs is not valid.");
  CheckJsonError(s.Send(http::verb::get, "/devstoreaccount1/nothere()"), 404, "TableNotFound",
                 "The table specified does not exist.");
}

TEST_CASE("Query Entities: a page ends early when the response budget has no more; none is 503") {
  ItemsServer s;
  ResponseBudget budget(300 * 1024, 1);  // one share: all of it
  ResponseHold hold(&budget);
  s.ctx().response_budget = &budget;
  s.set_response_hold(&hold);
  const std::string text = '"' + std::string(30000, 'x') + '"';
  const std::string big = R"("S1":)" + text + R"(,"S2":)" + text;
  for (int i = 0; i < 10; ++i)
    REQUIRE(s.Insert("p", "r" + std::to_string(i), big).result_int() == 201);
  // $top over the inline limit: the page is rendered off the I/O thread,
  // within the budget.
  std::vector<std::string> seen;
  std::string target = "/devstoreaccount1/items()?$top=1000";
  int pages = 0;
  while (true) {
    HttpResponse res = s.Send(http::verb::get, target);
    REQUIRE(res.result_int() == 200);
    CHECK(res.body().size() <= 300 * 1024);
    CHECK(hold.held() >= res.body().size());
    // What the session does once the answer is written.
    hold.Clear();
    auto body = nlohmann::json::parse(res.body());
    CHECK(!body["value"].empty());
    for (const auto& e : body["value"]) seen.push_back(e["RowKey"]);
    ++pages;
    const std::string npk = HeaderOf(res, "x-ms-continuation-NextPartitionKey");
    if (npk.empty()) break;
    REQUIRE(pages < 10);
    target = "/devstoreaccount1/items()?$top=1000&NextPartitionKey=" + QueryEncoded(npk) +
             "&NextRowKey=" + QueryEncoded(HeaderOf(res, "x-ms-continuation-NextRowKey"));
  }
  CHECK(pages > 1);
  CHECK(seen ==
        std::vector<std::string>{"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9"});
  CHECK(budget.in_use() == 0);

  // Others hold all but 10 KiB: not even the first entity fits.
  ResponseHold others(&budget);
  REQUIRE(others.SetTo(budget.capacity() - 10 * 1024));
  CheckJsonError(s.Send(http::verb::get, "/devstoreaccount1/items()?$top=1000"), 503, "ServerBusy",
                 "The server is busy.");
  hold.Clear();
  others.Clear();
  CHECK(budget.in_use() == 0);
}

TEST_CASE("Insert Entity: refused before it commits when its answer does not fit; never after") {
  ItemsServer s;
  ResponseBudget budget(400 * 1024, 1);
  ResponseHold hold(&budget), others(&budget);
  s.ctx().response_budget = &budget;
  s.set_response_hold(&hold);
  const std::string text = '"' + std::string(30000, 'x') + '"';
  const std::string big = R"("S1":)" + text + R"(,"S2":)" + text + R"(,"S3":)" + text;
  REQUIRE(others.SetTo(budget.capacity() - 50 * 1024));
  CheckJsonError(s.Insert("p", "big", big), 503, "ServerBusy", "The server is busy.");
  CHECK(s.Send(http::verb::get, ItemsServer::EntityUrl("p", "big")).result_int() == 404);
  // Without its content the answer is short: nothing to reserve.
  CHECK(s.Insert("p", "big", big, {{"Prefer", "return-no-content"}}).result_int() == 204);
  hold.Clear();
  others.Clear();
  // Reserved before the write: the answer is sent, and held until written.
  HttpResponse res = s.Insert("p", "big2", big);
  CHECK(res.result_int() == 201);
  CHECK(hold.held() >= res.body().size());
  hold.Clear();
  CHECK(budget.in_use() == 0);
}

TEST_CASE("Query Entities: an Atom page ends early when the response budget has no more") {
  ItemsServer s;
  ResponseBudget budget(300 * 1024, 1);
  ResponseHold hold(&budget);
  s.ctx().response_budget = &budget;
  s.set_response_hold(&hold);
  const std::string text = '"' + std::string(30000, 'x') + '"';
  for (int i = 0; i < 10; ++i) {
    REQUIRE(s.Insert("p", "r" + std::to_string(i), R"("S1":)" + text + R"(,"S2":)" + text)
                .result_int() == 201);
  }
  const testing::Headers atom = {{"x-ms-version", "2013-08-15"},
                                 {"Accept", "application/atom+xml"}};
  std::string target = "/devstoreaccount1/items()?$top=1000";
  int pages = 0, entries = 0;
  while (true) {
    HttpResponse res = s.Send(http::verb::get, target, "", atom);
    REQUIRE(res.result_int() == 200);
    CHECK(res.body().size() <= 300 * 1024);
    CHECK(res.body().ends_with("</feed>"));
    hold.Clear();
    for (size_t at = res.body().find("<entry"); at != std::string::npos;
         at = res.body().find("<entry", at + 1)) {
      ++entries;
    }
    ++pages;
    const std::string npk = HeaderOf(res, "x-ms-continuation-NextPartitionKey");
    if (npk.empty()) break;
    REQUIRE(pages < 10);
    target = "/devstoreaccount1/items()?$top=1000&NextPartitionKey=" + QueryEncoded(npk) +
             "&NextRowKey=" + QueryEncoded(HeaderOf(res, "x-ms-continuation-NextRowKey"));
  }
  CHECK(pages > 1);
  CHECK(entries == 10);
  CHECK(budget.in_use() == 0);
}

TEST_CASE("Query Entities: continuations through many key ranges, short and long filters") {
  ItemsServer s;
  for (int p = 0; p < 10; ++p) {
    for (int r = 0; r < 5; ++r) {
      REQUIRE(s.Insert("p" + std::to_string(p), "r" + std::to_string(r)).result_int() == 201);
    }
  }
  // Six key ranges; the long form adds partitions that hold nothing, past
  // the length planned on the I/O thread.
  std::string filter =
      "(PartitionKey eq 'p1' or PartitionKey eq 'p3' or PartitionKey eq 'p7') and "
      "(RowKey eq 'r1' or RowKey eq 'r4' or RowKey eq 'r9')";
  std::string padding;
  for (int i = 0; i < 40; ++i) padding += " or PartitionKey eq 'none" + std::to_string(i) + "'";
  const std::string long_filter =
      "(PartitionKey eq 'p1' or PartitionKey eq 'p3' or PartitionKey eq 'p7'" + padding +
      ") and (RowKey eq 'r1' or RowKey eq 'r4' or RowKey eq 'r9')";
  REQUIRE(long_filter.size() > 1024);
  const std::vector<std::string> expected = {"p1/r1", "p1/r4", "p3/r1", "p3/r4", "p7/r1", "p7/r4"};
  for (const std::string& f : {filter, long_filter}) {
    for (int top : {1, 2, 4, 1000}) {
      CAPTURE(f.size());
      CAPTURE(top);
      std::vector<std::string> seen;
      std::string next;
      for (int pages = 0;; ++pages) {
        REQUIRE(pages < 10);
        HttpResponse res =
            s.Send(http::verb::get, "/devstoreaccount1/items()?$filter=" + QueryEncoded(f) +
                                        "&$top=" + std::to_string(top) + next);
        REQUIRE(res.result_int() == 200);
        const auto body = nlohmann::json::parse(res.body());
        for (const auto& e : body["value"]) {
          seen.push_back(e["PartitionKey"].get<std::string>() + "/" +
                         e["RowKey"].get<std::string>());
        }
        const std::string npk = HeaderOf(res, "x-ms-continuation-NextPartitionKey");
        if (npk.empty()) break;
        next = "&NextPartitionKey=" + QueryEncoded(npk) +
               "&NextRowKey=" + QueryEncoded(HeaderOf(res, "x-ms-continuation-NextRowKey"));
      }
      CHECK(seen == expected);
    }
  }
  // A continuation from between two ranges, and one without NextRowKey.
  HttpResponse res =
      s.Send(http::verb::get, "/devstoreaccount1/items()?$filter=" + QueryEncoded(filter) +
                                  "&NextPartitionKey=" + QueryEncoded("1!4!cDI-") +
                                  "&NextRowKey=" + QueryEncoded("1!4!cjA-"));
  REQUIRE(res.result_int() == 200);
  CHECK(nlohmann::json::parse(res.body())["value"].size() == 4);  // p3 and p7
  res = s.Send(http::verb::get, "/devstoreaccount1/items()?$filter=" + QueryEncoded(filter) +
                                    "&NextPartitionKey=" + QueryEncoded("1!4!cDc-"));
  REQUIRE(res.result_int() == 200);
  CHECK(nlohmann::json::parse(res.body())["value"].size() == 2);  // p7
}

}  // namespace
}  // namespace cerulean::server
