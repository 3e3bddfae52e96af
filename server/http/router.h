// The request pipeline: resolve account and resource, find the route
// (routes.h), check version, authenticate, negotiate the format — Azurite's
// order of checks, in one function (router.cc, Prepare), run on the
// request's head before its body is read — then hand the prepared request
// to the scheduler (scheduler.h), which runs it where its route says.
// Thread-safety: the entry points may run concurrently on any thread; one
// request's calls are made one after another.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "server/http/scheduler.h"
#include "server/protocol/content_negotiation.h"
#include "server/protocol/request.h"
#include "server/protocol/resource_path.h"

namespace cerulean::server {

// What the session layer tells the router about a request whose head it
// read.
struct Arrival {
  const std::string& peer_address;
  // Requests in flight on this server, this one included (Request::in_flight).
  int in_flight = 1;
  // The head announced a body that has not been read.
  bool body_pending = false;
  // The connection's hold on the response budget (Request::response_hold);
  // may be null.
  ResponseHold* response_hold = nullptr;
};

// A request from its head to the end of its body: prepared by ServeRequest
// (Served::kReadBody) and answered by ServeBody once its body was read.
// Its owner (the session) keeps it, and the HttpRequest it refers to,
// alive and in place meanwhile.
struct HeldRequest {
  std::optional<Request> req;
  std::chrono::steady_clock::time_point started;
};

// What ServeRequest or ServeBody did with a request.
struct Served {
  enum class Next {
    // `response` answers the request, on the calling thread. A body the
    // request announced is not needed (nor read): the session drops it.
    kAnswered,
    // The answer comes through the Continuation (ServeRequest's `defer`);
    // a body not read yet is not needed either.
    kLater,
    // The request is admitted and its operation reads its body: read it
    // into the HttpRequest, then call ServeBody.
    kReadBody,
  };
  Next next;
  std::optional<HttpResponse> response;
  // kReadBody: the most the body may hold, or 0 for kMaxBodyBytes (BodyLimit).
  size_t body_limit = 0;
};

// The longest body of a `$batch` under a grant that can only read: it can
// hold one retrieve only (batch.md), a GET whose head is at most an outer
// request's head. A longer one is refused with 403
// AuthorizationPermissionMismatch, as the writes it must then hold would be.
inline constexpr size_t kReadOnlyBatchBodyBytes = 64 * 1024 + 8 * 1024;

// Serves the request whose head `http` holds, without blocking the calling
// (I/O) thread on storage: prepares it from the head (routing,
// authentication and authorization, with documents from ctx.documents
// only), then answers it at once, asks for its body (only if
// arrival.body_pending and its operation reads one), or answers it later
// through the Continuation that defer(session) makes (called once, and
// only then: it costs an allocation). `http` must stay alive and in place
// until the response is out; `held` keeps the request until ServeBody.
// Never throws.
Served ServeRequest(const ServerContext& ctx, HttpRequest& http, const Arrival& arrival,
                    Continuation (*defer)(void* session), void* session, HeldRequest* held);

// Goes on with the request ServeRequest asked the body of (kReadBody), now
// that it is in its HttpRequest: kAnswered or kLater, as ServeRequest.
Served ServeBody(const ServerContext& ctx, HeldRequest& held, Continuation (*defer)(void* session),
                 void* session);

// Answers the request ServeRequest asked the body of with `error` instead,
// its body unread (the body could not be taken in: BodyBudget).
Served ServeError(const ServerContext& ctx, HeldRequest& held, const ErrorReply& error,
                  Continuation (*defer)(void* session), void* session);

// The steps of preparing a routed request from authentication on:
// credentials, authorization, format negotiation, the body's Content-Type.
// Returns the error answer, or nullopt. The scheduler runs it again on the
// blocking pool for a request whose stored access policies were missing
// (kMissingAcl), with req.may_load_documents set.
std::optional<HttpResponse> Admit(const ServerContext& ctx, Request& req);

}  // namespace cerulean::server
