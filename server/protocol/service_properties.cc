#include "server/protocol/service_properties.h"

#include <boost/property_tree/ptree.hpp>

#include "server/formats/ascii.h"
#include "server/formats/escape.h"
#include "server/formats/xml_tree.h"

namespace cerulean::server {

namespace pt = boost::property_tree;

namespace {

std::vector<std::string> SplitList(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string_view::npos) comma = s.size();
    std::string_view item = Trim(s.substr(start, comma - start));
    if (!item.empty()) out.emplace_back(item);
    start = comma + 1;
  }
  return out;
}

std::string JoinList(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += items[i];
  }
  return out;
}

bool ParseBool(const pt::ptree& node, const char* path, bool* out) {
  auto v = node.get_optional<std::string>(path);
  if (!v) return true;
  std::string s(Trim(*v));
  if (s == "true")
    *out = true;
  else if (s == "false")
    *out = false;
  else
    return false;
  return true;
}

bool ParseRetention(const pt::ptree& node, RetentionPolicy* r) {
  auto rp = node.get_child_optional("RetentionPolicy");
  if (!rp) return true;
  if (!ParseBool(*rp, "Enabled", &r->enabled)) return false;
  r->days = 0;
  if (r->enabled) {
    auto days = rp->get_optional<int>("Days");
    if (!days || *days < 1 || *days > 365) return false;
    r->days = *days;
  }
  return true;
}

bool ParseMetrics(const pt::ptree& node, MetricsSettings* m) {
  m->version = node.get<std::string>("Version", m->version);
  if (!ParseBool(node, "Enabled", &m->enabled)) return false;
  m->include_apis = false;
  if (m->enabled && !ParseBool(node, "IncludeAPIs", &m->include_apis)) return false;
  return ParseRetention(node, &m->retention);
}

void AppendRetention(std::string* out, const RetentionPolicy& r) {
  *out += "<RetentionPolicy><Enabled>";
  *out += r.enabled ? "true" : "false";
  *out += "</Enabled>";
  if (r.enabled) *out += "<Days>" + std::to_string(r.days) + "</Days>";
  *out += "</RetentionPolicy>";
}

void AppendMetrics(std::string* out, const char* name, const MetricsSettings& m) {
  *out += std::string("<") + name + "><Version>";
  AppendXmlText(out, m.version);
  *out += "</Version><Enabled>";
  *out += m.enabled ? "true" : "false";
  *out += "</Enabled>";
  if (m.enabled)
    *out += std::string("<IncludeAPIs>") + (m.include_apis ? "true" : "false") + "</IncludeAPIs>";
  AppendRetention(out, m.retention);
  *out += std::string("</") + name + ">";
}

bool HeaderListOk(const std::vector<std::string>& headers) {
  int literal = 0, prefixed = 0;
  for (const auto& h : headers) {
    if (h.size() > 256) return false;
    if (h.ends_with("*"))
      ++prefixed;
    else
      ++literal;
  }
  return literal <= 64 && prefixed <= 2;
}

bool HeaderMatches(std::string_view pattern, std::string_view header) {
  if (pattern == "*") return true;
  if (pattern.ends_with("*")) {
    std::string_view prefix = pattern.substr(0, pattern.size() - 1);
    return header.size() >= prefix.size() && IEquals(header.substr(0, prefix.size()), prefix);
  }
  return IEquals(pattern, header);
}

}  // namespace

