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

// Answers a request whose path starts with "/_".
HttpResponse HandleAdmin(const ServerContext& ctx, Request& req, std::string_view path);

// Answers an OPTIONS preflight from the account's CORS rules.
HttpResponse Preflight(const ServerContext& ctx, Request& req);

// Adds CORS headers to an actual response when the request carried Origin
// and a rule matches.
void ApplyCorsHeaders(const ServerContext& ctx, const Request& req, HttpResponse& res);

}  // namespace cerulean::server
