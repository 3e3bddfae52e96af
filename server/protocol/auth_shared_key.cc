// Shared Key and Shared Key Lite (auth.h): the strings to sign, signing, and
// the verification of an Authorization header's signature, with the
// signatures each thread verified lately.
#include <array>
#include <chrono>
#include <string>
#include <vector>

#include "server/formats/base64.h"
#include "server/formats/http_date.h"
#include "server/formats/url.h"
#include "server/protocol/auth.h"
#include "server/protocol/auth_internal.h"
#include "server/protocol/hmac.h"
#include "server/protocol/request.h"

namespace cerulean::server {

namespace {
constexpr int64_t kMaxClockSkewSeconds = 15 * 60;
}  // namespace

std::string SharedKeyStringToSign(std::string_view verb, std::string_view content_md5,
                                  std::string_view content_type, std::string_view date,
                                  std::string_view canonical_resource) {
  std::string s;
  s.reserve(verb.size() + content_type.size() + date.size() + canonical_resource.size() + 8);
  s.append(verb).append("\n").append(content_md5).append("\n").append(content_type);
  s.append("\n").append(date).append("\n").append(canonical_resource);
  return s;
}

std::string SharedKeyLiteStringToSign(std::string_view date, std::string_view canonical_resource) {
  std::string s(date);
  s += '\n';
  s += canonical_resource;
  return s;
}

std::string Sign(std::string_view key, std::string_view string_to_sign) {
  return Base64Encode(HmacSha256(key, string_to_sign));
}

namespace {

// Signatures this thread verified lately. A SAS is sent unchanged with
// every request it authorizes (its string-to-sign does not depend on the
// request), so re-verifying it would recompute the same HMAC each time.
// Only successes are kept, with the exact inputs; account keys never change
// while the server runs.
class VerifiedSignatures {
 public:
  bool Contains(const Account* account, std::string_view sts, std::string_view sig) const {
    for (const Entry& e : entries_) {
      // Constant-time on the signature, as the uncached check.
      if (e.account == account && e.sts == sts && SecureEquals(e.sig, sig)) return true;
    }
    return false;
  }
  void Add(const Account* account, std::string_view sts, std::string_view sig) {
    Entry& e = entries_[next_++ % entries_.size()];
    e.account = account;
    e.sts.assign(sts);
    e.sig.assign(sig);
  }

 private:
  struct Entry {
    const Account* account = nullptr;
    std::string sts;
    std::string sig;
  };
  std::array<Entry, 8> entries_;
  size_t next_ = 0;
};

}  // namespace

bool MatchesAnyKey(const Account& account, std::string_view string_to_sign, std::string_view sig) {
  thread_local VerifiedSignatures verified;
  if (verified.Contains(&account, string_to_sign, sig)) return true;
  bool match = false;
  for (const auto& key : account.keys) {
    match |= SecureEquals(Sign(key, string_to_sign), sig);
  }
  if (match) verified.Add(&account, string_to_sign, sig);
  return match;
}

namespace {

// The request path re-encoded the way WHATWG URLs encode paths (quotes kept,
// space as %20), for clients that sign a different encoding than they send.
std::string ReencodePath(std::string_view raw) {
  auto decoded = PercentDecode(raw);
  if (!decoded) return std::string(raw);
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : *decoded) {
    bool keep =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
        std::string_view("-._~!$&'()*+,;=:@/").find(static_cast<char>(c)) != std::string_view::npos;
    if (keep) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace

// Verifies a Shared Key or Shared Key Lite `credential` ("name:signature")
// of the request to `account_name`'s resources.
std::optional<ErrorReply> AuthenticateSharedKey(const ServerContext& ctx, const Request& req,
                                                std::string_view account_name,
                                                std::string_view scheme,
                                                std::string_view credential) {
  size_t colon = credential.rfind(':');
  if (colon == std::string_view::npos) return AuthFailed();
  std::string_view name = credential.substr(0, colon);
  std::string_view sig = credential.substr(colon + 1);
  if (name != account_name)
    return AuthFailed("The account in the Authorization header does not match the request.");
  const Account* account = ctx.accounts.Find(account_name);
  if (account == nullptr) return AuthFailed();

  std::string_view date = Header(req.http, "x-ms-date");
  if (date.empty()) date = Header(req.http, "Date");
  auto when = ParseHttpDate(date);
  if (!when)
    return AuthFailed("The Date header in the request is missing or not a valid RFC 1123 date.");
  if (!ctx.options.loose) {
    int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
    if (*when < now - kMaxClockSkewSeconds || *when > now + kMaxClockSkewSeconds) {
      return AuthFailed("Request date header too old or too far in the future: '" +
                        std::string(date) + "'.");
    }
  }

  std::string comp;
  if (auto c = req.query.Get("comp")) comp = "?comp=" + std::string(*c);
  bool lite = scheme == "SharedKeyLite";
  std::string first_sts;
  auto matches = [&](const std::string& path) {
    std::string resource = "/" + std::string(account_name) + path + comp;
    std::string sts =
        lite ? SharedKeyLiteStringToSign(date, resource)
             : SharedKeyStringToSign(req.http.method_string(), Header(req.http, "Content-MD5"),
                                     Header(req.http, "Content-Type"), date, resource);
    if (first_sts.empty()) first_sts = sts;
    return MatchesAnyKey(*account, sts, sig);
  };
  // The path as received first; the re-encoded form (clients differ in which
  // characters they escape) and the primary form of a secondary account only
  // when that fails.
  if (matches(req.raw_path)) return std::nullopt;
  std::vector<std::string> paths{req.raw_path, ReencodePath(req.raw_path)};
  if (req.secondary) {
    std::string suffix = "-secondary";
    std::string stripped = req.raw_path;
    size_t pos = stripped.find(suffix);
    if (pos != std::string::npos) paths.push_back(stripped.erase(pos, suffix.size()));
  }
  for (const auto& path : paths) {
    if (path != req.raw_path && matches(path)) return std::nullopt;
  }
  return AuthFailed(
      "The MAC signature found in the HTTP request '" + std::string(sig) +
      "' is not the same as any computed signature. Server used following string to sign: '" +
      first_sts + "'.");
}

}  // namespace cerulean::server
