// The table explorer: a single-page app served at /_explorer from assets
// compiled into the binary (server/admin/explorer/*, embedded at build time by
// server/admin/explorer/embed.cmake). The page carries no data: it signs its own
// requests to the Table API in the browser, like any other client.
// Thread-safety: the assets are immutable; ServeExplorer may run
// concurrently.
#pragma once

#include <span>
#include <string_view>

#include "server/protocol/request.h"

namespace cerulean::server {

struct ExplorerAsset {
  std::string_view name;  // file name in server/admin/explorer, e.g. "app.js"
  std::string_view content_type;
  std::string_view body;
};

// Every embedded asset (defined in the generated explorer_assets.cc).
std::span<const ExplorerAsset> ExplorerAssets();

// True iff `path` is "/_explorer" or below it.
bool IsExplorerPath(std::string_view path);

// Answers GET/HEAD of "/_explorer", "/_explorer/" (index.html) and
// "/_explorer/<asset>"; 404 ResourceNotFound for other names, 405 for other
// methods. REQUIRES: IsExplorerPath(path).
HttpResponse ServeExplorer(const Request& req, std::string_view path);

}  // namespace cerulean::server
