#include "server/protocol/auth.h"

#include <algorithm>
#include <array>
#include <chrono>

#include "server/formats/acl_xml.h"
#include "server/formats/ascii.h"
#include "server/formats/base64.h"
#include "server/formats/escape.h"
#include "server/formats/http_date.h"
#include "server/formats/url.h"
#include "server/protocol/document_cache.h"
#include "server/protocol/hmac.h"
#include "server/protocol/oauth.h"
#include "server/protocol/request.h"
#include "server/protocol/routes.h"
#include "storage/edm_text.h"
#include "storage/value.h"

namespace cerulean::server {

namespace {
constexpr int64_t kMaxClockSkewSeconds = 15 * 60;
}  // namespace

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

std::optional<ErrorReply> AuthFailed(std::string detail = {}) {
  std::string msg(Describe(AzureError::kAuthenticationFailed).message);
  if (!detail.empty()) msg += "\n" + detail;
  return ErrorReply(AzureError::kAuthenticationFailed, std::move(msg));
}

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

// Parses an IPv4 address into a number.
std::optional<uint32_t> ParseIpv4(std::string_view s) {
  uint32_t out = 0;
  int parts = 0;
  size_t i = 0;
  while (parts < 4) {
    size_t start = i;
    uint32_t v = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && i - start < 3) v = v * 10 + (s[i++] - '0');
    if (i == start || v > 255) return std::nullopt;
    out = (out << 8) | v;
    ++parts;
    if (parts < 4) {
      if (i >= s.size() || s[i] != '.') return std::nullopt;
      ++i;
    }
  }
  if (i != s.size()) return std::nullopt;
  return out;
}

std::optional<ErrorReply> CheckSasCommon(const ServerContext& ctx, const Request& req,
                                         std::string_view st, std::string_view se,
                                         std::string_view spr, std::string_view sip) {
  int64_t now = storage::NowTicks();
  if (se.empty()) return AuthFailed("Signed expiry time is missing.");
  auto expiry = ParseSasTime(se);
  if (!expiry) return AuthFailed("Signed expiry time is not valid.");
  if (now >= *expiry)
    return AuthFailed("Signed expiry time [" + std::string(se) +
                      "] must be after signed start time and current time.");
  if (!st.empty()) {
    auto start = ParseSasTime(st);
    if (!start) return AuthFailed("Signed start time is not valid.");
    if (now < *start)
      return AuthFailed("Signed start time [" + std::string(st) + "] is in the future.");
  }
  if (!spr.empty()) {
    if (spr != "https" && spr != "https,http" && spr != "http,https") return AuthFailed();
    if (spr == "https" && !ctx.options.https)
      return ErrorReply(AzureError::kAuthorizationProtocolMismatch);
  }
  if (!sip.empty()) {
    auto peer = ParseIpv4(req.peer_address);
    size_t dash = sip.find('-');
    auto lo = ParseIpv4(sip.substr(0, dash));
    auto hi = dash == std::string_view::npos ? lo : ParseIpv4(sip.substr(dash + 1));
    if (!lo || !hi) return AuthFailed("The sip field is not valid.");
    if (!peer || *peer < *lo || *peer > *hi) {
      return ErrorReply(
          AzureError::kAuthorizationSourceIPMismatch,
          "This request is not authorized to perform this operation using this source IP " +
              req.peer_address + ".");
    }
  }
  return std::nullopt;
}

// Completes a service SAS's permissions, start and expiry from stored access
// policy `si` of table `tn` (ctx.documents; read from the store only if
// req->may_load_documents, else marked missing in req->missing_documents).
// Fields may come from the SAS or the policy, never both.
std::optional<ErrorReply> ApplyStoredPolicy(const ServerContext& ctx, Request* req,
                                            const std::string& tn, const std::string& si,
                                            std::string* sp, std::string* st, std::string* se) {
  std::shared_ptr<const DocumentCache::Policies> policies;
  if (!FindAcl(ctx.documents, req->account, tn, &policies)) {
    if (!req->may_load_documents) {
      req->missing_documents |= kMissingAcl;
      return std::nullopt;
    }
    auto loaded = LoadAcl(ctx.documents, *ctx.store, req->account, tn);
    if (!loaded.ok() && loaded.status().code() != storage::StatusCode::kTableNotFound) {
      return FromStatus(loaded.status());
    }
    if (loaded.ok()) policies = *loaded;
  }
  const AccessPolicy* policy = nullptr;
  if (policies != nullptr) {
    for (const auto& p : *policies) {
      if (p.id == si) policy = &p;
    }
  }
  if (policy == nullptr) return AuthFailed("The specified signed identifier does not exist.");
  auto merge = [](std::string* field, const std::string& from_policy) {
    if (from_policy.empty()) return true;
    if (!field->empty()) return false;
    *field = from_policy;
    return true;
  };
  if (!merge(st, policy->start) || !merge(se, policy->expiry) || !merge(sp, policy->permission)) {
    return AuthFailed("A field is specified both in the SAS and in the stored access policy.");
  }
  return std::nullopt;
}

// The SAS fields of a query string, each its first value as
// QueryParams::Get gives it, found in one pass over the parameters.
struct SasFields {
  std::optional<std::string_view> sig, sv, ss, srt, sp, st, se, sip, spr, ses, tn, si, spk, srk,
      epk, erk;
};

