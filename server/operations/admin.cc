// The reserved /_ paths: health, metrics, reset, the explorer page. Account and table names cannot
// contain '_', so these never collide with the Table API.
#include "server/operations/admin.h"

#include "server/explorer.h"
#include "server/metrics.h"
#include "server/page_prefetch.h"
#include "server/text.h"

namespace cerulean::server {

HttpResponse HandleAdmin(const ServerContext& ctx, Request& req, std::string_view path) {
  req.version = std::string(kNewestVersion);
  // The explorer's page and assets (server/explorer.h); unknown when it is
  // turned off (--disableExplorer).
  if (ctx.options.explorer && IsExplorerPath(path)) return ServeExplorer(req, path);
  if (path == "/_health" &&
      (req.http.method() == http::verb::get || req.http.method() == http::verb::head)) {
    bool healthy = ctx.store->Healthy();
    HttpResponse res =
        MakeResponse(req, healthy ? http::status::ok : http::status::service_unavailable);
    res.set(http::field::content_type, "application/json");
    res.body() = healthy ? R"({"status":"ok"})" : R"({"status":"unavailable"})";
    return res;
  }
  if (path == "/_metrics" && req.http.method() == http::verb::get) {
    HttpResponse res = MakeResponse(req, http::status::ok);
    res.set(http::field::content_type, "text/plain; version=0.0.4");
    if (ctx.metrics) res.body() = ctx.metrics->Render() + ctx.metrics->RenderUsage(*ctx.store);
    if (ctx.prefetcher) res.body() += ctx.prefetcher->RenderMetrics();
    return res;
  }
  // POST /_reset/{account}: wipe the account, authorized by its key (Shared
  // Key or Shared Key Lite, canonical resource /{account}/_reset/{account}).
  static constexpr std::string_view kReset = "/_reset/";
  if (path.starts_with(kReset)) {
    auto account = PercentDecode(path.substr(kReset.size()));
    if (!account || account->empty() || ctx.accounts.Find(*account) == nullptr) {
      return ErrorResponse(req, ErrorReply(AzureError::kAuthenticationFailed));
    }
    req.account = *account;
    req.op = Operation::kResetAccount;
    if (req.http.method() != http::verb::post)
      return ErrorResponse(req, ErrorReply(AzureError::kMethodNotAllowed));
    if (auto err = Authenticate(ctx, &req)) return ErrorResponse(req, *err);
    if (req.grant.kind != AuthGrant::Kind::kSharedKey) {
      return ErrorResponse(req, ErrorReply(AzureError::kAuthorizationFailure));
    }
    storage::Status s = ctx.store->ResetAccount(req.account);
    if (!s.ok()) return ErrorResponse(req, FromStatus(s));
    return MakeResponse(req, http::status::no_content);
  }
  return ErrorResponse(req, ErrorReply(AzureError::kInvalidUri));
}

}  // namespace cerulean::server
