// Tests of how a session reads a request over a real socket: the head
// first, the body only for an admitted request and within the body budget.
#include "server/http/session.h"

#include <doctest/doctest.h>
#include <poll.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "server/devtools/faults.h"
#include "server/formats/http_date.h"
#include "server/http/listener.h"
#include "server/http/test_server.h"
#include "server/protocol/document_cache.h"
#include "server/runtime/blocking_pool.h"
#include "server/runtime/body_budget.h"

namespace cerulean::server {

namespace {

namespace net = boost::asio;

// A server on a loopback port with a body budget of `budget` bytes and
// connection limits `limits`, run by one I/O thread.
class SocketServer {
 public:
  explicit SocketServer(size_t budget, const ConnectionLimits& limits = {})
      : store_(testing::OpenMemoryStore()), budget_(budget), pool_(2, 4) {
    REQUIRE(ctx_.accounts.AddDefault());
    ctx_.store = store_.get();
    documents_ = std::make_unique<DocumentCache>(ctx_.accounts, DocumentCache::Options{});
    ctx_.documents = documents_.get();
    ctx_.blocking_pool = &pool_;
    ctx_.body_budget = &budget_;
    REQUIRE(store_->CreateTable("devstoreaccount1", "bodies").ok());
    listener_ = std::make_shared<Listener>(std::vector<net::io_context*>{&io_}, ctx_, limits);
    REQUIRE(listener_->Open("127.0.0.1", 0).empty());
    listener_->Run();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~SocketServer() {
    listener_->Stop();
    net::post(io_, [this] { io_.stop(); });
    thread_.join();
    pool_.Join();
    store_->Flush();
  }
  unsigned short port() const { return listener_->port(); }
  BodyBudget& budget() { return budget_; }
  // Before the first request.
  void SetFaults(FaultInjector* faults) { ctx_.faults = faults; }
  const ServerContext& ctx() const { return ctx_; }

 private:
  std::unique_ptr<storage::SqliteStore> store_;
  BodyBudget budget_;
  BlockingPool pool_;
  std::unique_ptr<DocumentCache> documents_;
  ServerContext ctx_;
  net::io_context io_{1};
  std::shared_ptr<Listener> listener_;
  std::thread thread_;
};

// A blocking client connection.
class Client {
 public:
  explicit Client(unsigned short port) : socket_(io_) {
    socket_.connect({net::ip::make_address("127.0.0.1"), port});
  }
  void Send(const std::string& bytes) { net::write(socket_, net::buffer(bytes)); }
  // What arrives within `ms` (stops early once `until` has arrived).
  std::string Receive(int ms, std::string_view until = "") {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < deadline) {
      if (!until.empty() && got_.find(until) != std::string::npos) break;
      pollfd fd{socket_.native_handle(), POLLIN, 0};
      if (poll(&fd, 1, 20) <= 0) continue;
      char buf[65536];
      boost::system::error_code ec;
      size_t n = socket_.read_some(net::buffer(buf), ec);
      if (ec) {
        closed_ = true;
        break;
      }
      got_.append(buf, n);
    }
    return std::exchange(got_, {});
  }
  // True iff the server closed the connection (a read saw EOF or a reset).
  bool closed() const { return closed_; }

 private:
  net::io_context io_;
  net::ip::tcp::socket socket_;
  std::string got_;
  bool closed_ = false;
};

// The head of an insert into table "bodies" with a body of `length` bytes,
// signed with the development account's key unless `sign` is false.
std::string InsertHead(const ServerContext& ctx, size_t length, bool sign, bool expect) {
  const std::string date(HttpDateNow());
  std::string head =
      "POST /devstoreaccount1/bodies HTTP/1.1\r\nHost: 127.0.0.1\r\nx-ms-version: 2019-02-02\r\n"
      "Accept: application/json;odata=nometadata\r\nContent-Type: application/json\r\n"
      "Prefer: return-no-content\r\nx-ms-date: " +
      date + "\r\nContent-Length: " + std::to_string(length) + "\r\n";
  if (expect) head += "Expect: 100-continue\r\n";
  if (sign) {
    const std::string sts = SharedKeyStringToSign("POST", "", "application/json", date,
                                                  "/devstoreaccount1/devstoreaccount1/bodies");
    head += "Authorization: SharedKey devstoreaccount1:" +
            Sign(ctx.accounts.Find("devstoreaccount1")->keys[0], sts) + "\r\n";
  }
  return head + "\r\n";
}

// An entity body of exactly `length` bytes (length >= 64).
std::string EntityBody(const std::string& rk, size_t length) {
  std::string body = R"({"PartitionKey":"p","RowKey":")" + rk + R"(","Pad":")";
  body += std::string(length - body.size() - 2, 'x');
  return body + "\"}";
}

}  // namespace