std::optional<ErrorReply> ApplyServicePropertiesXml(std::string_view xml,
                                                    ServiceProperties* props) {
  pt::ptree tree;
  if (!ReadXmlTree(xml, &tree)) return ErrorReply(AzureError::kInvalidXmlDocument);
  auto root = tree.get_child_optional("StorageServiceProperties");
  if (!root) return ErrorReply(AzureError::kInvalidXmlDocument);
  const ErrorReply bad_value(AzureError::kInvalidXmlNodeValue);
  ServiceProperties next = *props;
  try {
    if (auto logging = root->get_child_optional("Logging")) {
      next.logging.version = logging->get<std::string>("Version", "1.0");
      if (!ParseBool(*logging, "Delete", &next.logging.del) ||
          !ParseBool(*logging, "Read", &next.logging.read) ||
          !ParseBool(*logging, "Write", &next.logging.write) ||
          !ParseRetention(*logging, &next.logging.retention)) {
        return bad_value;
      }
    }
    if (auto m = root->get_child_optional("HourMetrics");
        m && !ParseMetrics(*m, &next.hour_metrics))
      return bad_value;
    if (auto m = root->get_child_optional("MinuteMetrics");
        m && !ParseMetrics(*m, &next.minute_metrics))
      return bad_value;
    if (auto cors = root->get_child_optional("Cors")) {
      next.cors.clear();
      for (const auto& [name, node] : *cors) {
        if (name != "CorsRule") continue;
        if (next.cors.size() == 5) return bad_value;
        CorsRule rule;
        rule.allowed_origins = SplitList(node.get<std::string>("AllowedOrigins", ""));
        rule.allowed_methods = SplitList(node.get<std::string>("AllowedMethods", ""));
        rule.allowed_headers = SplitList(node.get<std::string>("AllowedHeaders", ""));
        rule.exposed_headers = SplitList(node.get<std::string>("ExposedHeaders", ""));
        rule.max_age = node.get<int>("MaxAgeInSeconds", 0);
        if (rule.allowed_origins.empty() || rule.allowed_methods.empty() || rule.max_age < 0)
          return bad_value;
        for (const auto& o : rule.allowed_origins) {
          if (o.size() > 256) return bad_value;
        }
        for (const auto& m : rule.allowed_methods) {
          static constexpr std::string_view kMethods[] = {"DELETE", "GET",     "HEAD", "MERGE",
                                                          "POST",   "OPTIONS", "PUT",  "PATCH"};
          bool ok = false;
          for (auto k : kMethods) ok |= k == m;
          if (!ok) return bad_value;
        }
        if (!HeaderListOk(rule.allowed_headers) || !HeaderListOk(rule.exposed_headers))
          return bad_value;
        next.cors.push_back(std::move(rule));
      }
    }
  } catch (const std::exception&) {
    return bad_value;
  }
  *props = std::move(next);
  return std::nullopt;
}

std::string ServicePropertiesToXml(const ServiceProperties& p) {
  std::string out =
      "<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceProperties><Logging><Version>";
  AppendXmlText(&out, p.logging.version);
  out += "</Version>";
  out += std::string("<Delete>") + (p.logging.del ? "true" : "false") + "</Delete>";
  out += std::string("<Read>") + (p.logging.read ? "true" : "false") + "</Read>";
  out += std::string("<Write>") + (p.logging.write ? "true" : "false") + "</Write>";
  AppendRetention(&out, p.logging.retention);
  out += "</Logging>";
  AppendMetrics(&out, "HourMetrics", p.hour_metrics);
  AppendMetrics(&out, "MinuteMetrics", p.minute_metrics);
  if (p.cors.empty()) {
    out += "<Cors />";
  } else {
    out += "<Cors>";
    for (const auto& r : p.cors) {
      out += "<CorsRule><AllowedOrigins>";
      AppendXmlText(&out, JoinList(r.allowed_origins));
      out +=
          "</AllowedOrigins><AllowedMethods>" + JoinList(r.allowed_methods) + "</AllowedMethods>";
      out += "<MaxAgeInSeconds>" + std::to_string(r.max_age) + "</MaxAgeInSeconds><ExposedHeaders>";
      AppendXmlText(&out, JoinList(r.exposed_headers));
      out += "</ExposedHeaders><AllowedHeaders>";
      AppendXmlText(&out, JoinList(r.allowed_headers));
      out += "</AllowedHeaders></CorsRule>";
    }
    out += "</Cors>";
  }
  out += "</StorageServiceProperties>";
  return out;
}

const CorsRule* MatchCorsRule(const CorsRules& rules, std::string_view origin,
                              std::string_view method) {
  for (const auto& rule : rules) {
    bool origin_ok = false;
    for (const auto& o : rule.allowed_origins) origin_ok |= o == "*" || IEquals(o, origin);
    bool method_ok = false;
    for (const auto& m : rule.allowed_methods) method_ok |= IEquals(m, method);
    if (origin_ok && method_ok) return &rule;
  }
  return nullptr;
}

bool CorsHeadersAllowed(const CorsRule& rule, std::string_view headers) {
  for (const auto& h : SplitList(headers)) {
    bool ok = false;
    for (const auto& pattern : rule.allowed_headers) ok |= HeaderMatches(pattern, h);
    if (!ok) return false;
  }
  return true;
}

}  // namespace cerulean::server
