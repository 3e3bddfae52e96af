// Authentication's entry points (auth.h): accounts and what a grant reaches;
// Authenticate, which picks the scheme (Shared Key: auth_shared_key.cc; SAS:
// auth_sas.cc; bearer tokens, here, checked by oauth.h); AuthenticateSigner;
// and Authorize, an operation's permissions under a grant.
#include "server/protocol/auth.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <string_view>

#include "server/formats/ascii.h"
#include "server/formats/base64.h"
#include "server/protocol/auth_internal.h"
#include "server/protocol/oauth.h"
#include "server/protocol/request.h"
#include "server/protocol/routes.h"
#include "storage/value.h"

namespace cerulean::server {

bool Accounts::AddDefault() {
  auto key = Base64Decode(kDevAccountKey);
  if (!key) return false;
  accounts_.push_back({std::string(kDevAccount), {*key}});
  return true;
}

bool Accounts::AddFromSpec(std::string_view spec, std::string* error) {
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find(';', start);
    if (end == std::string_view::npos) end = spec.size();
    std::string_view entry = Trim(spec.substr(start, end - start));
    start = end + 1;
    if (entry.empty()) continue;
    size_t colon = entry.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      *error = "account entry without name:key: " + std::string(entry);
      return false;
    }
    Account account{std::string(entry.substr(0, colon)), {}};
    std::string_view keys = entry.substr(colon + 1);
    size_t kstart = 0;
    while (kstart <= keys.size()) {
      size_t kend = keys.find(':', kstart);
      if (kend == std::string_view::npos) kend = keys.size();
      auto decoded = Base64Decode(keys.substr(kstart, kend - kstart));
      if (!decoded || decoded->empty()) {
        *error = "account key is not base64 for account " + account.name;
        return false;
      }
      account.keys.push_back(std::move(*decoded));
      kstart = kend + 1;
    }
    // A later entry for the same name replaces the earlier one.
    std::erase_if(accounts_, [&](const Account& a) { return a.name == account.name; });
    accounts_.push_back(std::move(account));
  }
  return true;
}