SasFields FindSasFields(const QueryParams& query) {
  SasFields f;
  for (const auto& [key, value] : query.all()) {
    std::optional<std::string_view>* field = nullptr;
    if (key.size() == 2) {
      if (key == "sv")
        field = &f.sv;
      else if (key == "ss")
        field = &f.ss;
      else if (key == "sp")
        field = &f.sp;
      else if (key == "st")
        field = &f.st;
      else if (key == "se")
        field = &f.se;
      else if (key == "tn")
        field = &f.tn;
      else if (key == "si")
        field = &f.si;
    } else if (key.size() == 3) {
      if (key == "sig")
        field = &f.sig;
      else if (key == "srt")
        field = &f.srt;
      else if (key == "sip")
        field = &f.sip;
      else if (key == "spr")
        field = &f.spr;
      else if (key == "ses")
        field = &f.ses;
      else if (key == "spk")
        field = &f.spk;
      else if (key == "srk")
        field = &f.srk;
      else if (key == "epk")
        field = &f.epk;
      else if (key == "erk")
        field = &f.erk;
    }
    if (field != nullptr && !*field) *field = value;
  }
  return f;
}

std::optional<ErrorReply> AuthenticateSas(const ServerContext& ctx, Request* req) {
  const Account* account = ctx.accounts.Find(req->account);
  if (account == nullptr) return AuthFailed();
  const SasFields f = FindSasFields(req->query);
  auto field = [](const std::optional<std::string_view>& v) {
    return v.value_or(std::string_view());
  };
  auto param = [&](const std::optional<std::string_view>& v) { return std::string(field(v)); };
  // A literal '+' in the query decodes as a space; base64 has no spaces.
  std::string_view sig = field(f.sig);
  std::string sig_with_pluses;
  if (sig.find(' ') != std::string_view::npos) {
    sig_with_pluses.assign(sig);
    std::replace(sig_with_pluses.begin(), sig_with_pluses.end(), ' ', '+');
    sig = sig_with_pluses;
  }
  std::string sv = param(f.sv);
  if (sv.size() != 10 || sv < "2012-02-12") return AuthFailed("The signed version is not valid.");
  req->version = sv;
  AuthGrant& g = req->grant;

  if (f.ss || f.srt) {
    // Account SAS: the fields are read in place.
    std::string_view sp = field(f.sp), st = field(f.st), se = field(f.se), sip = field(f.sip),
                     spr = field(f.spr), ss = field(f.ss), srt = field(f.srt);
    std::string_view ses = sv >= "2020-12-06" ? field(f.ses) : "";
    // Composed in one buffer: the chain of + that composed it made a
    // string per field.
    std::string sts;
    const std::string_view fields[] = {req->account, sp, ss, srt, st, se, sip, spr, sv};
    size_t size = ses.size() + 1;
    for (std::string_view part : fields) size += part.size() + 1;
    sts.reserve(size);
    for (std::string_view part : fields) sts.append(part).push_back('\n');
    if (sv >= "2020-12-06") sts.append(ses).push_back('\n');
    if (!MatchesAnyKey(*account, sts, sig)) {
      return AuthFailed("Signature did not match. String to sign used was " + sts);
    }
    if (auto err = CheckSasCommon(ctx, *req, st, se, spr, sip)) return err;
    if (ss.find('t') == std::string_view::npos)
      return ErrorReply(AzureError::kAuthorizationServiceMismatch);
    g.kind = AuthGrant::Kind::kAccountSas;
    g.permissions = sp;
    g.resource_types = srt;
    return std::nullopt;
  }

  // Service SAS: a stored access policy may complete the fields.
  std::string sp = param(f.sp), st = param(f.st), se = param(f.se), sip = param(f.sip),
              spr = param(f.spr);
  std::string tn = param(f.tn), si = param(f.si);
  // A RowKey bound is refused without its PartitionKey bound, before the
  // signature is checked, as Azure refuses it (auth.md §3.1).
  const auto spk_field = f.spk, srk_field = f.srk, epk_field = f.epk, erk_field = f.erk;
  if (srk_field && !spk_field) return AuthFailed("spk is required when srk is given.");
  if (erk_field && !epk_field) return AuthFailed("epk is required when erk is given.");
  std::string spk(spk_field.value_or("")), srk(srk_field.value_or("")), epk(epk_field.value_or("")),
      erk(erk_field.value_or(""));
  std::string sts;
  if (sv >= "2015-04-05") {
    sts = sp + "\n" + st + "\n" + se + "\n/table/" + req->account + "/" + ToLower(tn) + "\n" + si +
          "\n" + sip + "\n" + spr + "\n" + sv + "\n" + spk + "\n" + srk + "\n" + epk + "\n" + erk;
  } else {
    sts = sp + "\n" + st + "\n" + se + "\n/" + req->account + "/" + ToLower(tn) + "\n" + si + "\n" +
          sv + "\n" + spk + "\n" + srk + "\n" + epk + "\n" + erk;
  }
  if (tn.empty() || !MatchesAnyKey(*account, sts, sig)) {
    return AuthFailed("Signature did not match. String to sign used was " + sts);
  }
  if (!si.empty()) {
    if (auto err = ApplyStoredPolicy(ctx, req, tn, si, &sp, &st, &se)) return err;
    // Signed, but what it grants is in the table's stored policies: the
    // request goes on where they may be read (scheduler.cc), and grants
    // nothing until then.
    if ((req->missing_documents & kMissingAcl) != 0) {
      g.kind = AuthGrant::Kind::kServiceSas;
      return std::nullopt;
    }
  }
  if (sp.empty()) return AuthFailed("Signed permissions are missing.");
  if (auto err = CheckSasCommon(ctx, *req, st, se, spr, sip)) return err;
  g.kind = AuthGrant::Kind::kServiceSas;
  g.permissions = sp;
  g.table = ToLower(tn);
  if (spk_field) g.spk = std::move(spk);
  if (srk_field) g.srk = std::move(srk);
  if (epk_field) g.epk = std::move(epk);
  if (erk_field) g.erk = std::move(erk);
  return std::nullopt;
}

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
