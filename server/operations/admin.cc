// The reserved /_ paths: health, metrics, reset, faults, snapshots, the explorer page. Account and
// table names cannot contain '_', so these never collide with the Table API.
#include "server/operations/admin.h"

#include "server/devtools/explorer.h"
#include "server/devtools/faults.h"
#include "server/devtools/metrics.h"
#include "server/formats/escape.h"
#include "server/formats/url.h"
#include "server/operations/test_double.h"
#include "server/protocol/document_cache.h"
#include "server/runtime/body_budget.h"
#include "server/runtime/page_prefetch.h"
#include "server/runtime/response_budget.h"

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
  auto err = Authenticate(ctx, &req);
  // A SAS never reaches these endpoints, whatever policy it names.
  req.missing_documents &= ~kMissingAcl;
  if (err) return ErrorResponse(req, *err);
  if (!GrantsAdmin(req.grant)) {
    return ErrorResponse(req, ErrorReply(AzureError::kAuthorizationFailure));
  }
  return std::nullopt;
}

namespace {
constexpr std::string_view kReset = "/_reset/";
constexpr std::string_view kFaults = "/_faults/";
constexpr std::string_view kSnapshots = "/_snapshots/";
}  // namespace

std::optional<HttpResponse> PrepareAdmin(const ServerContext& ctx, Request& req) {
  req.version = std::string(kNewestVersion);
  std::string_view path = req.raw_path;
  // POST /_reset/{account}: wipe the account, authorized by its key (Shared
  // Key or Shared Key Lite, canonical resource /{account}/_reset/{account}).
  if (path.starts_with(kReset)) {
    return AuthorizeAdmin(ctx, req, path.substr(kReset.size()), Operation::kResetAccount,
                          req.http.method() == http::verb::post);
  }
  if (path.starts_with(kFaults)) return PrepareFaults(ctx, req, path.substr(kFaults.size()));
  if (path.starts_with(kSnapshots)) {
    return PrepareSnapshots(ctx, req, path.substr(kSnapshots.size()));
  }
  return std::nullopt;
}

HttpResponse HandleAdmin(const ServerContext& ctx, Request& req, std::string_view path) {
  // The explorer's page and assets (server/devtools/explorer.h); unknown when it is
  // turned off (--disableExplorer).
  if (ctx.options.explorer && IsExplorerPath(path)) return ServeExplorer(req, path);
  if (path == "/_health" &&
      (req.http.method() == http::verb::get || req.http.method() == http::verb::head)) {
    bool healthy = ctx.store->Healthy();
    HttpResponse res =
        MakeResponse(req, healthy ? http::status::ok : http::status::service_unavailable);
    res.set("Content-Type", "application/json");
    if (healthy) {
      res.body() = R"({"status":"ok"})";
    } else {
      res.body() = R"({"status":"unavailable")";
      if (std::string why = ctx.store->HealthProblem(); !why.empty()) {
        res.body() += R"(,"reason":)";
        AppendJsonString(&res.body(), why);
      }
      res.body() += "}";
    }
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
    res.set("Content-Type", "text/plain; version=0.0.4");
    if (ctx.metrics) {
      res.body() = ctx.metrics->Render() +
                   ctx.metrics->RenderUsage(*ctx.store, ctx.options.public_metrics, signer);
    }
    if (ctx.prefetcher) res.body() += ctx.prefetcher->RenderMetrics();
    if (ctx.faults) res.body() += ctx.faults->RenderMetrics();
    if (ctx.metrics) res.body() += ctx.metrics->RenderMemory(*ctx.store);
    if (ctx.documents) res.body() += ctx.documents->RenderMetrics();
    if (ctx.body_budget) res.body() += ctx.body_budget->RenderMetrics();
    if (ctx.response_budget) res.body() += ctx.response_budget->RenderMetrics();
    return res;
  }
  // PrepareAdmin set req.op only once the account's key authorized it.
  if (req.op == Operation::kResetAccount && path.starts_with(kReset)) {
    storage::Status s = ctx.store->ResetAccount(req.account);
    if (ctx.documents != nullptr) ctx.documents->InvalidateAccount(req.account);
    if (!s.ok()) return ErrorResponse(req, FromStatus(s));
    return MakeResponse(req, http::status::no_content);
  }
  if (req.op == Operation::kFaults && path.starts_with(kFaults)) {
    return HandleFaults(ctx, req, path.substr(kFaults.size()));
  }
  if (req.op == Operation::kSnapshots && path.starts_with(kSnapshots)) {
    return HandleSnapshots(ctx, req, path.substr(kSnapshots.size()));
  }
  return ErrorResponse(req, ErrorReply(AzureError::kInvalidUri));
}

}  // namespace cerulean::server
