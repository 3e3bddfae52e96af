// The request pipeline: resolve account and resource, route to an operation,
// check version, authenticate, negotiate the format, dispatch, and add the
// common response headers. Azurite's order of checks, in one function.
// Thread-safety: HandleRequest may run concurrently on any thread.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <functional>
#include <string>

#include "server/protocol/request.h"

namespace cerulean::server {

// Answers one HTTP request on the calling thread, waiting for storage.
// Never throws.
HttpResponse HandleRequest(const ServerContext& ctx, HttpRequest& http,
                           const std::string& peer_address);

// Receives the response of HandleRequestAsync.
using Completion = std::function<void(HttpResponse)>;

// Answers one HTTP request without blocking the calling (I/O) thread on
// storage: failures before dispatch, point reads and the health check are
// answered inline; entity writes and batches are prepared inline and
// committed through Store::ApplyAsync (so that concurrent writes share one
// commit), their answer built on `executor`; every other operation runs on
// ctx.blocking_pool. `done` runs exactly once, on any of those threads;
// `http` must stay alive and unchanged until then. Never throws.
void HandleRequestAsync(const ServerContext& ctx, HttpRequest& http,
                        const std::string& peer_address, boost::asio::any_io_executor executor,
                        Completion done);

// Parses the resource part of a decoded path (after the account segment),
// e.g. "/orders(PartitionKey='a',RowKey='b')". Exposed for tests.
std::optional<ErrorReply> ParseResourcePath(std::string_view decoded, ResourcePath* out);

// Resolves the response format from $format / Accept at service version
// `version` (payload.md §1.1): sets *atom iff the answer is AtomPub, else *out
// to the JSON metadata level. Exposed for tests and batches.
std::optional<ErrorReply> NegotiateFormat(std::string_view format_param, std::string_view accept,
                                          std::string_view version, Metadata* out, bool* atom);

}  // namespace cerulean::server
