// The test-double endpoints: fault rules (/_faults/{account}) and snapshots
// (/_snapshots/{account}[/{name}[/restore]]), each authorized with the
// account's key like /_reset (README, "Testing with Cerulean").
// Thread-safety: may run concurrently.
#pragma once

#include <string_view>

#include "server/protocol/request.h"

namespace cerulean::server {

// GET lists the account's rules with their counts, PUT replaces them with
// the body's {"rules": [...]}, DELETE clears them. `rest`: the still encoded
// path after "/_faults/".
HttpResponse HandleFaults(const ServerContext& ctx, Request& req, std::string_view rest);

// GET /_snapshots/{account} lists, PUT .../{name} saves, DELETE .../{name}
// deletes, POST .../{name}/restore restores. `rest`: the still encoded path
// after "/_snapshots/".
HttpResponse HandleSnapshots(const ServerContext& ctx, Request& req, std::string_view rest);

// True iff `name` can name a snapshot: 1 to 128 ASCII letters, digits,
// '.', '_' or '-'.
bool ValidSnapshotName(std::string_view name);

}  // namespace cerulean::server
