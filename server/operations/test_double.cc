#include "server/operations/test_double.h"

#include <nlohmann/json.hpp>
#include <vector>

#include "server/devtools/faults.h"
#include "server/formats/url.h"
#include "server/operations/admin.h"
#include "server/protocol/document_cache.h"
#include "storage/edm_text.h"

namespace cerulean::server {

namespace {

HttpResponse JsonAnswer(const Request& req, http::status status, std::string body) {
  HttpResponse res = MakeResponse(req, status);
  res.set("Content-Type", "application/json");
  res.body() = std::move(body);
  return res;
}

nlohmann::json SnapshotJson(const storage::SnapshotInfo& info) {
  return {{"name", info.name},
          {"created", storage::FormatDateTime(info.created)},
          {"tables", info.tables},
          {"entities", info.entities}};
}

}  // namespace

bool ValidSnapshotName(std::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::optional<HttpResponse> PrepareFaults(const ServerContext& ctx, Request& req,
                                          std::string_view rest) {
  http::verb m = req.http.method();
  bool allowed = m == http::verb::get || m == http::verb::put || m == http::verb::delete_;
  if (rest.find('/') != std::string_view::npos) {
    return ErrorResponse(req, ErrorReply(AzureError::kInvalidUri));
  }
  return AuthorizeAdmin(ctx, req, rest, Operation::kFaults, allowed);
}

HttpResponse HandleFaults(const ServerContext& ctx, Request& req, std::string_view) {
  http::verb m = req.http.method();
  if (ctx.faults == nullptr) return ErrorResponse(req, ErrorReply(AzureError::kNotImplemented));
  if (m == http::verb::put) {
    std::vector<FaultRule> rules;
    if (auto err = ParseFaultRules(req.http.body(), req.account, true, &rules)) {
      return ErrorResponse(req, ErrorReply(AzureError::kInvalidInput, *err));
    }
    ctx.faults->Set(std::move(rules), req.account);
  } else if (m == http::verb::delete_) {
    ctx.faults->Clear(req.account);
    return MakeResponse(req, http::status::no_content);
  }
  return JsonAnswer(req, http::status::ok, ctx.faults->ListJson(req.account));
}

namespace {

// The parts of {account}[/{name}[/restore]], or nullopt for another shape.
std::optional<std::vector<std::string_view>> SnapshotPath(std::string_view rest) {
  std::vector<std::string_view> parts;
  while (true) {
    size_t slash = rest.find('/');
    parts.push_back(rest.substr(0, slash));
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  if (parts.size() > 3 || (parts.size() == 3 && parts[2] != "restore")) return std::nullopt;
  return parts;
}

}  // namespace

std::optional<HttpResponse> PrepareSnapshots(const ServerContext& ctx, Request& req,
                                             std::string_view rest) {
  auto parts = SnapshotPath(rest);
  if (!parts) return ErrorResponse(req, ErrorReply(AzureError::kInvalidUri));
  http::verb m = req.http.method();
  bool allowed = parts->size() == 1   ? m == http::verb::get
                 : parts->size() == 2 ? m == http::verb::put || m == http::verb::delete_
                                      : m == http::verb::post;
  return AuthorizeAdmin(ctx, req, (*parts)[0], Operation::kSnapshots, allowed);
}

HttpResponse HandleSnapshots(const ServerContext& ctx, Request& req, std::string_view rest) {
  auto path = SnapshotPath(rest);
  if (!path) return ErrorResponse(req, ErrorReply(AzureError::kInvalidUri));
  const std::vector<std::string_view>& parts = *path;
  http::verb m = req.http.method();
  if (parts.size() == 1) {
    std::vector<storage::SnapshotInfo> list;
    storage::Status s = ctx.store->ListSnapshots(req.account, &list);
    if (!s.ok()) return ErrorResponse(req, FromStatus(s));
    nlohmann::json out = {{"snapshots", nlohmann::json::array()}};
    for (const auto& info : list) out["snapshots"].push_back(SnapshotJson(info));
    return JsonAnswer(req, http::status::ok, out.dump());
  }
  auto name = PercentDecode(parts[1]);
  if (!name || !ValidSnapshotName(*name)) {
    return ErrorResponse(
        req, ErrorReply(AzureError::kInvalidInput,
                        "A snapshot name is 1 to 128 letters, digits, '.', '_' or '-'."));
  }
  if (m == http::verb::put) {
    storage::SnapshotInfo info;
    storage::Status s = ctx.store->SaveSnapshot(req.account, *name, &info);
    if (!s.ok()) return ErrorResponse(req, FromStatus(s));
    return JsonAnswer(req, http::status::created, SnapshotJson(info).dump());
  }
  if (m == http::verb::delete_) {
    storage::Status s = ctx.store->DeleteSnapshot(req.account, *name);
    if (!s.ok()) return ErrorResponse(req, FromStatus(s, Addressed::kSnapshot));
    return MakeResponse(req, http::status::no_content);
  }
  storage::RestoreStats stats;
  storage::Status s = ctx.store->RestoreSnapshot(req.account, *name, &stats);
  // The snapshot's ACLs and service properties are the account's now.
  if (ctx.documents != nullptr) ctx.documents->InvalidateAccount(req.account);
  if (!s.ok()) return ErrorResponse(req, FromStatus(s, Addressed::kSnapshot));
  nlohmann::json out = {{"name", *name},
                        {"tablesKept", stats.tables_kept},
                        {"tablesPatched", stats.tables_patched},
                        {"tablesCopied", stats.tables_copied},
                        {"entitiesCopied", stats.entities_copied}};
  return JsonAnswer(req, http::status::ok, out.dump());
}

}  // namespace cerulean::server
