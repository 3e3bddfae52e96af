#include "server/runtime/response_budget.h"

#include <doctest/doctest.h>

namespace cerulean::server {
namespace {

TEST_CASE("ResponseHold: grows ahead, settles to a body's size, gives back when cleared or gone") {
  ResponseBudget budget(100, 1);
  {
    ResponseHold hold(&budget);
    CHECK(hold.GrowTo(10, 20));
    CHECK(hold.held() == 30);
    CHECK(hold.GrowTo(25, 20));  // already held
    CHECK(hold.held() == 30);
    CHECK(hold.SetTo(12));
    CHECK(budget.in_use() == 12);
    CHECK(hold.SetTo(90));
    CHECK(budget.in_use() == 90);
    CHECK_FALSE(hold.GrowTo(120, 0));  // takes the last 10, still short
    CHECK(hold.held() == 100);
    CHECK_FALSE(hold.SetTo(101));  // does not fit: holds nothing
    CHECK(hold.held() == 0);
    CHECK(budget.in_use() == 0);
    CHECK(hold.SetTo(50));
  }
  CHECK(budget.in_use() == 0);
  CHECK(budget.RenderMetrics().find("cerulean_response_body_refused_total 1\n") !=
        std::string::npos);
}

TEST_CASE("ResponseHold: one connection, and one client's connections, hold a share at most") {
  ResponseBudget budget(100, 4);  // shares of 25
  ResponseHold a(&budget), b(&budget), c(&budget), other(&budget);
  a.SetClient("sas:x");
  b.SetClient("sas:x");
  c.SetClient("");
  other.SetClient("key:account");
  CHECK_FALSE(c.SetTo(26));
  CHECK(c.SetTo(25));
  CHECK_FALSE(a.GrowTo(30, 0));
  CHECK(a.held() == 25);
  CHECK_FALSE(b.GrowTo(1, 0));  // the client holds its share through `a`
  CHECK(budget.client_held("sas:x") == 25);
  CHECK(other.SetTo(25));  // another client is not held back
  a.Clear();
  CHECK(budget.client_held("sas:x") == 0);
  CHECK(b.GrowTo(20, 0));
  // Switching client gives back what the hold held under the old one.
  b.SetClient("sas:y");
  CHECK(b.held() == 0);
  CHECK(budget.in_use() == 50);
}

TEST_CASE(
    "ResponseHold: a write's reservation is taken before it commits; its answer always fits") {
  ResponseBudget budget(100, 1);
  ResponseHold hold(&budget), other(&budget);
  CHECK(other.SetTo(80));
  CHECK_FALSE(hold.ReserveForWrite(30));  // refused before the write
  CHECK(hold.held() == 0);
  CHECK(hold.ReserveForWrite(20));
  CHECK(hold.SetTo(35));  // the committed write's answer is longer than reserved
  CHECK(budget.in_use() == 115);
  hold.Clear();
  CHECK_FALSE(hold.SetTo(35));  // no reservation any more
  const std::string metrics = budget.RenderMetrics();
  CHECK(metrics.find("cerulean_response_write_reserved_total 1\n") != std::string::npos);
  CHECK(metrics.find("cerulean_response_write_refused_total 1\n") != std::string::npos);
  CHECK(metrics.find("cerulean_response_write_overdrawn_total 1\n") != std::string::npos);
}

TEST_CASE("ServerBusyInstead: 503 ServerBusy in the answer's format, with its common headers") {
  HttpResponse page{http::status::ok, 11};
  page.set("Content-Type", "application/json;odata=nometadata;streaming=true;charset=utf-8");
  page.set("x-ms-request-id", "6c2d1c0e-0000-4000-8000-000000000001");
  page.set("x-ms-version", "2019-02-02");
  page.set("Access-Control-Allow-Origin", "https://example.com");
  page.set("x-ms-continuation-NextPartitionKey", "1!4!cA--");
  page.set("ETag", "W/\"x\"");
  page.body() = std::string(100000, 'x');
  page.prepare_payload();

  HttpResponse busy = ServerBusyInstead(page);
  CHECK(busy.result_int() == 503);
  CHECK(busy["x-ms-error-code"] == "ServerBusy");
  CHECK(busy["x-ms-request-id"] == "6c2d1c0e-0000-4000-8000-000000000001");
  CHECK(busy["x-ms-version"] == "2019-02-02");
  CHECK(busy["Access-Control-Allow-Origin"] == "https://example.com");
  CHECK(busy.find("x-ms-continuation-NextPartitionKey") == busy.end());
  CHECK(busy.find("ETag") == busy.end());
  CHECK(busy["Content-Type"] == "application/json;odata=nometadata;streaming=true;charset=utf-8");
  CHECK(busy.body().find(R"("code":"ServerBusy")") != std::string::npos);
  CHECK(busy["Content-Length"] == std::to_string(busy.body().size()));

  page.set("Content-Type", "application/atom+xml;charset=utf-8");
  busy = ServerBusyInstead(page);
  CHECK(busy["Content-Type"] == "application/xml");
  CHECK(busy.body().find("<code>ServerBusy</code>") != std::string::npos);
}

}  // namespace
}  // namespace cerulean::server
