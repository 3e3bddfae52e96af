// Service-level operations: Get/Set Table Service Properties, Get Table
// Service Stats, the CORS preflight and CORS response headers.
#include "server/formats/ascii.h"
#include "server/formats/http_date.h"
#include "server/operations/admin.h"
#include "server/operations/operations.h"
#include "server/protocol/service_properties.h"

namespace cerulean::server {

namespace {

ServiceProperties LoadServiceProperties(const ServerContext& ctx, const std::string& account) {
  ServiceProperties props;
  auto stored = ctx.store->GetServiceProperties(account);
  if (stored.ok() && !stored->empty()) (void)ApplyServicePropertiesXml(*stored, &props);
  return props;
}

HttpResponse XmlResponse(const Request& req, http::status status, std::string body) {
  HttpResponse res = MakeResponse(req, status);
  res.set(http::field::content_type, "application/xml");
  res.body() = std::move(body);
  return res;
}

}  // namespace

HttpResponse GetServiceProperties(const ServerContext& ctx, Request& req) {
  req.xml_errors = true;
  return XmlResponse(req, http::status::ok,
                     ServicePropertiesToXml(LoadServiceProperties(ctx, req.account)));
}

HttpResponse SetServiceProperties(const ServerContext& ctx, Request& req) {
  req.xml_errors = true;
  ServiceProperties props = LoadServiceProperties(ctx, req.account);
  if (auto err = ApplyServicePropertiesXml(req.http.body(), &props))
    return ErrorResponse(req, *err);
  storage::Status s = ctx.store->SetServiceProperties(req.account, ServicePropertiesToXml(props));
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
          HttpDateNow() + "</LastSyncTime></GeoReplication></StorageServiceStats>");
}

HttpResponse Preflight(const ServerContext& ctx, Request& req) {
  req.op = Operation::kPreflight;
  std::string_view origin = Header(req.http, "Origin");
  std::string_view method = Header(req.http, "Access-Control-Request-Method");
  if (origin.empty() || method.empty()) {
    return ErrorResponse(
        req, ErrorReply(AzureError::kInvalidHeaderValue, "A required CORS header is not present."));
  }
  ServiceProperties props = LoadServiceProperties(ctx, req.account);
  const CorsRule* rule = MatchCorsRule(props.cors, origin, method);
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
    res.set(http::field::vary, "Origin");
  }
  return res;
}

void ApplyCorsHeaders(const ServerContext& ctx, const Request& req, HttpResponse& res) {
  if (req.op == Operation::kPreflight || req.account.empty()) return;
  std::string_view origin = Header(req.http, "Origin");
  if (origin.empty()) return;
  ServiceProperties props = LoadServiceProperties(ctx, req.account);
  const CorsRule* rule = MatchCorsRule(props.cors, origin, req.http.method_string());
  if (rule == nullptr) {
    // The answer depends on Origin whenever the account has rules, so caches must
    // key on it even when this origin matched none (Azure's "how the Vary header is set").
    if (!props.cors.empty()) res.set(http::field::vary, "Origin");
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
    res.set(http::field::vary, "Origin");
  }
}

}  // namespace cerulean::server