TEST_CASE("a request refused from its head is answered before its body, which is dropped") {
  SocketServer server(1 << 20);
  Client client(server.port());
  const size_t length = 3 * 1024 * 1024;
  client.Send(InsertHead(server.ctx(), length, false, false));
  // The 403 comes before any of the body was sent, and the body is never
  // held: nothing is taken from the budget.
  std::string answer = client.Receive(5000, "\r\n\r\n");
  CHECK(answer.starts_with("HTTP/1.1 403 "));
  CHECK(answer.find("x-ms-error-code: AuthenticationFailed") != std::string::npos);
  CHECK(answer.find("Connection: close") == std::string::npos);
  CHECK(server.budget().in_use() == 0);
  // The body is read and dropped; the connection serves the next request.
  client.Send(std::string(length, 'x'));
  client.Send("GET /_health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  CHECK(client.Receive(5000, "\"ok\"}").starts_with("HTTP/1.1 200 "));
  CHECK(server.budget().in_use() == 0);

  // A client that waits for 100 Continue gets the final answer instead and
  // the connection is closed: it may or may not send the body now.
  Client waiting(server.port());
  waiting.Send(InsertHead(server.ctx(), length, false, true));
  answer = waiting.Receive(5000);
  CHECK(answer.starts_with("HTTP/1.1 403 "));
  CHECK(answer.find("Connection: close") != std::string::npos);
  CHECK(waiting.closed());
}

TEST_CASE("an admitted body waits for the budget, without being read, and then goes through") {
  const size_t length = 800;
  SocketServer server(1000);
  // The first client's body holds 800 of the 1,000 bytes while it is sent.
  Client first(server.port());
  first.Send(InsertHead(server.ctx(), length, true, true));
  CHECK(first.Receive(5000, "\r\n\r\n") == "HTTP/1.1 100 Continue\r\n\r\n");
  CHECK(server.budget().in_use() == length);
  // The second is not invited to send its body meanwhile...
  Client second(server.port());
  second.Send(InsertHead(server.ctx(), length, true, true));
  CHECK(second.Receive(300).empty());
  // ...until the first is answered.
  first.Send(EntityBody("first", length));
  CHECK(first.Receive(5000, "\r\n\r\n").starts_with("HTTP/1.1 204 "));
  CHECK(second.Receive(5000, "\r\n\r\n") == "HTTP/1.1 100 Continue\r\n\r\n");
  second.Send(EntityBody("second", length));
  CHECK(second.Receive(5000, "\r\n\r\n").starts_with("HTTP/1.1 204 "));
  CHECK(server.budget().in_use() == 0);
  // A body larger than the whole budget gets through on an idle server.
  Client large(server.port());
  large.Send(InsertHead(server.ctx(), 4000, true, false) + EntityBody("large", 4000));
  CHECK(large.Receive(5000, "\r\n\r\n").starts_with("HTTP/1.1 204 "));
}

TEST_CASE("a body that waits for the budget longer than the request timeout gets 503") {
  ConnectionLimits limits;
  limits.request_timeout = std::chrono::seconds(1);
  SocketServer server(1000, limits);
  // The first insert holds its body's bytes for 3 s after it was read.
  FaultInjector faults;
  std::vector<FaultRule> rules;
  REQUIRE_FALSE(ParseFaultRules(R"({"rules":[{"operation":"InsertEntity","delayMs":3000}]})",
                                "devstoreaccount1", true, &rules));
  faults.Set(std::move(rules));
  server.SetFaults(&faults);
  Client first(server.port());
  first.Send(InsertHead(server.ctx(), 800, true, false) + EntityBody("first", 800));
  Client second(server.port());
  second.Send(InsertHead(server.ctx(), 800, true, true));
  const std::string answer = second.Receive(5000, "\r\n\r\n");
  CHECK(answer.starts_with("HTTP/1.1 503 "));
  CHECK(answer.find("x-ms-error-code: ServerBusy") != std::string::npos);
  CHECK(first.Receive(5000, "\r\n\r\n").starts_with("HTTP/1.1 204 "));
}

}  // namespace cerulean::server
