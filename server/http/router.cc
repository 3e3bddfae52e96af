#include "server/http/router.h"

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <chrono>
#include <memory>
#include <utility>
#include <vector>

#include "server/devtools/faults.h"
#include "server/devtools/logger.h"
#include "server/devtools/metrics.h"
#include "server/formats/ascii.h"
#include "server/formats/guid.h"
#include "server/formats/http_date.h"
#include "server/formats/url.h"
#include "server/http/scheduler.h"
#include "server/operations/admin.h"
#include "server/operations/operations.h"
#include "server/protocol/document_cache.h"
#include "server/protocol/routes.h"
#include "server/runtime/blocking_pool.h"
#include "server/runtime/response_budget.h"

namespace cerulean::server {

namespace {

bool IsIpv4(std::string_view host) {
  if (host.empty()) return false;
  for (char c : host) {
    if (!((c >= '0' && c <= '9') || c == '.')) return false;
  }
  return true;
}

// Path-style iff the host is an IP address, has no dot, or is
// host.docker.internal (spec README §2.1).
bool IsPathStyle(std::string_view host) {
  if (host.empty() || host.front() == '[') return true;
  size_t colon = host.rfind(':');
  if (colon != std::string_view::npos) host = host.substr(0, colon);
  return IsIpv4(host) || host.find('.') == std::string_view::npos ||
         IEquals(host, "host.docker.internal");
}

std::string_view HostName(std::string_view host) {
  if (!host.empty() && host.front() == '[') return host;
  size_t colon = host.rfind(':');
  return colon == std::string_view::npos ? host : host.substr(0, colon);
}

bool IsVersionString(std::string_view v) {
  if (v.size() != 10 || v[4] != '-' || v[7] != '-') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (v[i] < '0' || v[i] > '9') return false;
  }
  return true;
}

// True iff errors raised before content negotiation (routing, version,
// authentication) are XML: the request names a version before 2013-08-15,
// or one before 2015-12-11 and asks for Atom (errors-limits.md §1.2).
// Requests at current versions return after one comparison.
bool EarlyXmlErrors(const HttpRequest& http, const QueryParams& query) {
  std::string_view version = Header(http, "x-ms-version");
  if (version.empty() || version >= kFirstAtomlessVersion) return false;
  if (version < kFirstJsonVersion) return true;
  Metadata level = Metadata::kMinimal;
  bool atom = false;
  static_cast<void>(NegotiateFormat(query.Get("$format").value_or(""), Header(http, "Accept"),
                                    version, &level, &atom));
  return atom;
}

// Fills method (with X-HTTP-Method tunnelling, operations.md §4.8).
std::optional<ErrorReply> ResolveMethod(const HttpRequest& http, std::string* method) {
  *method = std::string(http.method_string());
  size_t count = 0;
  std::string_view value;
  for (const auto& field : http) {
    if (IEquals(field.name_string(), "X-HTTP-Method")) {
      ++count;
      value = Trim(field.value());
    }
  }
  if (count == 0) return std::nullopt;
  if (count > 1 || value.find(',') != std::string_view::npos)
    return ErrorReply(AzureError::kXMethodIncorrectCount);
  std::string_view tunnelled = *method;
  if (auto err = TunnelMethod(value, &tunnelled)) return err;
  *method = std::string(tunnelled);
  return std::nullopt;
}

std::optional<HttpResponse> Admit(const ServerContext& ctx, Request& req);

// Everything up to dispatch, from the request's head: the response of the
// first failing step, or nullopt when the request is ready for Dispatch
// (its body read, if its operation needs one; documents the caches lacked
// read: Request::missing_documents).
std::optional<HttpResponse> Prepare(const ServerContext& ctx, Request& req) {
  HttpRequest& http = req.http;
  std::string_view target = http.target();
  std::string_view encoded_path;
  // Most targets are plain "/path?k=v&..." and are split directly, without
  // the cost of Boost.URL's validation; Boost.URL parses the rest.
  thread_local std::vector<std::pair<std::string_view, std::string_view>> plain_params;
  if (SplitPlainOriginForm(target, &encoded_path, &plain_params)) {
    req.query.Reserve(plain_params.size(), target.size());
    for (const auto& [key, value] : plain_params) {
      if (!req.query.AddEncoded(key, value))
        return ErrorResponse(req, ErrorReply(AzureError::kInvalidQueryParameterValue));
    }
  } else {
    auto parsed = boost::urls::parse_origin_form(target);
    if (!parsed) {
      auto absolute = boost::urls::parse_absolute_uri(target);
      if (!absolute) return ErrorResponse(req, ErrorReply(AzureError::kInvalidUri));
      parsed = boost::urls::parse_origin_form(std::string_view(
          absolute->encoded_resource().data(), absolute->encoded_resource().size()));
      if (!parsed) return ErrorResponse(req, ErrorReply(AzureError::kInvalidUri));
    }
    boost::urls::url_view url = *parsed;
    req.query.Reserve(url.encoded_params().size(), target.size());
    for (auto param : url.encoded_params()) {
      if (!req.query.AddEncoded(param.key, param.value))
        return ErrorResponse(req, ErrorReply(AzureError::kInvalidQueryParameterValue));
    }
    encoded_path = std::string_view(url.encoded_path().data(), url.encoded_path().size());
  }

  req.raw_path = std::string(encoded_path);

  if (encoded_path.starts_with("/_")) {
    req.admin = true;
    return PrepareAdmin(ctx, req);
  }
  req.xml_errors = EarlyXmlErrors(http, req.query);

  std::string_view host = Header(http, "Host");
  if (host.empty() && http.version() >= 11)
    return ErrorResponse(req, ErrorReply(AzureError::kHostInformationNotPresent));
  const std::string_view scheme = ctx.options.https ? "https://" : "http://";
  std::string_view resource_raw;
  std::string account;
  if (ctx.options.force_path_style || IsPathStyle(host)) {
    std::string_view rest = encoded_path.substr(encoded_path.empty() ? 0 : 1);
    size_t slash = rest.find('/');
    std::string_view segment = rest.substr(0, slash);
    auto decoded = PercentDecode(segment);
    if (!decoded || decoded->empty())
      return ErrorResponse(req, ErrorReply(AzureError::kInvalidUri));
    account = std::move(*decoded);
    resource_raw = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
    req.base.reserve(scheme.size() + host.size() + 1 + segment.size());
    req.base.assign(scheme).append(host).append("/").append(segment);
  } else {
    std::string_view name = HostName(host);
    account = std::string(name.substr(0, name.find('.')));
    resource_raw = encoded_path;
    req.base.reserve(scheme.size() + host.size());
    req.base.assign(scheme).append(host);
  }
  if (account.ends_with("-secondary")) {
    req.secondary = true;
    account.resize(account.size() - std::string_view("-secondary").size());
  }
  req.account = std::move(account);
  if (ctx.accounts.Find(req.account) == nullptr) {
    return ErrorResponse(req, ErrorReply(AzureError::kAuthenticationFailed));
  }

  // Answered from the account's CORS rules alone, whatever the resource.
  if (http.method() == http::verb::options) {
    req.op = Operation::kPreflight;
    return std::nullopt;
  }

  // Decoded into this thread's buffer: ParseResourcePath copies the parts
  // it keeps.
  thread_local std::string decoded_resource;
  decoded_resource.resize(resource_raw.size());
  char* const decoded_end = PercentDecodeTo(decoded_resource.data(), resource_raw, false);
  if (decoded_end == nullptr) return ErrorResponse(req, ErrorReply(AzureError::kInvalidUri));
  decoded_resource.resize(static_cast<size_t>(decoded_end - decoded_resource.data()));
  if (auto err = ParseResourcePath(decoded_resource, &req.path)) return ErrorResponse(req, *err);
  if (auto err = ResolveMethod(http, &req.method)) return ErrorResponse(req, *err);
  const Route* route = nullptr;
  if (auto err = FindRoute(RouteKey{req.path.kind, req.method, req.query.Get("comp"),
                                    req.query.Get("restype"), http.find("If-Match") != http.end()},
                           &route)) {
    return ErrorResponse(req, *err);
  }
  req.op = route->op;

  // Version.
  std::string_view version = Header(http, "x-ms-version");
  if (!version.empty()) {
    if (!IsVersionString(version) || version < "2009-09-19" ||
        (!ctx.options.skip_api_version_check && version > kNewestVersion)) {
      if (!ctx.options.skip_api_version_check || !IsVersionString(version)) {
        return ErrorResponse(req, ErrorReply(AzureError::kInvalidHeaderValue));
      }
    }
    req.version = std::string(version);
  }

  return Admit(ctx, req);
}

// The steps of preparing a routed request from authentication on:
// credentials, authorization, format negotiation, the body's Content-Type.
// Returns the error answer, or nullopt. Run again on the blocking pool for
// a request whose stored access policies were missing (kMissingAcl), with
// req.may_load_documents set (AdmitLater).
std::optional<HttpResponse> Admit(const ServerContext& ctx, Request& req) {
  HttpRequest& http = req.http;
  const Route* route = &RouteOf(req.op);
  // Authentication and authorization.
  if (auto err = Authenticate(ctx, &req)) return ErrorResponse(req, *err);
  // A SAS whose stored policy is not cached grants nothing yet: the rest
  // runs again once the policy was read (scheduler.cc).
  if ((req.missing_documents & kMissingAcl) != 0) return std::nullopt;
  if (req.version.empty()) req.version = std::string(kNewestVersion);
  if (req.secondary && route->write) {
    return ErrorResponse(req, ErrorReply(AzureError::kInsufficientAccountPermissions));
  }
  std::string_view table = req.path.kind == ResourceKind::kTable ||
                                   req.path.kind == ResourceKind::kEntities ||
                                   req.path.kind == ResourceKind::kEntity
                               ? std::string_view(req.path.table)
                               : std::string_view();
  if (auto err = Authorize(req, req.op, table)) return ErrorResponse(req, *err);

  // Content negotiation. Errors are XML for Atom and for versions that
  // predate JSON (errors-limits.md §1.2).
  std::string_view format_param = req.query.Get("$format").value_or("");
  auto negotiated =
      NegotiateFormat(format_param, Header(http, "Accept"), req.version, &req.format, &req.atom);
  req.xml_errors = req.atom || req.version < kFirstJsonVersion;
  if (negotiated) {
    // Operations without an OData body succeed whatever was asked for.
    if (route->response == ResponseFormat::kOData) {
      req.xml_errors |= negotiated->error == AzureError::kAtomFormatNotSupported;
      return ErrorResponse(req, *negotiated);
    }
    req.format = Metadata::kMinimal;
  }
  std::string_view content_type = Header(http, "Content-Type");
  if (!content_type.empty() && (content_type.find("atom+xml") != std::string_view::npos)) {
    if (req.version >= kFirstAtomlessVersion) {
      req.xml_errors = true;
      return ErrorResponse(req, ErrorReply(AzureError::kAtomFormatNotSupported));
    }
    req.atom_body = true;
  }
  // OData bodies must say they are JSON, or Atom before 2015-12-11
  // (operations.md §0, payload.md §1.2).
  if (route->body == BodyFormat::kOData) {
    std::string_view media = Trim(content_type.substr(0, content_type.find(';')));
    if (!IEquals(media, req.atom_body ? "application/atom+xml" : "application/json")) {
      return ErrorResponse(req, ErrorReply(AzureError::kInvalidInput));
    }
    if (!req.atom_body && req.version < kFirstJsonVersion) {
      return ErrorResponse(req, ErrorReply(AzureError::kJsonFormatNotSupported));
    }
  }
  return std::nullopt;
}

// True iff prepared `req` reads its body: its route's body format says so,
// or it is PUT /_faults (the rules).
bool NeedsBody(const Request& req) {
  if (req.admin) return req.op == Operation::kFaults && req.http.method() == http::verb::put;
  if (req.op == Operation::kPreflight) return false;
  return RouteOf(req.op).body != BodyFormat::kNone;
}

// Takes the account's CORS rules, which every answer's headers depend on,
// from the cache; marks them missing when it lacks them.
void TakeCorsRules(const ServerContext& ctx, Request& req) {
  if (req.account.empty()) return;
  if (FindCors(ctx.documents, req.account, &req.cors)) return;
  if (req.may_load_documents) {
    req.cors = LoadCors(ctx.documents, *ctx.store, req.account);
  } else {
    req.missing_documents |= kMissingCors;
  }
}

// Reads what the caches lacked when `req` was prepared, on the blocking
// pool (or at once without one), authenticates it again from the start if
// its stored access policies were missing, then hands it to the scheduler
// there (AnswerLater), or its refusal to then.done.
void AdmitLater(const ServerContext& ctx, Request&& req,
                std::chrono::steady_clock::time_point started, Continuation then, bool faults) {
  struct Pending {
    Request req;
    std::chrono::steady_clock::time_point started;
    Continuation then;
  };
  auto p = std::make_shared<Pending>(Pending{std::move(req), started, std::move(then)});
  auto step = [&ctx, p, faults] {
    Request& req = p->req;
    std::optional<HttpResponse> refused;
    try {
      req.may_load_documents = true;
      const unsigned missing = std::exchange(req.missing_documents, 0u);
      if ((missing & kMissingCors) != 0) {
        req.cors = LoadCors(ctx.documents, *ctx.store, req.account);
      }
      if ((missing & kMissingAcl) != 0) {
        req.grant = AuthGrant{};
        refused = Admit(ctx, req);
      }
    } catch (const std::exception&) {
      refused = ErrorResponse(req, ErrorReply(AzureError::kInternalError));
    }
    if (!refused) {
      return AnswerLater(ctx, std::move(req), p->started, std::move(p->then), faults, true);
    }
    Finish(ctx, req, *refused, p->started);
    Completion done = std::move(p->then.done);
    done(std::move(*refused));
  };
  if (ctx.blocking_pool == nullptr) return step();
  ctx.blocking_pool->Post(std::move(step));
}

// Finishes `res`, the answer to the exchange's request, and hands it to
// the owner on this thread; or on the pool once the account's CORS rules
// were read (then the answer comes later).
void Answered(const ServerContext& ctx, Exchange& exchange, HttpResponse&& res) {
  Request& req = *exchange.req;
  if ((req.missing_documents & kMissingCors) != 0) {
    FinishLater(ctx, std::move(req), exchange.started, exchange.AnswerLater(), std::move(res));
    exchange.req.reset();
    return;
  }
  Finish(ctx, req, res, exchange.started);
  exchange.req.reset();
  exchange.Answer(std::move(res));  // last: the owner may go on with its next request
}

// Runs the prepared request (its body read if it needs one) where its route
// says.
void Proceed(const ServerContext& ctx, Exchange& exchange) {
  Request& req = *exchange.req;
  std::optional<HttpResponse> res;
  bool faults = false;
  try {
    // The reserved /_ endpoints never meet a fault.
    faults = FaultsArmed(ctx) && !req.admin;
    if (AnswersNow(ctx, req, faults)) res.emplace(AnswerNow(ctx, req));
  } catch (const std::exception&) {
    res.emplace(ErrorResponse(req, ErrorReply(AzureError::kInternalError)));
  }
  if (res) return Answered(ctx, exchange, std::move(*res));
  if (req.missing_documents != 0) {
    AdmitLater(ctx, std::move(req), exchange.started, exchange.AnswerLater(), faults);
  } else {
    AnswerLater(ctx, std::move(req), exchange.started, exchange.AnswerLater(), faults, false);
  }
  exchange.req.reset();
}

// The most the body of admitted `req` may hold (0: kMaxBodyBytes): a `$batch` whose SAS grants no
// write holds one retrieve at most (kReadOnlyBatchBodyBytes).
size_t BodyLimit(const Request& req) {
  if (req.op != Operation::kBatch) return 0;
  const AuthGrant::Kind kind = req.grant.kind;
  if (kind != AuthGrant::Kind::kAccountSas && kind != AuthGrant::Kind::kServiceSas) return 0;
  const std::string& sp = req.grant.permissions;
  const bool writes = sp.find_first_of("aud") != std::string::npos;
  return writes ? 0 : kReadOnlyBatchBodyBytes;
}

// Whose share of the response budget an admitted request counts against
// (response_budget.h): its SAS (a client that holds one can make no
// other); the account's keys from one address (every application of an
// account signs with them); for the reserved endpoints, its address.
// Written into `out`, whose buffer is reused: a connection's requests from
// one client cost no allocation.
void ClientOf(const Request& req, std::string* out) {
  out->clear();
  const AuthGrant::Kind kind = req.grant.kind;
  if (req.admin) {
    out->append("peer:").append(req.peer_address);
  } else if (kind == AuthGrant::Kind::kAccountSas || kind == AuthGrant::Kind::kServiceSas) {
    out->append("sas:").append(req.account).push_back(':');
    out->append(req.query.Get("sig").value_or(""));
  } else {
    out->append("key:").append(req.account).push_back('@');
    out->append(req.peer_address);
  }
}

}  // namespace