const Account* Accounts::Find(std::string_view name) const {
  for (const auto& a : accounts_) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

bool AuthGrant::InRange(const std::string& pk, const std::string& rk) const {
  using storage::CompareOrdinal;
  if (spk) {
    int c = CompareOrdinal(pk, *spk);
    if (c < 0 || (c == 0 && srk && CompareOrdinal(rk, *srk) < 0)) return false;
  }
  if (epk) {
    int c = CompareOrdinal(pk, *epk);
    if (c > 0 || (c == 0 && erk && CompareOrdinal(rk, *erk) > 0)) return false;
  }
  return true;
}

storage::KeyRange AuthGrant::Range() const {
  storage::KeyRange range;
  if (spk) range.lower = storage::KeyBound{*spk, srk, true};
  if (epk) range.upper = storage::KeyBound{*epk, erk, true};
  return range;
}

bool AuthGrant::ReachesTable(std::string_view name) const {
  switch (kind) {
    case Kind::kServiceSas:
      return IEquals(name, table);
    case Kind::kAccountSas:
      return resource_types.find('o') != std::string::npos;
    default:
      return true;
  }
}

bool GrantsAdmin(const AuthGrant& grant) { return grant.kind == AuthGrant::Kind::kSharedKey; }

namespace {

// OAuth (--oauth basic, HTTPS only): see server/protocol/oauth.h.
std::optional<ErrorReply> AuthenticateBearer(const ServerContext& ctx, Request* req,
                                             std::string_view token) {
  if (!ctx.options.https)
    return AuthFailed("Authentication scheme Bearer is not allowed with HTTP.");
  if (!ctx.options.oauth)
    return AuthFailed(
        "Bearer tokens are not enabled on this server (start it with --oauth basic).");
  if (!req->version.empty() && req->version < "2017-11-09") {
    return AuthFailed("Authentication scheme Bearer is not supported in this version.");
  }
  int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  if (auto err = CheckBearerToken(token, req->account, now)) return err;
  req->grant.kind = AuthGrant::Kind::kBearer;
  return std::nullopt;
}

bool Has(const std::string& letters, char c) { return letters.find(c) != std::string::npos; }

// True iff `granted` holds, for each space-separated group of `needed`, one
// of the group's letters (SasRule).
bool Grants(const std::string& granted, std::string_view needed) {
  size_t start = 0;
  while (start < needed.size()) {
    size_t end = std::min(needed.find(' ', start), needed.size());
    std::string_view group = needed.substr(start, end - start);
    if (std::none_of(group.begin(), group.end(), [&](char c) { return Has(granted, c); })) {
      return false;
    }
    start = end + 1;
  }
  return true;
}

}  // namespace

std::optional<ErrorReply> Authenticate(const ServerContext& ctx, Request* req) {
  std::string_view auth = Header(req->http, "Authorization");
  if (auth.empty()) {
    if (req->query.Get("sig")) return AuthenticateSas(ctx, req);
    return AuthFailed();
  }
  size_t space = auth.find(' ');
  std::string_view scheme = auth.substr(0, space);
  std::string_view credential = space == std::string_view::npos ? "" : Trim(auth.substr(space + 1));
  req->grant = AuthGrant{};
  if (scheme == "SharedKey" || scheme == "SharedKeyLite") {
    if (scheme == "SharedKeyLite") req->grant.kind = AuthGrant::Kind::kSharedKeyLite;
    return AuthenticateSharedKey(ctx, *req, req->account, scheme, credential);
  }
  if (scheme == "Bearer") return AuthenticateBearer(ctx, req, credential);
  return ErrorReply(AzureError::kInvalidAuthenticationInfo);
}

std::optional<ErrorReply> AuthenticateSigner(const ServerContext& ctx, const Request& req,
                                             std::string* account) {
  std::string_view auth = Header(req.http, "Authorization");
  size_t space = auth.find(' ');
  std::string_view scheme = auth.substr(0, space);
  std::string_view credential = space == std::string_view::npos ? "" : Trim(auth.substr(space + 1));
  AuthGrant grant;
  if (scheme == "SharedKey" || scheme == "SharedKeyLite") {
    std::string_view name = credential.substr(0, credential.rfind(':'));
    if (auto err = AuthenticateSharedKey(ctx, req, name, scheme, credential)) return err;
    if (scheme == "SharedKeyLite") grant.kind = AuthGrant::Kind::kSharedKeyLite;
    if (!GrantsAdmin(grant)) return ErrorReply(AzureError::kAuthorizationFailure);
    *account = std::string(name);
    return std::nullopt;
  }
  // A bearer token names no account here, and grants the Table API only.
  if (scheme == "Bearer") return ErrorReply(AzureError::kAuthorizationFailure);
  return ErrorReply(AzureError::kInvalidAuthenticationInfo);
}

std::optional<ErrorReply> Authorize(const Request& req, Operation op, std::string_view table) {
  const AuthGrant& g = req.grant;
  const Route& route = RouteOf(op);
  if (g.kind == AuthGrant::Kind::kSharedKey || g.kind == AuthGrant::Kind::kSharedKeyLite ||
      g.kind == AuthGrant::Kind::kBearer) {
    // Table ACLs take the account key.
    if (route.selector == Selector::kAcl && g.kind == AuthGrant::Kind::kBearer) {
      return ErrorReply(AzureError::kAuthorizationFailure);
    }
    return std::nullopt;
  }
  const SasRule& rule = route.sas;
  const std::string& sp = g.permissions;
  auto perm = ErrorReply(AzureError::kAuthorizationPermissionMismatch);
  if (g.kind == AuthGrant::Kind::kServiceSas) {
    // A table SAS reaches entities only.
    if (!rule.table_sas) return ErrorReply(AzureError::kAuthorizationFailure);
    // A $batch names its table only in its operations, each authorized on
    // its own (operations/batch.cc).
    if (op != Operation::kBatch && ToLower(table) != g.table) {
      return ErrorReply(AzureError::kAuthorizationFailure);
    }
    return Grants(sp, rule.table_perms) ? std::nullopt : std::optional(perm);
  }
  // Account SAS.
  if (!rule.account_sas) return ErrorReply(AzureError::kAuthorizationFailure);
  const std::string& srt = g.resource_types;
  if (!rule.account_types.empty() &&
      std::none_of(rule.account_types.begin(), rule.account_types.end(),
                   [&](char type) { return Has(srt, type); })) {
    return ErrorReply(AzureError::kAuthorizationResourceTypeMismatch);
  }
  return Grants(sp, rule.account_perms) ? std::nullopt : std::optional(perm);
}

}  // namespace cerulean::server
