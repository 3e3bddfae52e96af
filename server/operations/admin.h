// Non-OData endpoints: the reserved /_health, /_metrics, /_reset, /_faults
// and /_snapshots paths, the CORS preflight, and CORS headers on actual
// responses.
// Thread-safety: may run concurrently.
#pragma once

#include <optional>
#include <string_view>

#include "server/protocol/request.h"

namespace cerulean::server {

// Authenticates a reserved endpoint's request with the key of the account
// `encoded_account` names (canonical resource /{account}{path}; only the
// schemes GrantsAdmin allows, else AuthorizationFailure), setting
// req.account and req.op. Returns the error answer (AuthenticationFailed for
// an unknown account, MethodNotAllowed unless `method_allowed`), or nullopt.
std::optional<HttpResponse> AuthorizeAdmin(const ServerContext& ctx, Request& req,
                                           std::string_view encoded_account, Operation op,
                                           bool method_allowed);

// Prepares a request whose path starts with "/_" from its head (router.cc,
// Prepare): the endpoint's path and verb, and for /_reset, /_faults and
// /_snapshots the account's key (AuthorizeAdmin), which sets req.op. Returns
// the error answer, or nullopt. /_health, /_metrics, the explorer and
// unknown paths take no credentials here.
std::optional<HttpResponse> PrepareAdmin(const ServerContext& ctx, Request& req);

// Answers a request whose path starts with "/_", prepared by PrepareAdmin.
HttpResponse HandleAdmin(const ServerContext& ctx, Request& req, std::string_view path);

// Answers an OPTIONS preflight from the account's CORS rules as cached when
// the request was prepared (req.cors).
HttpResponse Preflight(const ServerContext& ctx, Request& req);

// Adds the CORS headers of an actual response, from req.cors: the
// Access-Control-* headers when the request's Origin matches a rule, and
// Vary: Origin whenever the answer depends on it (the account has rules).
void ApplyCorsHeaders(const Request& req, HttpResponse& res);

}  // namespace cerulean::server
