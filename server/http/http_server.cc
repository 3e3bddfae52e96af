#include "server/http/http_server.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <exception>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "server/http/listener.h"
#include "server/http/shutdown_signals.h"
#include "server/http/tls.h"
#include "storage/platform.h"

namespace cerulean::server {

namespace asio = boost::asio;

namespace {

// How long the drain waits for the requests in flight at shutdown.
constexpr std::chrono::seconds kDrainTime{5};
// How often the drain looks at the requests in flight.
constexpr std::chrono::milliseconds kDrainPoll{10};

// Runs `ioc` until it is stopped. Handlers guard themselves (a session
// closes its connection on an exception); an exception that still escapes
// one is logged here and the loop goes on, so that no input can stop the
// server (run() may be called again after a handler threw).
void RunGuarded(asio::io_context& ioc) {
  for (;;) {
    try {
      ioc.run();
      return;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cerulean: unexpected exception in an I/O handler: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "cerulean: unexpected exception in an I/O handler\n");
    }
  }
}

}  // namespace

// Destroyed in reverse order of the members: the listener, the drain timer
// and the work guards before the io_contexts they use, the io_contexts
// (and the sessions on them, which may use the TLS context) before the TLS
// context.
struct HttpServer::State {
  std::unique_ptr<asio::ssl::context> tls;  // null for plain HTTP
  // One io_context per I/O thread; the guards keep one without connections
  // running until it is stopped.
  std::vector<std::unique_ptr<asio::io_context>> workers;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
  std::optional<asio::steady_timer> drain;  // on workers[0]
  std::shared_ptr<Listener> listener;

  // The rest is used on workers[0] only.
  std::function<void()> on_shutdown;
  bool stopping = false;
  std::chrono::steady_clock::time_point deadline;

  // Stops accepting, then drains (once).
  void ShutDown() {
    if (std::exchange(stopping, true)) return;
    listener->Stop();
    if (on_shutdown) on_shutdown();
    listener->sessions().RequestClose();
    deadline = std::chrono::steady_clock::now() + kDrainTime;
    WaitDrained();
  }

  // Stops every io_context once no request is in flight or the deadline
  // has passed; until then looks again every kDrainPoll.
  void WaitDrained() {
    if (listener->sessions().InFlight() == 0 || std::chrono::steady_clock::now() > deadline) {
      for (auto& worker : workers) worker->stop();
      return;
    }
    drain->expires_after(kDrainPoll);
    drain->async_wait([this](boost::system::error_code) { WaitDrained(); });
  }
};

HttpServer::HttpServer() : state_(std::make_unique<State>()) {}

HttpServer::~HttpServer() = default;

std::string HttpServer::LoadTls(const std::string& cert, const std::string& key,
                                const std::string& password) {
  const TlsFiles files{cert, key, password};
  if (!TlsRequested(files)) return "";
  return MakeTlsContext(files, &state_->tls);
}

bool HttpServer::https() const { return state_->tls != nullptr; }

std::string HttpServer::Open(const ServerContext& ctx, const std::string& host, unsigned short port,
                             const ConnectionLimits& limits) {
  State& s = *state_;
  // One I/O thread per CPU this process may run on (taskset/cgroup pinning
  // included): more would only contend for the same cores. Each runs its
  // own io_context, and a connection lives on one of them (Listener).
  const unsigned threads = storage::UsableCpus();
  std::vector<asio::io_context*> worker_ptrs;
  for (unsigned i = 0; i < threads; ++i) {
    s.workers.push_back(std::make_unique<asio::io_context>(1));
    worker_ptrs.push_back(s.workers.back().get());
    s.guards.push_back(asio::make_work_guard(*s.workers.back()));
  }
  s.drain.emplace(*s.workers.front());
  s.listener = std::make_shared<Listener>(worker_ptrs, ctx, limits, s.tls.get());
  return s.listener->Open(host, port);
}

unsigned short HttpServer::port() const { return state_->listener->port(); }

void HttpServer::Run(const std::function<void()>& on_listening, std::function<void()> on_shutdown) {
  State& s = *state_;
  s.on_shutdown = std::move(on_shutdown);
  asio::io_context& ioc = *s.workers.front();
  ShutdownSignals signals(ioc);
  signals.AsyncWait([&s] { s.ShutDown(); });
  s.listener->Run();
  if (on_listening) on_listening();

  std::vector<std::thread> threads;
  for (size_t i = 1; i < s.workers.size(); ++i)
    threads.emplace_back([&worker = *s.workers[i]] { RunGuarded(worker); });
  RunGuarded(ioc);
  for (auto& t : threads) t.join();
}

void HttpServer::RequestShutdown() {
  State* s = state_.get();
  asio::post(*s->workers.front(), [s] { s->ShutDown(); });
}

}  // namespace cerulean::server
