#include "server/protocol/oauth.h"

#include <nlohmann/json.hpp>
#include <string>

#include "server/formats/ascii.h"
#include "server/formats/base64.h"

namespace cerulean::server {

namespace {

using Json = nlohmann::json;

// Decodes one base64url segment of a JWT (RFC 7515 §2: no padding; the
// standard alphabet is tolerated too) and parses it as a JSON object.
std::optional<Json> DecodeSegment(std::string_view segment) {
  if (segment.empty()) return std::nullopt;
  std::string b64(segment);
  for (char& c : b64) {
    if (c == '-') {
      c = '+';
    } else if (c == '_') {
      c = '/';
    }
  }
  auto bytes = Base64Decode(b64);
  if (!bytes) return std::nullopt;
  Json json = Json::parse(*bytes, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) return std::nullopt;
  return json;
}

std::optional<ErrorReply> Invalid(std::string_view detail) {
  std::string message(Describe(AzureError::kInvalidAuthenticationInfoToken).message);
  message += '\n';
  message += detail;
  return ErrorReply(AzureError::kInvalidAuthenticationInfoToken, std::move(message));
}

// A NumericDate claim (seconds since the epoch, possibly fractional).
std::optional<double> NumericDate(const Json& claims, const char* name) {
  auto it = claims.find(name);
  if (it == claims.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && IEquals(s.substr(0, prefix.size()), prefix);
}

}  // namespace

bool IsAcceptedAudience(std::string_view aud, std::string_view account) {
  if (!aud.empty() && aud.back() == '/') aud.remove_suffix(1);
  if (IEquals(aud, "https://storage.azure.com") ||
      IEquals(aud, "e406a681-f3d4-42a8-90b6-c2b029497af1")) {
    return true;
  }
  static constexpr std::string_view kTableSuffixes[] = {
      ".table.core.windows.net",
      ".table.core.chinacloudapi.cn",
      ".table.core.usgovcloudapi.net",
      ".table.core.cloudapi.de",
  };
  constexpr std::string_view kScheme = "https://";
  if (!StartsWith(aud, kScheme)) return false;
  std::string_view host = aud.substr(kScheme.size());
  for (std::string_view suffix : kTableSuffixes) {
    if (host.size() > suffix.size() && IEquals(host.substr(host.size() - suffix.size()), suffix)) {
      // Only this account's endpoint: a token for another account's tables
      // must not open this one.
      return IEquals(host.substr(0, host.size() - suffix.size()), account);
    }
  }
  return false;
}

bool IsAcceptedIssuer(std::string_view iss) {
  static constexpr std::string_view kIssuerPrefixes[] = {
      // v1 tokens (the storage resource's default): https://sts.windows.net/{tenant}/
      "https://sts.windows.net/",
      "https://sts.microsoftonline.de/",
      "https://sts.chinacloudapi.cn/",
      "https://sts.windows-ppe.net/",
      // v2 tokens: https://login.microsoftonline.com/{tenant}/v2.0
      "https://login.microsoftonline.com/",
      "https://login.microsoftonline.us/",
      "https://login.microsoftonline.de/",
      "https://login.chinacloudapi.cn/",
      "https://login.partner.microsoftonline.cn/",
      "https://login.windows-ppe.net/",
  };
  for (std::string_view prefix : kIssuerPrefixes) {
    // A tenant must follow the prefix.
    if (iss.size() > prefix.size() && StartsWith(iss, prefix)) return true;
  }
  return false;
}

std::optional<ErrorReply> CheckBearerToken(std::string_view token, std::string_view account,
                                           int64_t now) {
  size_t dot1 = token.find('.');
  size_t dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos) {
    return Invalid("The bearer token is not a JWT (expected header.payload.signature).");
  }
  auto header = DecodeSegment(token.substr(0, dot1));
  auto claims = DecodeSegment(token.substr(dot1 + 1, dot2 - dot1 - 1));
  if (!header || !claims) return Invalid("The bearer token is not a well-formed JWT.");

  auto nbf = NumericDate(*claims, "nbf");
  auto exp = NumericDate(*claims, "exp");
  if (!nbf || !exp)
    return Invalid("Lifetime validation failed. The token has no valid nbf and exp claims.");
  double t = static_cast<double>(now);
  if (t + kTokenClockSkewSeconds < *nbf)
    return Invalid("Lifetime validation failed. The token is not yet valid.");
  if (t - kTokenClockSkewSeconds > *exp)
    return Invalid("Lifetime validation failed. The token is expired.");

  auto iss = claims->find("iss");
  if (iss == claims->end() || !iss->is_string() ||
      !IsAcceptedIssuer(iss->get_ref<const std::string&>())) {
    return Invalid("Issuer validation failed. Issuer did not match.");
  }

  // "aud" is a string or, per RFC 7519, an array of strings.
  bool audience_ok = false;
  if (auto aud = claims->find("aud"); aud != claims->end()) {
    if (aud->is_string()) {
      audience_ok = IsAcceptedAudience(aud->get_ref<const std::string&>(), account);
    } else if (aud->is_array()) {
      for (const auto& a : *aud) {
        audience_ok = audience_ok || (a.is_string() &&
                                      IsAcceptedAudience(a.get_ref<const std::string&>(), account));
      }
    }
  }
  if (!audience_ok) return Invalid("Audience validation failed. Audience did not match.");
  return std::nullopt;
}

}  // namespace cerulean::server
