// Test support: a server over an in-memory SqliteStore (or a store the test
// gives), driven through the production entry path with no sockets: each
// request's head goes to ServeRequest on an I/O thread (an io_context run by
// a thread of its own) in an Exchange, its body (if the router asks for it
// through Exchange::NeedBody) to ServeBody,
// and work the scheduler sends elsewhere runs on a real BlockingPool and the
// store's own threads; the answer comes back inline (Exchange::Answer) or
// through the Continuation (Exchange::AnswerLater), as it does to a session. Also the helpers that
// make answers comparable byte for byte. Thread-safety: one test thread per TestServer.
#pragma once

#include <doctest/doctest.h>

#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cctype>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "server/formats/http_date.h"
#include "server/http/router.h"
#include "server/protocol/auth.h"
#include "server/protocol/document_cache.h"
#include "server/runtime/blocking_pool.h"
#include "storage/sqlite/sqlite_store.h"

namespace cerulean::server::testing {

using Headers = std::vector<std::pair<std::string, std::string>>;

// An empty in-memory SqliteStore.
inline std::unique_ptr<storage::SqliteStore> OpenMemoryStore() {
  storage::SqliteStoreOptions options;
  options.in_memory = true;
  options.background_reaping = false;
  auto opened = storage::SqliteStore::Open(options);
  REQUIRE(opened.ok());
  return std::move(opened).value();
}

class TestServer {
 public:
  // Over an in-memory SqliteStore of its own.
  TestServer() : TestServer(nullptr) {
    own_store_ = OpenMemoryStore();
    ctx_.store = own_store_.get();
  }
  // Over `store`, which must outlive the server.
  explicit TestServer(storage::Store* store)
      : work_(boost::asio::make_work_guard(io_)), pool_(2, 8) {
    ctx_.store = store;
    REQUIRE(ctx_.accounts.AddDefault());
    documents_ = std::make_unique<DocumentCache>(ctx_.accounts, DocumentCache::Options{});
    ctx_.documents = documents_.get();
    ctx_.blocking_pool = &pool_;
    io_thread_ = std::thread([this] { io_.run(); });
  }
  ~TestServer() {
    // Every answer is in (Send waits for it); what remains is the pool's
    // and the store's own work.
    pool_.Join();
    ctx_.store->Flush();
    work_.reset();
    io_.stop();
    io_thread_.join();
  }
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  // Options may be changed between requests.
  ServerContext& ctx() { return ctx_; }
  // The hold on ctx().response_budget that requests carry (as a session's
  // do: Request::response_hold); null: none.
  void set_response_hold(ResponseHold* hold) { response_hold_ = hold; }
  storage::Store& store() { return *ctx_.store; }
  // True iff the calling thread is the server's I/O thread.
  bool OnIoThread() { return io_.get_executor().running_in_this_thread(); }
  // True iff the last answer was computed on the I/O thread, within
  // ServeRequest or ServeBody (not through the Continuation).
  bool answered_inline() const { return answered_inline_; }

  // Answers `verb target` (path-style, from the origin) sent with
  // x-ms-version 2019-02-02, Accept minimal metadata and, with a body,
  // Content-Type application/json; `headers` add to or replace those. Signed
  // with the development account's Shared Key unless `sign` is false.
  HttpResponse Send(http::verb verb, const std::string& target, const std::string& body = "",
                    const Headers& headers = {}, bool sign = true) {
    return Serve(Build(verb, target, body, headers, sign));
  }

