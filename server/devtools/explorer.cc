#include "server/devtools/explorer.h"

#include <string>

namespace cerulean::server {

namespace {

constexpr std::string_view kPrefix = "/_explorer";

// The page runs only its own script and talks only to its own origin.
constexpr std::string_view kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

}  // namespace

bool IsExplorerPath(std::string_view path) {
  if (!path.starts_with(kPrefix)) return false;
  return path.size() == kPrefix.size() || path[kPrefix.size()] == '/';
}

HttpResponse ServeExplorer(const Request& req, std::string_view path) {
  if (req.http.method() != http::verb::get && req.http.method() != http::verb::head) {
    return ErrorResponse(req, ErrorReply(AzureError::kMethodNotAllowed));
  }
  std::string_view name = path.substr(kPrefix.size());
  if (!name.empty()) name.remove_prefix(1);  // the '/'
  if (name.empty()) name = "index.html";
  for (const ExplorerAsset& asset : ExplorerAssets()) {
    if (asset.name != name) continue;
    HttpResponse res = MakeResponse(req, http::status::ok);
    res.set("Content-Type", asset.content_type);
    res.set("Content-Security-Policy", kContentSecurityPolicy);
    res.set("X-Frame-Options", "DENY");
    res.set("Referrer-Policy", "no-referrer");
    res.body() = std::string(asset.body);
    return res;
  }
  return ErrorResponse(req, ErrorReply(AzureError::kResourceNotFound));
}

std::string ExplorerUrl(bool https, std::string_view host, unsigned port) {
  std::string url = https ? "https://" : "http://";
  if (host.empty() || host == "0.0.0.0") {
    url += "127.0.0.1";
  } else if (host == "::" || host == "[::]") {
    url += "[::1]";
  } else if (host.find(':') != std::string_view::npos && !host.starts_with('[')) {
    url.append("[").append(host).append("]");
  } else {
    url += host;
  }
  url.append(":").append(std::to_string(port)).append(kPrefix);
  return url;
}

}  // namespace cerulean::server
