// Non-OData endpoints: the reserved /_health, /_metrics and /_reset paths,
// the CORS preflight, and CORS headers on actual responses.
// Thread-safety: may run concurrently.
#pragma once

#include <string_view>

#include "server/request.h"

namespace cerulean::server {

// Answers a request whose path starts with "/_".
HttpResponse HandleAdmin(const ServerContext& ctx, Request& req, std::string_view path);

// Answers an OPTIONS preflight from the account's CORS rules.
HttpResponse Preflight(const ServerContext& ctx, Request& req);

// Adds CORS headers to an actual response when the request carried Origin
// and a rule matches.
void ApplyCorsHeaders(const ServerContext& ctx, const Request& req, HttpResponse& res);

}  // namespace cerulean::server
