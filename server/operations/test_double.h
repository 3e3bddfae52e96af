// The test-double endpoints: fault rules (/_faults/{account}) and snapshots
// (/_snapshots/{account}[/{name}[/restore]]), each authorized with the
// account's key like /_reset (README, "Testing with Cerulean").
// Thread-safety: may run concurrently.
#pragma once

#include <optional>
#include <string_view>

#include "server/protocol/request.h"

namespace cerulean::server {

// Checks the path and verb of a /_faults request and authorizes it with the
// account's key (AuthorizeAdmin), from its head. `rest`: the still encoded
// path after "/_faults/". The error answer, or nullopt.
std::optional<HttpResponse> PrepareFaults(const ServerContext& ctx, Request& req,
                                          std::string_view rest);
// GET lists the account's rules with their counts, PUT replaces them with
// the body's {"rules": [...]}, DELETE clears them. REQUIRES: PrepareFaults
// accepted `req`.
HttpResponse HandleFaults(const ServerContext& ctx, Request& req, std::string_view rest);

// PrepareFaults for /_snapshots/{account}[/{name}[/restore]].
std::optional<HttpResponse> PrepareSnapshots(const ServerContext& ctx, Request& req,
                                             std::string_view rest);
// GET /_snapshots/{account} lists, PUT .../{name} saves, DELETE .../{name}
// deletes, POST .../{name}/restore restores. `rest`: the still encoded path
// after "/_snapshots/". REQUIRES: PrepareSnapshots accepted `req`.
HttpResponse HandleSnapshots(const ServerContext& ctx, Request& req, std::string_view rest);

// True iff `name` can name a snapshot: 1 to 128 ASCII letters, digits,
// '.', '_' or '-'.
bool ValidSnapshotName(std::string_view name);

}  // namespace cerulean::server
