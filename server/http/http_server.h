// HttpServer: the server's network side. It owns the I/O threads'
// io_contexts, the TLS context, the listener (with the sessions of its
// connections) and the shutdown: SIGINT/SIGTERM and the Windows console
// events (shutdown_signals.h), or RequestShutdown(), then the drain. What
// requests run with (the store, the budgets, the blocking pool) is the
// caller's, in the ServerContext it gives Open (main.cc composes both).
// Thread-safety: LoadTls, Open and Run are called in that order on one
// thread; RequestShutdown from any thread.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "server/http/session_group.h"

namespace cerulean::server {

struct ServerContext;

class HttpServer {
 public:
  HttpServer();
  // Destroys the listener, then the io_contexts with the sessions still on
  // them (which give their bytes back to the context's budgets), then the
  // TLS context. REQUIRES: Run has returned, or was never called.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Loads the TLS context of --cert/--key/--pwd (tls.h, MakeTlsContext);
  // nothing when all three are empty. Returns an error message, or "".
  // After it succeeds with a certificate the port speaks HTTPS only.
  // REQUIRES: before Open.
  std::string LoadTls(const std::string& cert, const std::string& key, const std::string& password);
  // True iff LoadTls loaded a certificate.
  bool https() const;

  // Makes one io_context per CPU this process may run on (storage::UsableCpus)
  // and binds `host`:`port` (0: any free port); connections keep to
  // `limits`. Returns an error message, or "". Nothing is accepted before
  // Run. REQUIRES: `ctx` outlives this server; called at most once.
  std::string Open(const ServerContext& ctx, const std::string& host, unsigned short port,
                   const ConnectionLimits& limits);
  // The bound port. REQUIRES: Open succeeded.
  unsigned short port() const;

  // Accepts and serves on the I/O threads (the calling one among them) until
  // a request to stop, then drains and returns: accepting stops,
  // `on_shutdown` runs (it stops what keeps feeding the I/O threads, such
  // as page prefetch), the sessions close as their answers are written, and
  // once no request is in flight, or after 5 s, every io_context stops.
  // `on_listening` runs once the shutdown signals are watched, before any
  // connection is served (those that arrive wait in the port's backlog).
  // An exception that escapes a handler is logged to stderr and serving
  // goes on. REQUIRES: Open succeeded; called at most once.
  void Run(const std::function<void()>& on_listening, std::function<void()> on_shutdown);

  // Starts the shutdown Run does on SIGTERM; a no-op once it has started.
  // From any thread, before or during Run (before: Run starts it at once).
  // REQUIRES: Open succeeded; this server is not destroyed meanwhile.
  void RequestShutdown();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace cerulean::server
