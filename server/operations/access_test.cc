// Access control without side channels, through the router's entry point
// over an in-memory store: SAS key ranges (a RowKey bound needs its
// PartitionKey bound; a read outside the range finds nothing, a write is
// refused; a query reads only inside it), $batch answers that do not depend
// on whether an unreachable table exists, the reserved endpoints' schemes,
// and what /_metrics shows to whom.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "server/devtools/faults.h"
#include "server/devtools/metrics.h"
#include "server/formats/http_date.h"
#include "server/http/test_server.h"
#include "server/protocol/query_plan_header.h"

namespace cerulean::server {
namespace {

using testing::CheckJsonError;
using testing::HeaderOf;
using testing::Normalized;
using testing::QueryEncoded;
using testing::TestServer;

// The fields of a service SAS for table `tn` of the development account.
struct SasFields {
  std::string tn = "items";
  std::string sp = "raud";
  std::optional<std::string> spk, srk, epk, erk;
};

// The query string of a signed service SAS (no leading '?').
std::string ServiceSas(const ServerContext& ctx, const SasFields& f) {
  const std::string sv = "2019-02-02";
  const std::string se = "2099-01-01T00:00:00Z";
  const std::string sts = f.sp + "\n\n" + se + "\n/table/devstoreaccount1/" + f.tn + "\n\n\n\n" +
                          sv + "\n" + f.spk.value_or("") + "\n" + f.srk.value_or("") + "\n" +
                          f.epk.value_or("") + "\n" + f.erk.value_or("");
  std::string q = "sv=" + sv + "&tn=" + f.tn + "&sp=" + f.sp + "&se=" + se;
  if (f.spk) q += "&spk=" + *f.spk;
  if (f.srk) q += "&srk=" + *f.srk;
  if (f.epk) q += "&epk=" + *f.epk;
  if (f.erk) q += "&erk=" + *f.erk;
  return q + "&sig=" + QueryEncoded(Sign(ctx.accounts.Find("devstoreaccount1")->keys[0], sts));
}

// A server with table "items" holding p/existing.
struct AccessServer : TestServer {
  AccessServer() {
    REQUIRE(Send(http::verb::post, "/devstoreaccount1/Tables", R"({"TableName":"items"})")
                .result_int() == 201);
    REQUIRE(Insert("p", "existing").result_int() == 201);
  }
  HttpResponse Insert(const std::string& pk, const std::string& rk) {
    return Send(http::verb::post, "/devstoreaccount1/items",
                R"({"PartitionKey":")" + pk + R"(","RowKey":")" + rk + R"(","V":1})");
  }
  // `verb target` with the SAS of `f` added to its query.
  HttpResponse WithSas(http::verb verb, const std::string& target, const SasFields& f,
                       const std::string& body = "", const testing::Headers& headers = {}) {
    const char sep = target.find('?') == std::string::npos ? '?' : '&';
    return Send(verb, target + sep + ServiceSas(ctx(), f), body, headers, false);
  }
  HttpResponse GetWithSas(const std::string& pk, const std::string& rk, const SasFields& f) {
    return WithSas(http::verb::get,
                   "/devstoreaccount1/items(PartitionKey='" + pk + "',RowKey='" + rk + "')", f);
  }
  // `verb path` signed with Shared Key Lite of the development account.
  HttpResponse SendLite(http::verb verb, const std::string& path, const std::string& body = "") {
    const std::string date(HttpDateNow());
    const std::string sts = SharedKeyLiteStringToSign(date, "/devstoreaccount1" + path);
    return Send(
        verb, path, body,
        {{"x-ms-date", date},
         {"Authorization", "SharedKeyLite devstoreaccount1:" +
                               Sign(ctx().accounts.Find("devstoreaccount1")->keys[0], sts)}},
        false);
  }
};

// A $batch body: one change set of `parts` (method, URL after the account,
// body), or a single retrieve of the one GET part when not `changeset`.
struct Part {
  std::string method;
  std::string url;
  std::string body;
};
std::string BatchBody(const std::vector<Part>& parts, bool changeset = true) {
  std::string out = "--batch_b\r\n";
  if (changeset) out += "Content-Type: multipart/mixed; boundary=changeset_c\r\n\r\n";
  for (size_t i = 0; i < parts.size(); ++i) {
    if (changeset) out += "--changeset_c\r\n";
    out += "Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n";
    if (changeset) out += "Content-ID: " + std::to_string(i + 1) + "\r\n";
    out += "\r\n" + parts[i].method + " http://127.0.0.1:10002/devstoreaccount1/" + parts[i].url +
           " HTTP/1.1\r\nAccept: application/json;odata=minimalmetadata\r\n";
    if (!parts[i].body.empty()) out += "Content-Type: application/json\r\n";
    out += "\r\n" + parts[i].body + "\r\n";
  }
  if (changeset) out += "--changeset_c--\r\n";
  return out + "--batch_b--\r\n";
}

const testing::Headers kBatchHeaders = {{"Content-Type", "multipart/mixed; boundary=batch_b"}};

TEST_CASE("a SAS RowKey bound without its PartitionKey bound: 403 AuthenticationFailed") {
  AccessServer s;
  SasFields start_row_only;
  start_row_only.srk = "f";
  HttpResponse res = s.GetWithSas("p", "existing", start_row_only);
  CHECK(res.result_int() == 403);
  CHECK(HeaderOf(res, "x-ms-error-code") == "AuthenticationFailed");
  SasFields end_row_only;
  end_row_only.erk = "f";
  res = s.GetWithSas("p", "existing", end_row_only);
  CHECK(res.result_int() == 403);
  CHECK(HeaderOf(res, "x-ms-error-code") == "AuthenticationFailed");
  // With its PartitionKey bound the RowKey bound holds.
  SasFields both;
  both.spk = "p";
  both.srk = "e";
  CHECK(s.GetWithSas("p", "existing", both).result_int() == 200);
  both.srk = "f";
  CHECK(s.GetWithSas("p", "existing", both).result_int() == 404);
}

TEST_CASE("a read outside the SAS key range: 404 ResourceNotFound, existing or not") {
  AccessServer s;
  REQUIRE(s.Insert("q", "1").result_int() == 201);
  SasFields q_only;
  q_only.spk = "q";
  q_only.epk = "q";
  // In range and absent: the answer every read outside the range gets.
  HttpResponse absent = s.GetWithSas("q", "absent", q_only);
  CheckJsonError(absent, 404, "ResourceNotFound", "The specified resource does not exist.");
  for (const char* rk : {"existing", "absent"}) {
    CAPTURE(rk);
    CheckJsonError(s.GetWithSas("p", rk, q_only), 404, "ResourceNotFound",
                   "The specified resource does not exist.");
  }
  CHECK(s.GetWithSas("q", "1", q_only).result_int() == 200);

  // The same inside $batch: a single retrieve outside the range answers as
  // one of a missing entity inside it.
  auto retrieve = [&](const std::string& pk, const std::string& rk) {
    HttpResponse res = s.WithSas(
        http::verb::post, "/devstoreaccount1/$batch", q_only,
        BatchBody({{"GET", "items(PartitionKey='" + pk + "',RowKey='" + rk + "')", ""}}, false),
        kBatchHeaders);
    CHECK(res.result_int() == 202);
    return Normalized(res.body());
  };
  const std::string missing = retrieve("q", "absent");
  CHECK(missing.find("HTTP/1.1 404 Not Found\r\n") != std::string::npos);
  CHECK(missing.find("ResourceNotFound") != std::string::npos);
  CHECK(retrieve("p", "existing") == missing);
  CHECK(retrieve("p", "absent") == missing);

  // Writes outside the range are refused, whether the entity exists or not.
  HttpResponse insert = s.WithSas(http::verb::post, "/devstoreaccount1/items", q_only,
                                  R"({"PartitionKey":"p","RowKey":"new"})");
  CheckJsonError(insert, 403, "AuthorizationFailure",
                 "This request is not authorized to perform this operation.");
  HttpResponse del =
      s.WithSas(http::verb::delete_, "/devstoreaccount1/items(PartitionKey='p',RowKey='existing')",
                q_only, "", {{"If-Match", "*"}});
  CheckJsonError(del, 403, "AuthorizationFailure",
                 "This request is not authorized to perform this operation.");
  CHECK(s.Send(http::verb::get, "/devstoreaccount1/items(PartitionKey='p',RowKey='existing')")
            .result_int() == 200);
}

TEST_CASE("a query under a SAS key range reads inside it only: plan counts, continuations") {
  AccessServer s;
  for (const auto& [pk, rk] : std::vector<std::pair<std::string, std::string>>{
           {"a", "1"}, {"b", "1"}, {"b", "2"}, {"b", "3"}, {"c", "1"}, {"d", "1"}}) {
    REQUIRE(s.Insert(pk, rk).result_int() == 201);
  }
  SasFields b_only;
  b_only.spk = "b";
  b_only.epk = "b";
  const testing::Headers plan = {{std::string(kQueryPlanHeader), "1"}};
  // Every row of the table matches the filter; only b's three are examined.
  HttpResponse res =
      s.WithSas(http::verb::get, "/devstoreaccount1/items()?$filter=V%20eq%201", b_only, "", plan);
  INFO(res.body());
  REQUIRE(res.result_int() == 200);
  std::string header = HeaderOf(res, kQueryPlanHeader);
  CHECK(header.find(R"("ranges":["['b' .. 'b']"])") != std::string::npos);
  CHECK(header.find(R"("examined":3,"returned":3)") != std::string::npos);
  // Two pages of two: the second ends the range without a continuation.
  res = s.WithSas(http::verb::get, "/devstoreaccount1/items()?$top=2", b_only, "", plan);
  REQUIRE(res.result_int() == 200);
  const std::string npk = HeaderOf(res, "x-ms-continuation-NextPartitionKey");
  const std::string nrk = HeaderOf(res, "x-ms-continuation-NextRowKey");
  REQUIRE_FALSE(npk.empty());
  res = s.WithSas(http::verb::get,
                  "/devstoreaccount1/items()?$top=2&NextPartitionKey=" + QueryEncoded(npk) +
                      "&NextRowKey=" + QueryEncoded(nrk),
                  b_only, "", plan);
  INFO(res.body());
  REQUIRE(res.result_int() == 200);
  CHECK(res.body().find(R"("RowKey":"3")") != std::string::npos);
  CHECK(HeaderOf(res, "x-ms-continuation-NextPartitionKey").empty());
  CHECK(HeaderOf(res, kQueryPlanHeader).find(R"("examined":1,"returned":1,)") != std::string::npos);
  // A filter outside the range reads nothing.
  res = s.WithSas(http::verb::get, "/devstoreaccount1/items()?$filter=PartitionKey%20eq%20'd'",
                  b_only, "", plan);
  REQUIRE(res.result_int() == 200);
  CHECK(res.body().find(R"("value":[])") != std::string::npos);
  CHECK(HeaderOf(res, kQueryPlanHeader).find(R"("ranges":[],)") != std::string::npos);
}

TEST_CASE("$batch to a table the SAS does not reach: 403 whether the table exists or not") {
  AccessServer s;
  REQUIRE(s.Send(http::verb::post, "/devstoreaccount1/Tables", R"({"TableName":"other"})")
              .result_int() == 201);
  SasFields items;
  auto batch = [&](const SasFields& f, const std::string& table, const std::string& body) {
    HttpResponse res = s.WithSas(http::verb::post, "/devstoreaccount1/$batch", f,
                                 BatchBody({{"POST", table, body}}), kBatchHeaders);
    CHECK(res.result_int() == 202);
    return Normalized(res.body());
  };
  for (const std::string body :
       {R"({"PartitionKey":"p","RowKey":"r"})", R"({"PartitionKey":"p"})"}) {
    CAPTURE(body);
    const std::string existing = batch(items, "other", body);
    CHECK(existing.find("HTTP/1.1 403 Forbidden\r\n") != std::string::npos);
    CHECK(existing.find(R"("code":"AuthorizationFailure")") != std::string::npos);
    CHECK(batch(items, "nothere", body) == existing);
  }
  // Refused by its permissions, a change set is refused whether its table
  // exists or not, as a single request is.
  SasFields read_only;
  read_only.sp = "r";
  read_only.tn = "nothere";
  const std::string refused = batch(read_only, "nothere", R"({"PartitionKey":"p","RowKey":"r"})");
  CHECK(refused.find(R"("code":"AuthorizationPermissionMismatch")") != std::string::npos);
  // With a grant for the table, a missing table is still reported as such.
  SasFields nothere;
  nothere.tn = "nothere";
  CHECK(batch(nothere, "nothere", R"({"PartitionKey":"p"})").find(R"("code":"TableNotFound")") !=
        std::string::npos);
}

TEST_CASE("reserved endpoints: full Shared Key only; Shared Key Lite is refused with 403") {
  AccessServer s;
  FaultInjector faults;
  s.ctx().faults = &faults;
  const std::string rules = R"({"rules":[{"operation":"InsertEntity","code":"ServerBusy"}]})";
  HttpResponse lite = s.SendLite(http::verb::put, "/_faults/devstoreaccount1", rules);
  CheckJsonError(lite, 403, "AuthorizationFailure",
                 "This request is not authorized to perform this operation.");
  CHECK_FALSE(faults.Armed());
  CHECK(s.SendLite(http::verb::get, "/_faults/devstoreaccount1").result_int() == 403);
  CHECK(s.SendLite(http::verb::delete_, "/_faults/devstoreaccount1").result_int() == 403);
  CHECK(s.SendLite(http::verb::put, "/_snapshots/devstoreaccount1/s1").result_int() == 403);
  CHECK(s.SendLite(http::verb::post, "/_reset/devstoreaccount1").result_int() == 403);
  CHECK(s.Send(http::verb::get, "/devstoreaccount1/Tables").body().find("items") !=
        std::string::npos);
  CHECK(s.Send(http::verb::get, "/_snapshots/devstoreaccount1").result_int() == 200);
  CHECK(s.Send(http::verb::put, "/_faults/devstoreaccount1", rules).result_int() == 200);
  CHECK(faults.Armed());
  // The Table API still takes Shared Key Lite.
  CHECK(s.SendLite(http::verb::get, "/devstoreaccount1/Tables").result_int() == 200);
}

TEST_CASE("/_metrics: no account names unsigned; the signer's own; every one with the flag") {
  AccessServer s;
  Metrics metrics;
  s.ctx().metrics = &metrics;
  std::string error;
  REQUIRE(s.ctx().accounts.AddFromSpec("other:a2V5MQ==", &error));
  REQUIRE(s.store().CreateTable("other", "theirs").ok());
  const std::string mine = R"(cerulean_tables{account="devstoreaccount1"} 1)";
  const std::string theirs = R"(cerulean_tables{account="other"} 1)";

  REQUIRE(s.Send(http::verb::get, "/devstoreaccount1/Tables").result_int() == 200);
  HttpResponse unsigned_scrape = s.Send(http::verb::get, "/_metrics", "", {}, false);
  REQUIRE(unsigned_scrape.result_int() == 200);
  CHECK(unsigned_scrape.body().find("cerulean_requests_total{") != std::string::npos);
  CHECK(unsigned_scrape.body().find("cerulean_storage_bytes ") != std::string::npos);
  CHECK(unsigned_scrape.body().find("account=") == std::string::npos);

  HttpResponse signed_scrape = s.Send(http::verb::get, "/_metrics");
  REQUIRE(signed_scrape.result_int() == 200);
  CHECK(signed_scrape.body().find(mine) != std::string::npos);
  CHECK(signed_scrape.body().find(R"(cerulean_entities{account="devstoreaccount1"} 1)") !=
        std::string::npos);
  CHECK(signed_scrape.body().find(R"(account="other")") == std::string::npos);

  // Credentials that are given are checked, as on the other reserved paths.
  CHECK(s.SendLite(http::verb::get, "/_metrics").result_int() == 403);
  HttpResponse forged = s.Send(http::verb::get, "/_metrics", "",
                               {{"x-ms-date", std::string(HttpDateNow())},
                                {"Authorization", "SharedKey devstoreaccount1:AAAA"}},
                               false);
  CHECK(forged.result_int() == 403);
  CHECK(HeaderOf(forged, "x-ms-error-code") == "AuthenticationFailed");
  CHECK(s.Send(http::verb::get, "/_metrics?" + ServiceSas(s.ctx(), SasFields{}), "", {}, false)
            .result_int() == 403);

  s.ctx().options.public_metrics = true;
  unsigned_scrape = s.Send(http::verb::get, "/_metrics", "", {}, false);
  CHECK(unsigned_scrape.body().find(mine) != std::string::npos);
  CHECK(unsigned_scrape.body().find(theirs) != std::string::npos);
}

}  // namespace
}  // namespace cerulean::server
