// Service-level operations: Get/Set Table Service Properties, Get Table
// Service Stats, the CORS preflight and CORS response headers (both from
// the rules cached when the request was prepared: Request::cors).
#include "server/formats/ascii.h"
#include "server/formats/http_date.h"
#include "server/operations/admin.h"
#include "server/operations/operations.h"
#include "server/protocol/document_cache.h"
#include "server/protocol/service_properties.h"

namespace cerulean::server {

namespace {

// Reads the account's service properties (waits on the store), refreshing
// the cached CORS rules with what was read.
storage::Status ReadServiceProperties(const ServerContext& ctx, const std::string& account,
                                      ServiceProperties* props) {
  if (ctx.documents != nullptr) {
    return ctx.documents->ReadServiceProperties(*ctx.store, account, props);
  }
  auto stored = ctx.store->GetServiceProperties(account);
  if (!stored.ok()) return stored.status();
  if (!stored->empty()) static_cast<void>(ApplyServicePropertiesXml(*stored, props));
  return storage::Status::Ok();
}

HttpResponse XmlResponse(const Request& req, http::status status, std::string body) {
  HttpResponse res = MakeResponse(req, status);
  res.set("Content-Type", "application/xml");
  res.body() = std::move(body);
  return res;
}

}  // namespace

HttpResponse GetServiceProperties(const ServerContext& ctx, Request& req) {
  req.xml_errors = true;
  ServiceProperties props;
  if (storage::Status s = ReadServiceProperties(ctx, req.account, &props); !s.ok()) {
    return ErrorResponse(req, FromStatus(s));
  }
  return XmlResponse(req, http::status::ok, ServicePropertiesToXml(props));
}

HttpResponse SetServiceProperties(const ServerContext& ctx, Request& req) {
  req.xml_errors = true;
  ServiceProperties props;
  if (storage::Status s = ReadServiceProperties(ctx, req.account, &props); !s.ok()) {
    return ErrorResponse(req, FromStatus(s));
  }
  if (auto err = ApplyServicePropertiesXml(req.http.body(), &props))
    return ErrorResponse(req, *err);
  storage::Status s = ctx.store->SetServiceProperties(req.account, ServicePropertiesToXml(props));
  // Invalidated even if the write failed: whether it took effect is not
  // known for every failure.
  if (ctx.documents != nullptr) ctx.documents->InvalidateCors(req.account);
  if (!s.ok()) return ErrorResponse(req, FromStatus(s));
  return MakeResponse(req, http::status::accepted);
}

HttpResponse GetServiceStats(const ServerContext&, Request& req) {
  req.xml_errors = true;
  if (!req.secondary)
    return ErrorResponse(req, ErrorReply(AzureError::kInvalidQueryParameterValue));
  return XmlResponse(
      req, http::status::ok,
      "<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceStats><GeoReplication>"
      "<Status>live</Status><LastSyncTime>" +
          std::string(HttpDateNow()) + "</LastSyncTime></GeoReplication></StorageServiceStats>");
}

HttpResponse Preflight(const ServerContext&, Request& req) {
  std::string_view origin = Header(req.http, "Origin");
  std::string_view method = Header(req.http, "Access-Control-Request-Method");
  if (origin.empty() || method.empty()) {
    return ErrorResponse(
        req, ErrorReply(AzureError::kInvalidHeaderValue, "A required CORS header is not present."));
  }
  const CorsRule* rule = req.cors ? MatchCorsRule(*req.cors, origin, method) : nullptr;
  std::string_view headers = Header(req.http, "Access-Control-Request-Headers");
  if (rule == nullptr || !CorsHeadersAllowed(*rule, headers)) {
    return ErrorResponse(req, ErrorReply(AzureError::kCorsPreflightFailure));
  }
  HttpResponse res = MakeResponse(req, http::status::ok);
  bool any_origin = rule->allowed_origins.size() == 1 && rule->allowed_origins[0] == "*";
  res.set("Access-Control-Allow-Origin", any_origin ? std::string_view("*") : origin);
  res.set("Access-Control-Allow-Methods", method);
  if (!headers.empty()) res.set("Access-Control-Allow-Headers", headers);
  res.set("Access-Control-Max-Age", std::to_string(rule->max_age));
  if (!any_origin) {
    res.set("Access-Control-Allow-Credentials", "true");
    res.set("Vary", "Origin");
  }
  return res;
}

void ApplyCorsHeaders(const Request& req, HttpResponse& res) {
  // The answer depends on Origin whenever the account has rules, so that
  // caches key on it even when the request had none or its origin matched
  // none (Azure's "how the Vary header is set"; spec operations.md §3.4).
  if (req.op == Operation::kPreflight || req.cors == nullptr || req.cors->empty()) return;
  std::string_view origin = Header(req.http, "Origin");
  const CorsRule* rule =
      origin.empty() ? nullptr : MatchCorsRule(*req.cors, origin, req.http.method_string());
  if (rule == nullptr) {
    res.set("Vary", "Origin");
    return;
  }
  bool any_origin = rule->allowed_origins.size() == 1 && rule->allowed_origins[0] == "*";
  res.set("Access-Control-Allow-Origin", any_origin ? std::string_view("*") : origin);
  // Expose the rule's headers; prefix and '*' rules expand to the response's
  // own header names.
  std::string exposed;
  auto add = [&exposed](std::string_view name) {
    if (!exposed.empty()) exposed += ',';
    exposed += name;
  };
  for (const auto& pattern : rule->exposed_headers) {
    if (pattern.ends_with("*")) {
      std::string_view prefix(pattern.data(), pattern.size() - 1);
      for (const auto& field : res) {
        std::string_view name(field.name_string().data(), field.name_string().size());
        if (name.size() >= prefix.size() && IEquals(name.substr(0, prefix.size()), prefix))
          add(name);
      }
    } else {
      add(pattern);
    }
  }
  if (!exposed.empty()) res.set("Access-Control-Expose-Headers", exposed);
  if (!any_origin) {
    res.set("Access-Control-Allow-Credentials", "true");
    res.set("Vary", "Origin");
  }
}

}  // namespace cerulean::server
