// Account SAS and service (table) SAS (auth.h): the SAS fields of the query
// string, the string to sign, expiry, start, protocol and source IP, and the
// stored access policy a service SAS names.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "server/formats/acl_xml.h"
#include "server/formats/ascii.h"
#include "server/protocol/auth.h"
#include "server/protocol/auth_internal.h"
#include "server/protocol/document_cache.h"
#include "server/protocol/request.h"
#include "storage/edm_text.h"

namespace cerulean::server {

namespace {

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

}  // namespace

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
    // Composed in one buffer, this thread's: the chain of + that composed
    // it made a string per field.
    thread_local std::string sts;
    sts.clear();
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

}  // namespace cerulean::server
