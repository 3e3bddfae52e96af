// The request pipeline: resolve account and resource, find the route
// (routes.h), check version, authenticate, negotiate the format — Azurite's
// order of checks, in one function (router.cc, Prepare), run on the
// request's head before its body is read — then hand the prepared request
// to the scheduler (scheduler.h), which runs it where its route says. The
// request comes and its answer goes through its Exchange (exchange.h).
// Thread-safety: the entry points may run concurrently on any thread; one
// request's calls are made one after another.
#pragma once

#include <optional>

#include "server/http/exchange.h"
#include "server/http/scheduler.h"
#include "server/protocol/content_negotiation.h"
#include "server/protocol/request.h"
#include "server/protocol/resource_path.h"

namespace cerulean::server {

// The longest body of a `$batch` under a grant that can only read: it can
// hold one retrieve only (batch.md), a GET whose head is at most an outer
// request's head. A longer one is refused with 403
// AuthorizationPermissionMismatch, as the writes it must then hold would be.
inline constexpr size_t kReadOnlyBatchBodyBytes = 64 * 1024 + 8 * 1024;

// Serves the request whose head exchange.http() holds, without blocking
// the calling (I/O) thread on storage: prepares it from the head (routing,
// authentication and authorization, with documents from ctx.documents
// only), then answers it at once (exchange.Answer), asks for its body
// (exchange.NeedBody, only if the arrival says one is pending and its
// operation reads one), or answers it later through
// exchange.AnswerLater(). A body it did not ask for is not needed: the
// owner drops it. Never throws.
void ServeRequest(const ServerContext& ctx, Exchange& exchange);

// Goes on with the request whose body ServeRequest asked for, now that it
// is in exchange.http(): answers it now or later, as ServeRequest.
void ServeBody(const ServerContext& ctx, Exchange& exchange);

// Answers the request whose body ServeRequest asked for with `error`
// instead, its body unread (the body could not be taken in: BodyBudget).
void ServeError(const ServerContext& ctx, Exchange& exchange, const ErrorReply& error);

}  // namespace cerulean::server
