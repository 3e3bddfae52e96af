// Test support: a server over an in-memory SqliteStore, driven through the
// router's entry point (HandleRequest) with no sockets, and the helpers that
// make its answers comparable byte for byte.
// Thread-safety: one test thread per TestServer.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/formats/http_date.h"
#include "server/protocol/auth.h"
#include "server/protocol/router.h"
#include "storage/sqlite/sqlite_store.h"

namespace cerulean::server::testing {

using Headers = std::vector<std::pair<std::string, std::string>>;

class TestServer {
 public:
  TestServer() {
    storage::SqliteStoreOptions options;
    options.in_memory = true;
    options.background_reaping = false;
    auto opened = storage::SqliteStore::Open(options);
    REQUIRE(opened.ok());
    store_ = std::move(opened).value();
    ctx_.store = store_.get();
    REQUIRE(ctx_.accounts.AddDefault());
  }

  // Options may be changed between requests.
  ServerContext& ctx() { return ctx_; }
  storage::Store& store() { return *store_; }

  // Answers `verb target` (path-style, from the origin) sent with
  // x-ms-version 2019-02-02, Accept minimal metadata and, with a body,
  // Content-Type application/json; `headers` add to or replace those. Signed
  // with the development account's Shared Key unless `sign` is false.
  HttpResponse Send(http::verb verb, const std::string& target, const std::string& body = "",
                    const Headers& headers = {}, bool sign = true) {
    HttpRequest req = Build(verb, target, body, headers, sign);
    return HandleRequest(ctx_, req, "127.0.0.1");
  }

  // The request Send sends.
  HttpRequest Build(http::verb verb, const std::string& target, const std::string& body = "",
                    const Headers& headers = {}, bool sign = true) {
    HttpRequest req{verb, target, 11};
    req.set(http::field::host, "127.0.0.1:10002");
    req.set("x-ms-version", "2019-02-02");
    req.set(http::field::accept, "application/json;odata=minimalmetadata");
    if (!body.empty()) req.set(http::field::content_type, "application/json");
    for (const auto& [name, value] : headers) req.set(name, value);
    if (!body.empty()) {
      req.body() = body;
      req.prepare_payload();
    }
    if (sign) {
      std::string date = HttpDateNow();
      req.set("x-ms-date", date);
      // Path-style: the account is named twice; a comp= parameter is part of
      // the resource.
      std::string resource = "/devstoreaccount1" + target.substr(0, target.find('?'));
      std::smatch comp;
      static const std::regex kComp(R"([?&](comp=[^&]*))");
      if (std::regex_search(target, comp, kComp)) resource += "?" + comp[1].str();
      std::string sts = SharedKeyStringToSign(req.method_string(), "", Header(req, "Content-Type"),
                                              date, resource);
      req.set(http::field::authorization,
              "SharedKey devstoreaccount1:" +
                  Sign(ctx_.accounts.Find("devstoreaccount1")->keys[0], sts));
    }
    return req;
  }

 private:
  std::unique_ptr<storage::SqliteStore> store_;
  ServerContext ctx_;
};

// Value of header `name` in `res`, or "" when absent.
inline std::string HeaderOf(const HttpResponse& res, std::string_view name) {
  auto it = res.find(boost::beast::string_view(name.data(), name.size()));
  return it == res.end() ? std::string() : std::string(it->value());
}

// `text` with what varies between runs replaced by fixed placeholders: the
// request id and time that end every error message (JSON-escaped or not),
// and the boundaries of a batch response.
inline std::string Normalized(std::string text) {
  static const std::string kGuid = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
  static const std::regex kTrailer("RequestId:" + kGuid +
                                   R"((\\n|\n)Time:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z)");
  static const std::regex kBoundary("(batchresponse|changesetresponse)_" + kGuid);
  text = std::regex_replace(text, kTrailer, "RequestId:<id>$1Time:<time>");
  return std::regex_replace(text, kBoundary, "$1_<guid>");
}

inline constexpr std::string_view kMinimalJson =
    "application/json;odata=minimalmetadata;streaming=true;charset=utf-8";

// The odata.error body of `code` with `message`, as Normalized shows it.
inline std::string JsonError(std::string_view code, std::string_view message) {
  return R"({"odata.error":{"code":")" + std::string(code) +
         R"(","message":{"lang":"en-US","value":")" + std::string(message) +
         R"(\nRequestId:<id>\nTime:<time>"}}})";
}

// Checks that `res` is the JSON error `code` with `status` and `message`, at
// minimal metadata.
inline void CheckJsonError(const HttpResponse& res, int status, std::string_view code,
                           std::string_view message) {
  CHECK(res.result_int() == status);
  CHECK(HeaderOf(res, "x-ms-error-code") == code);
  CHECK(HeaderOf(res, "Content-Type") == kMinimalJson);
  CHECK(Normalized(res.body()) == JsonError(code, message));
}

}  // namespace cerulean::server::testing