  // The request Send sends.
  HttpRequest Build(http::verb verb, const std::string& target, const std::string& body = "",
                    const Headers& headers = {}, bool sign = true) {
    HttpRequest req{verb, target, 11};
    req.set("Host", "127.0.0.1:10002");
    req.set("x-ms-version", "2019-02-02");
    req.set("Accept", "application/json;odata=minimalmetadata");
    if (!body.empty()) req.set("Content-Type", "application/json");
    for (const auto& [name, value] : headers) req.set(name, value);
    if (!body.empty()) {
      req.body() = body;
      req.prepare_payload();
    }
    if (sign) {
      std::string date(HttpDateNow());
      req.set("x-ms-date", date);
      // Path-style: the account is named twice; a comp= parameter is part of
      // the resource.
      std::string resource = "/devstoreaccount1" + target.substr(0, target.find('?'));
      std::smatch comp;
      static const std::regex kComp(R"([?&](comp=[^&]*))");
      if (std::regex_search(target, comp, kComp)) resource += "?" + comp[1].str();
      std::string sts = SharedKeyStringToSign(req.method_string(), "", Header(req, "Content-Type"),
                                              date, resource);
      req.set("Authorization", "SharedKey devstoreaccount1:" +
                                   Sign(ctx_.accounts.Find("devstoreaccount1")->keys[0], sts));
    }
    return req;
  }

  // Answers `req` (whose body, if any, is in req.body(), its Content-Length
  // or Transfer-Encoding set) as a session would: the head first, the body
  // only if the router asks for it.
  HttpResponse Serve(HttpRequest req) {
    auto call = std::make_shared<Call>(std::move(req), io_.get_executor(), this);
    std::future<HttpResponse> answer = call->promise.get_future();
    boost::asio::post(io_, [this, call] { ServeRequest(ctx_, *call); });
    if (answer.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      FAIL("no answer within 30 s");
    }
    HttpResponse res = answer.get();
    CHECK_FALSE(misused_);
    return res;
  }

 private:
  // One request from its head to its answer: the session's side of its
  // Exchange.
  struct Call final : Exchange, std::enable_shared_from_this<Call> {
    Call(HttpRequest r, boost::asio::io_context::executor_type ex, TestServer* s)
        : Exchange(http, Arrival{kPeer, 1, !r.body().empty(), s->response_hold_}),
          http(std::move(r)),
          executor(ex),
          server(s) {
      body.swap(http.body());
    }
    // As a session: the body joins the head, then the router goes on.
    void NeedBody(size_t) override {
      if (body_asked) {
        server->misused_ = true;  // asked for the body twice
        return TestServer::Answer(*this, HttpResponse(http::status::internal_server_error, 11),
                                  true);
      }
      body_asked = true;
      http.body() = std::move(body);
      ServeBody(server->ctx_, *this);
    }
    void Answer(HttpResponse res) override { TestServer::Answer(*this, std::move(res), true); }
    // The answer comes back to the I/O thread.
    Continuation AnswerLater() override {
      auto call = shared_from_this();
      return Continuation{executor, [call](HttpResponse res) {
                            boost::asio::dispatch(
                                call->executor, [call, res = std::move(res)]() mutable {
                                  TestServer::Answer(*call, std::move(res), false);
                                });
                          }};
    }

    static inline const std::string kPeer = "127.0.0.1";
    HttpRequest http;  // the head; the body joins it when the router asks
    std::string body;
    boost::asio::io_context::executor_type executor;
    TestServer* server = nullptr;
    std::promise<HttpResponse> promise;
    bool body_asked = false;
    bool answered = false;  // guarded by running on the I/O thread
  };

  // On the I/O thread (no assertion there: a failure would end its loop).
  static void Answer(Call& call, HttpResponse res, bool inline_answer) {
    if (call.answered) {
      call.server->misused_ = true;  // a second answer
      return;
    }
    call.answered = true;
    call.server->answered_inline_ = inline_answer;
    call.promise.set_value(std::move(res));
  }

  boost::asio::io_context io_{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  BlockingPool pool_;
  std::unique_ptr<storage::SqliteStore> own_store_;
  std::unique_ptr<DocumentCache> documents_;
  ServerContext ctx_;
  std::thread io_thread_;
  bool answered_inline_ = false;
  ResponseHold* response_hold_ = nullptr;
  std::atomic<bool> misused_{false};  // answered twice, or a body asked for twice
};

// `text` percent-encoded for a query string value: everything but RFC
// 3986's unreserved characters (continuation tokens, signatures, filters).
inline std::string QueryEncoded(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// Value of header `name` in `res`, or "" when absent.
inline std::string HeaderOf(const HttpResponse& res, std::string_view name) {
  return std::string(res[name]);
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
