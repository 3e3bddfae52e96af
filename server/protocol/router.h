// The request pipeline: resolve account and resource, find the route
// (routes.h), check version, authenticate, negotiate the format — Azurite's
// order of checks, in one function (router.cc, Prepare) — then hand the
// prepared request to the scheduler (scheduler.h), which runs it where its
// route says.
// Thread-safety: both entry points may run concurrently on any thread.
#pragma once

#include <optional>
#include <string>

#include "server/protocol/content_negotiation.h"
#include "server/protocol/request.h"
#include "server/protocol/resource_path.h"
#include "server/protocol/scheduler.h"

namespace cerulean::server {

// Answers one HTTP request on the calling thread, waiting for storage (no
// fault is injected). For tests and fuzzing. Never throws.
HttpResponse HandleRequest(const ServerContext& ctx, HttpRequest& http,
                           const std::string& peer_address);

// What the session layer tells the router about a request it read.
struct Arrival {
  const std::string& peer_address;
  // Requests in flight on this server, this one included (Request::in_flight).
  int in_flight = 1;
};

// Answers one HTTP request without blocking the calling (I/O) thread on
// storage. Returns the response when it was answered on the calling thread
// (it failed before dispatch, or AnswersNow); otherwise nullopt, after
// calling defer(session) once for the Continuation that AnswerLater hands
// the response to (made only then: it costs an allocation). `http` must stay alive and unchanged
// until the response is out. Never throws.
std::optional<HttpResponse> ServeRequest(const ServerContext& ctx, HttpRequest& http,
                                         const Arrival& arrival,
                                         Continuation (*defer)(void* session), void* session);

}  // namespace cerulean::server
