// Table service properties (Logging, HourMetrics, MinuteMetrics, Cors) and
// their XML form.
// Thread-safety: value types and pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/formats/azure_error.h"

namespace cerulean::server {

struct RetentionPolicy {
  bool enabled = false;
  int days = 0;
};

struct LoggingSettings {
  std::string version = "1.0";
  bool del = false, read = false, write = false;
  RetentionPolicy retention;
};

struct MetricsSettings {
  std::string version = "1.0";
  bool enabled = false;
  bool include_apis = false;
  RetentionPolicy retention;
};

struct CorsRule {
  std::vector<std::string> allowed_origins;
  std::vector<std::string> allowed_methods;
  std::vector<std::string> allowed_headers;
  std::vector<std::string> exposed_headers;
  int max_age = 0;
};

// An account's CORS rules, in order (the first that matches applies).
using CorsRules = std::vector<CorsRule>;

struct ServiceProperties {
  LoggingSettings logging;
  MetricsSettings hour_metrics;
  MetricsSettings minute_metrics;
  CorsRules cors;
};

// Parses a Set Table Service Properties body, applying present sections onto
// `props` (omitted sections keep their values).
std::optional<ErrorReply> ApplyServicePropertiesXml(std::string_view xml, ServiceProperties* props);
std::string ServicePropertiesToXml(const ServiceProperties& props);

// The first rule matching origin and method, or nullptr.
const CorsRule* MatchCorsRule(const CorsRules& rules, std::string_view origin,
                              std::string_view method);
// True iff every header of the comma-separated list is allowed by the rule.
bool CorsHeadersAllowed(const CorsRule& rule, std::string_view headers);

}  // namespace cerulean::server
