// The request pipeline: resolve account and resource, route to an operation,
// check version, authenticate, negotiate the format, dispatch, and add the
// common response headers. Azurite's order of checks, in one function.
// Thread-safety: HandleRequest may run concurrently on any thread.
#pragma once

#include <string>

#include "server/request.h"

namespace cerulean::server {

// Answers one HTTP request. Never throws.
HttpResponse HandleRequest(const ServerContext& ctx, HttpRequest& http,
                           const std::string& peer_address);

// Parses the resource part of a decoded path (after the account segment),
// e.g. "/orders(PartitionKey='a',RowKey='b')". Exposed for tests.
std::optional<ErrorReply> ParseResourcePath(std::string_view decoded, ResourcePath* out);

// Resolves the response format from $format / Accept at service version
// `version` (payload.md §1.1): sets *atom iff the answer is AtomPub, else *out
// to the JSON metadata level. Exposed for tests and batches.
std::optional<ErrorReply> NegotiateFormat(std::string_view format_param, std::string_view accept,
                                          std::string_view version, Metadata* out, bool* atom);

}  // namespace cerulean::server
