// The reserved /_ paths: health, metrics, reset, faults, snapshots, the explorer page. Account and
// table names cannot contain '_', so these never collide with the Table API.
#include "server/operations/admin.h"

#include "server/admin/explorer.h"
#include "server/admin/faults.h"
#include "server/admin/metrics.h"
#include "server/formats/url.h"
#include "server/http/page_prefetch.h"
#include "server/operations/test_double.h"

namespace cerulean::server {

std::optional<HttpResponse> AuthorizeAdmin(const ServerContext& ctx, Request& req,
                                           std::string_view encoded_account, Operation op,
                                           bool method_allowed) {
  auto account = PercentDecode(encoded_account);
  if (!account || account->empty() || ctx.accounts.Find(*account) == nullptr) {
    return ErrorResponse(req, ErrorReply(AzureError::kAuthenticationFailed));
  }
  req.account = *account;
  req.op = op;
  if (!method_allowed) return ErrorResponse(req, ErrorReply(AzureError::kMethodNotAllowed));
  if (auto err = Authenticate(ctx, &req)) return ErrorResponse(req, *err);
  if (!GrantsAdmin(req.grant)) {
    return ErrorResponse(req, ErrorReply(AzureError::kAuthorizationFailure));
  }
  return std::nullopt;
}

HttpResponse HandleAdmin(const ServerContext& ctx, Request& req, std::string_view path) {
  req.version = std::string(kNewestVersion);
  // The explorer's page and assets (server/admin/explorer.h); unknown when it is
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
    // Names and per-account figures only to a Shared Key signature of that
    // account (or to anyone with --publicMetrics); the server-wide figures
    // to anyone. Credentials, when given, are checked as on the other
    // reserved endpoints.
    std::string signer;
    if (!Header(req.http, "Authorization").empty()) {
      if (auto err = AuthenticateSigner(ctx, req, &signer)) return ErrorResponse(req, *err);
    } else if (req.query.Get("sig")) {
      return ErrorResponse(req, ErrorReply(AzureError::kAuthorizationFailure));
    }
    HttpResponse res = MakeResponse(req, http::status::ok);
    res.set(http::field::content_type, "text/plain; version=0.0.4");
    if (ctx.metrics) {
      res.body() = ctx.metrics->Render() +
                   ctx.metrics->RenderUsage(*ctx.store, ctx.options.public_metrics, signer);
    }
    if (ctx.prefetcher) res.body() += ctx.prefetcher->RenderMetrics();
    if (ctx.faults) res.body() += ctx.faults->RenderMetrics();
    return res;
  }
  // POST /_reset/{account}: wipe the account, authorized by its key (Shared
  // Key, canonical resource /{account}/_reset/{account}).
  static constexpr std::string_view kReset = "/_reset/";
  if (path.starts_with(kReset)) {
    if (auto err = AuthorizeAdmin(ctx, req, path.substr(kReset.size()), Operation::kResetAccount,
                                  req.http.method() == http::verb::post)) {
      return std::move(*err);
    }
    storage::Status s = ctx.store->ResetAccount(req.account);
    if (!s.ok()) return ErrorResponse(req, FromStatus(s));
    return MakeResponse(req, http::status::no_content);
  }
  static constexpr std::string_view kFaults = "/_faults/";
  if (path.starts_with(kFaults)) return HandleFaults(ctx, req, path.substr(kFaults.size()));
  static constexpr std::string_view kSnapshots = "/_snapshots/";
  if (path.starts_with(kSnapshots)) {
    return HandleSnapshots(ctx, req, path.substr(kSnapshots.size()));
  }
  return ErrorResponse(req, ErrorReply(AzureError::kInvalidUri));
}

}  // namespace cerulean::server
