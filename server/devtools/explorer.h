// The table explorer: a single-page app served at /_explorer from assets
// compiled into the binary (server/devtools/explorer/*, embedded at build time by
// server/devtools/explorer/embed.cmake). The page carries no data: it signs its own
// requests to the Table API in the browser, like any other client.
// Thread-safety: the assets are immutable; ServeExplorer may run
// concurrently.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "server/protocol/request.h"

namespace cerulean::server {

struct ExplorerAsset {
  std::string_view name;  // file name in server/devtools/explorer, e.g. "app.js"
  std::string_view content_type;
  std::string_view body;
};

// Every embedded asset (defined in the generated explorer_assets.cc).
std::span<const ExplorerAsset> ExplorerAssets();

// True iff `path` is "/_explorer" or below it.
bool IsExplorerPath(std::string_view path);

// Answers GET/HEAD of "/_explorer", "/_explorer/" (index.html) and
// "/_explorer/<asset>"; 404 ResourceNotFound for other names, 405 for other
// methods. HEAD gets GET's response, body included: the router sends its
// headers (Content-Length too) without the body. REQUIRES:
// IsExplorerPath(path).
HttpResponse ServeExplorer(const Request& req, std::string_view path);

// The address a browser opens the explorer at, for a server listening on
// `host` (a name or an IPv4 or IPv6 address, as given to --tableHost) and
// `port`: "http[s]://host:port/_explorer", IPv6 in brackets, and a wildcard
// host (0.0.0.0, ::), which no browser can open, replaced by loopback.
std::string ExplorerUrl(bool https, std::string_view host, unsigned port);

}  // namespace cerulean::server
