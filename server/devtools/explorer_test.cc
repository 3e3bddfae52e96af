// Tests of the explorer's server side: the page's assets at /_explorer and
// the x-cerulean-query-plan header of Query Entities, through the
// production entry path (http/test_server.h) with Shared Key signed
// requests on an in-memory store.
#include "server/devtools/explorer.h"

#include <doctest/doctest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "server/http/test_server.h"
#include "server/protocol/query_plan_header.h"

namespace cerulean::server {
namespace {

struct Server : testing::TestServer {
  // The plan header of a query of table "plans", parsed.
  nlohmann::json Plan(const std::string& query) {
    HttpResponse res = Send(http::verb::get, "/devstoreaccount1/plans()?" + query, "",
                            {{"x-cerulean-query-plan", "1"}});
    REQUIRE(res.result_int() == 200);
    auto it = res.find(kQueryPlanHeader);
    REQUIRE(it != res.end());
    std::string value(it->value());
    for (char c : value) REQUIRE(static_cast<unsigned char>(c) < 0x80);
    auto doc = nlohmann::json::parse(value, nullptr, false);
    REQUIRE(doc.is_object());
    return doc;
  }
};

// Table "plans": partition 'a' rows r1..r5 (Amount 1..5), partition 'b'
// rows r1..r3 (Amount 10), partition 'é' row r1.
void Fill(Server& s) {
  REQUIRE(s.Send(http::verb::post, "/devstoreaccount1/Tables", R"({"TableName":"plans"})")
              .result_int() == 201);
  auto insert = [&](const std::string& pk, const std::string& rk, int amount) {
    std::string body = R"({"PartitionKey":")" + pk + R"(","RowKey":")" + rk + R"(","Amount":)" +
                       std::to_string(amount) + "}";
    REQUIRE(s.Send(http::verb::post, "/devstoreaccount1/plans", body).result_int() == 201);
  };
  for (int i = 1; i <= 5; ++i) insert("a", "r" + std::to_string(i), i);
  for (int i = 1; i <= 3; ++i) insert("b", "r" + std::to_string(i), 10);
  insert("\xC3\xA9", "r1", 7);
}

}  // namespace

TEST_CASE("query plan header: sent only when the request asks for it") {
  Server s;
  Fill(s);
  HttpResponse plain = s.Send(http::verb::get, "/devstoreaccount1/plans()?$filter=Amount%20gt%203");
  CHECK(plain.result_int() == 200);
  CHECK(plain.find(kQueryPlanHeader) == plain.end());
  HttpResponse empty_value =
      s.Send(http::verb::get, "/devstoreaccount1/plans()", "", {{"x-cerulean-query-plan", ""}});
  CHECK(empty_value.find(kQueryPlanHeader) == empty_value.end());
}

TEST_CASE("query plan header: ranges, residual, rows examined and returned") {
  Server s;
  Fill(s);
  SUBCASE("partition and residual: the partition's rows are examined") {
    auto plan = s.Plan("$filter=PartitionKey%20eq%20'a'%20and%20Amount%20gt%203");
    REQUIRE(plan["ranges"].size() == 1);
    CHECK(plan["ranges"][0].get<std::string>().find("'a'") != std::string::npos);
    CHECK(plan["residual"] == "(gt Amount 3)");
    CHECK(plan["examined"] == 5);
    CHECK(plan["returned"] == 2);
    CHECK(plan["more"] == false);
    CHECK(plan["elapsedMs"].is_number());
    CHECK(plan["elapsedMs"].get<double>() >= 0);
  }
  SUBCASE("key bounds only: no residual, every row examined is returned") {
    auto plan = s.Plan("$filter=PartitionKey%20eq%20'a'%20and%20RowKey%20ge%20'r2'");
    CHECK(plan["ranges"].size() == 1);
    CHECK(plan["residual"].is_null());
    CHECK(plan["examined"] == 4);
    CHECK(plan["returned"] == 4);
  }
  SUBCASE("no filter: one full range") {
    auto plan = s.Plan("$top=1000");
    CHECK(plan["ranges"].size() == 1);
    CHECK(plan["residual"].is_null());
    CHECK(plan["returned"] == 9);
  }
  SUBCASE("contradiction: no range, nothing read") {
    auto plan = s.Plan("$filter=PartitionKey%20eq%20'a'%20and%20PartitionKey%20eq%20'b'");
    CHECK(plan["ranges"].empty());
    CHECK(plan["examined"] == 0);
    CHECK(plan["returned"] == 0);
  }
  SUBCASE("a full table scan with a residual") {
    auto plan = s.Plan("$filter=Amount%20eq%2010");
    CHECK(plan["residual"] == "(eq Amount 10)");
    CHECK(plan["examined"] == 9);
    CHECK(plan["returned"] == 3);
  }
  SUBCASE("$top cuts the page: more") {
    auto plan = s.Plan("$filter=Amount%20ge%202&$top=2");
    CHECK(plan["returned"] == 2);
    CHECK(plan["examined"] == 3);  // r1 fails, r2 and r3 match; r4 starts the next page
    CHECK(plan["more"] == true);
  }
  SUBCASE("non-ASCII keys are escaped") {
    auto plan = s.Plan("$filter=PartitionKey%20eq%20'%C3%A9'");
    REQUIRE(plan["ranges"].size() == 1);
    CHECK(plan["ranges"][0].get<std::string>().find("\xC3\xA9") != std::string::npos);
    CHECK(plan["returned"] == 1);
  }
}

TEST_CASE("query plan header: Atom pages report it too") {
  Server s;
  Fill(s);
  HttpResponse res =
      s.Send(http::verb::get, "/devstoreaccount1/plans()?$filter=Amount%20eq%2010&$top=2", "",
             {{"x-cerulean-query-plan", "yes"},
              {"x-ms-version", "2013-08-15"},
              {"Accept", "application/atom+xml"}});
  REQUIRE(res.result_int() == 200);
  CHECK(res["Content-Type"].starts_with("application/atom+xml"));
  auto plan = nlohmann::json::parse(std::string(res[kQueryPlanHeader]));
  CHECK(plan["residual"] == "(eq Amount 10)");
  CHECK(plan["returned"] == 2);
  CHECK(plan["examined"] == 7);  // partition 'a' (5 rows), then b/r1 and b/r2
  CHECK(plan["more"] == true);
}

TEST_CASE("query plan header: an over-long residual is cut short") {
  std::string filter = "Amount eq 1";
  for (int i = 0; i < 300; ++i) filter += " or Amount eq " + std::to_string(i);
  auto parsed = odata::ParseFilter(filter);
  REQUIRE(parsed.ok());
  odata::QueryPlan plan = odata::Compile(&*parsed);
  QueryPlanReport report;
  report.examined = 7;
  report.returned = 3;
  report.elapsed_ms = 1.23456;
  auto doc = nlohmann::json::parse(QueryPlanHeaderValue(plan, report));
  std::string residual = doc["residual"];
  CHECK(residual.size() == 2003);
  CHECK(residual.ends_with("..."));
  CHECK(doc["elapsedMs"] == 1.235);
  CHECK(doc["examined"] == 7);
}

TEST_CASE("explorer: the page and its assets, no authentication, no data") {
  Server s;
  SUBCASE("the page") {
    for (const char* target : {"/_explorer", "/_explorer/", "/_explorer/index.html"}) {
      CAPTURE(target);
      HttpResponse res = s.Send(http::verb::get, target, "", {}, false);
      CHECK(res.result_int() == 200);
      CHECK(res["Content-Type"] == "text/html; charset=utf-8");
      CHECK(res["Content-Security-Policy"].find("connect-src 'self'") != std::string::npos);
      CHECK(res["X-Frame-Options"] == "DENY");
      CHECK(res.body().find("/_explorer/app.js") != std::string::npos);
    }
  }
  SUBCASE("every asset is served with its type") {
    REQUIRE(ExplorerAssets().size() >= 3);
    for (const ExplorerAsset& asset : ExplorerAssets()) {
      CAPTURE(asset.name);
      HttpResponse res =
          s.Send(http::verb::get, "/_explorer/" + std::string(asset.name), "", {}, false);
      CHECK(res.result_int() == 200);
      CHECK(res["Content-Type"] == asset.content_type);
      CHECK(res.body() == asset.body);
    }
    HttpResponse js = s.Send(http::verb::get, "/_explorer/app.js", "", {}, false);
    CHECK(js["Content-Type"] == "text/javascript; charset=utf-8");
  }
  SUBCASE("HEAD: GET's headers, Content-Length included, and no body") {
    for (const char* target : {"/_explorer", "/_explorer/app.js"}) {
      CAPTURE(target);
      HttpResponse get = s.Send(http::verb::get, target, "", {}, false);
      HttpResponse head = s.Send(http::verb::head, target, "", {}, false);
      CHECK(head.result_int() == 200);
      CHECK(head.body().empty());
      REQUIRE_FALSE(get.body().empty());
      CHECK(head["Content-Length"] == std::to_string(get.body().size()));
      for (const auto& field : get) {
        if (field.name_string() == "Date" || field.name_string() == "x-ms-request-id") continue;
        CAPTURE(field.name_string());
        CHECK(head[field.name_string()] == field.value());
      }
    }
  }
  SUBCASE("unknown names, other methods, look-alike paths") {
    CHECK(s.Send(http::verb::get, "/_explorer/nope.js", "", {}, false).result_int() == 404);
    CHECK(s.Send(http::verb::get, "/_explorer/../_metrics", "", {}, false).result_int() == 404);
    CHECK(s.Send(http::verb::post, "/_explorer", "", {}, false).result_int() == 405);
    CHECK(s.Send(http::verb::get, "/_explorers", "", {}, false).result_int() == 400);
    CHECK(IsExplorerPath("/_explorer"));
    CHECK(IsExplorerPath("/_explorer/app.js"));
    CHECK_FALSE(IsExplorerPath("/_explorerx"));
  }
  SUBCASE("turned off: an unknown path") {
    s.ctx().options.explorer = false;
    HttpResponse res = s.Send(http::verb::get, "/_explorer", "", {}, false);
    CHECK(res.result_int() == 400);
    CHECK(res["x-ms-error-code"] == "InvalidUri");
  }
  SUBCASE("the data still needs a signature") {
    REQUIRE(s.Send(http::verb::post, "/devstoreaccount1/Tables", R"({"TableName":"secret"})")
                .result_int() == 201);
    CHECK(s.Send(http::verb::get, "/devstoreaccount1/secret()", "", {}, false).result_int() == 403);
  }
}

TEST_CASE("explorer URL: the listening address, a wildcard replaced by loopback") {
  CHECK(ExplorerUrl(false, "127.0.0.1", 10002) == "http://127.0.0.1:10002/_explorer");
  CHECK(ExplorerUrl(true, "localhost", 443) == "https://localhost:443/_explorer");
  CHECK(ExplorerUrl(false, "0.0.0.0", 10002) == "http://127.0.0.1:10002/_explorer");
  CHECK(ExplorerUrl(false, "", 10002) == "http://127.0.0.1:10002/_explorer");
  CHECK(ExplorerUrl(false, "::", 1) == "http://[::1]:1/_explorer");
  CHECK(ExplorerUrl(false, "::1", 2) == "http://[::1]:2/_explorer");
  CHECK(ExplorerUrl(false, "[fe80::1]", 3) == "http://[fe80::1]:3/_explorer");
}

}  // namespace cerulean::server