void ServeRequest(const ServerContext& ctx, Exchange& exchange) {
  const Arrival& arrival = exchange.arrival();
  exchange.started = std::chrono::steady_clock::now();
  Request& req = exchange.req.emplace(exchange.http());
  req.request_id = NewRequestId();
  req.peer_address = arrival.peer_address;
  req.in_flight = arrival.in_flight;
  req.response_hold = arrival.response_hold;
  // Without a pool, everything runs (and may wait) on the calling thread.
  req.may_load_documents = ctx.blocking_pool == nullptr;
  std::optional<HttpResponse> refused;
  try {
    refused = Prepare(ctx, req);
    TakeCorsRules(ctx, req);
  } catch (const std::exception&) {
    refused = ErrorResponse(req, ErrorReply(AzureError::kInternalError));
  }
  if (refused) return Answered(ctx, exchange, std::move(*refused));
  if (req.response_hold != nullptr) {
    thread_local std::string client;
    ClientOf(req, &client);
    req.response_hold->SetClient(client);
  }
  if (arrival.body_pending && NeedsBody(req)) return exchange.NeedBody(BodyLimit(req));
  Proceed(ctx, exchange);
}

void ServeBody(const ServerContext& ctx, Exchange& exchange) { Proceed(ctx, exchange); }

void ServeError(const ServerContext& ctx, Exchange& exchange, const ErrorReply& error) {
  // Documents still missing are no longer needed, except the CORS rules of
  // the answer's headers.
  exchange.req->missing_documents &= kMissingCors;
  Answered(ctx, exchange, ErrorResponse(*exchange.req, error));
}

}  // namespace cerulean::server
