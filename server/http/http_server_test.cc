// Tests of HttpServer: it listens on a loopback port, answers over it, and
// stops on RequestShutdown.
#include "server/http/http_server.h"

#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "server/http/health_probe.h"
#include "server/http/test_server.h"
#include "server/protocol/document_cache.h"
#include "server/runtime/blocking_pool.h"

namespace cerulean::server {

namespace {

// What a server's requests run with: an in-memory store, the development
// account, the document cache and a blocking pool. Declared before the
// HttpServer that uses it, so destroyed after.
class Composition {
 public:
  Composition() : store_(testing::OpenMemoryStore()), pool_(2, 4) {
    REQUIRE(ctx_.accounts.AddDefault());
    ctx_.store = store_.get();
    documents_ = std::make_unique<DocumentCache>(ctx_.accounts, DocumentCache::Options{});
    ctx_.documents = documents_.get();
    ctx_.blocking_pool = &pool_;
  }
  // As main does once the server has stopped.
  void Finish() {
    pool_.Join();
    store_->Flush();
  }
  const ServerContext& ctx() const { return ctx_; }

 private:
  std::unique_ptr<storage::SqliteStore> store_;
  BlockingPool pool_;
  std::unique_ptr<DocumentCache> documents_;
  ServerContext ctx_;
};

}  // namespace

TEST_CASE("HttpServer listens on port 0, answers, and stops on RequestShutdown") {
  Composition composition;
  HttpServer server;
  REQUIRE(server.LoadTls("", "", "").empty());
  CHECK_FALSE(server.https());
  REQUIRE(server.Open(composition.ctx(), "127.0.0.1", 0, ConnectionLimits{}).empty());
  CHECK(server.port() != 0);

  std::promise<void> listening;
  int shutdowns = 0;  // written on the I/O thread, read after Run returned
  std::thread runner([&] { server.Run([&] { listening.set_value(); }, [&] { ++shutdowns; }); });
  listening.get_future().wait();
  // A real request over the socket: GET /_health answers 200.
  CHECK(ProbeHealth("127.0.0.1", server.port(), std::chrono::seconds(5)) == "");
  server.RequestShutdown();
  server.RequestShutdown();  // the second is a no-op
  runner.join();
  CHECK(shutdowns == 1);
  composition.Finish();

  // Nothing answers on the port any more.
  CHECK(ProbeHealth("127.0.0.1", server.port(), std::chrono::seconds(1)) != "");
}

TEST_CASE("HttpServer asked to stop before Run drains at once") {
  Composition composition;
  HttpServer server;
  REQUIRE(server.Open(composition.ctx(), "127.0.0.1", 0, ConnectionLimits{}).empty());
  server.RequestShutdown();
  bool listened = false;
  bool shut_down = false;
  server.Run([&] { listened = true; }, [&] { shut_down = true; });
  CHECK(listened);
  CHECK(shut_down);
  composition.Finish();
}

TEST_CASE("HttpServer reports a port it cannot bind") {
  Composition composition;
  HttpServer first;
  REQUIRE(first.Open(composition.ctx(), "127.0.0.1", 0, ConnectionLimits{}).empty());
  HttpServer second;
  CHECK_FALSE(
      second.Open(composition.ctx(), "127.0.0.1", first.port(), ConnectionLimits{}).empty());
}

TEST_CASE("HttpServer reports TLS files it cannot read") {
  HttpServer server;
  CHECK_FALSE(server.LoadTls("/nonexistent/cert.pem", "/nonexistent/key.pem", "").empty());
  CHECK_FALSE(server.https());
}

}  // namespace cerulean::server
