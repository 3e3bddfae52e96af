#include "server/protocol/router.h"

#include <boost/asio/steady_timer.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "odata/query.h"
#include "server/admin/faults.h"
#include "server/admin/logger.h"
#include "server/admin/metrics.h"
#include "server/formats/ascii.h"
#include "server/formats/guid.h"
#include "server/formats/http_date.h"
#include "server/formats/url.h"
#include "server/operations/admin.h"
#include "server/operations/operations.h"

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

struct Route {
  Operation op;
  bool has_body_format;  // answers with an OData body
};

// Maps (verb, resource) to an operation (errors-limits.md §3.1).
std::optional<ErrorReply> RouteRequest(Request* req, const HttpRequest& http) {
  const ResourcePath& p = req->path;
  const std::string& m = req->method;
  auto not_allowed = ErrorReply(AzureError::kMethodNotAllowed);
  auto comp = req->query.Get("comp");
  auto restype = req->query.Get("restype");
  (void)http;
  switch (p.kind) {
    case ResourceKind::kService:
      if (restype == "service" && comp == "properties") {
        if (m == "GET") {
          req->op = Operation::kGetServiceProperties;
          return std::nullopt;
        }
        if (m == "PUT") {
          req->op = Operation::kSetServiceProperties;
          return std::nullopt;
        }
        return not_allowed;
      }
      if (restype == "service" && comp == "stats") {
        if (m == "GET") {
          req->op = Operation::kGetServiceStats;
          return std::nullopt;
        }
        return not_allowed;
      }
      return ErrorReply(AzureError::kInvalidQueryParameterValue);
    case ResourceKind::kTables:
      if (m == "GET") {
        req->op = Operation::kQueryTables;
        return std::nullopt;
      }
      if (m == "POST") {
        req->op = Operation::kCreateTable;
        return std::nullopt;
      }
      return not_allowed;
    case ResourceKind::kTable:
      if (m == "GET") {
        req->op = Operation::kGetTable;
        return std::nullopt;
      }
      if (m == "DELETE") {
        req->op = Operation::kDeleteTable;
        return std::nullopt;
      }
      return not_allowed;
    case ResourceKind::kBatch:
      if (m == "POST") {
        req->op = Operation::kBatch;
        return std::nullopt;
      }
      return not_allowed;
    case ResourceKind::kEntities:
      if (comp) {
        if (*comp != "acl") return ErrorReply(AzureError::kInvalidQueryParameterValue);
        if (m == "GET") {
          req->op = Operation::kGetTableAcl;
          return std::nullopt;
        }
        if (m == "PUT") {
          req->op = Operation::kSetTableAcl;
          return std::nullopt;
        }
        return not_allowed;
      }
      if (m == "GET") {
        req->op = Operation::kQueryEntities;
        return std::nullopt;
      }
      if (m == "POST") {
        req->op = Operation::kInsertEntity;
        return std::nullopt;
      }
      return not_allowed;
    case ResourceKind::kEntity: {
      bool has_if_match = http.find("If-Match") != http.end();
      if (m == "GET") {
        req->op = Operation::kGetEntity;
        return std::nullopt;
      }
      if (m == "PUT") {
        req->op = has_if_match ? Operation::kUpdateEntity : Operation::kInsertOrReplace;
        return std::nullopt;
      }
      if (m == "MERGE" || m == "PATCH") {
        req->op = has_if_match ? Operation::kMergeEntity : Operation::kInsertOrMerge;
        return std::nullopt;
      }
      if (m == "DELETE") {
        req->op = Operation::kDeleteEntity;
        return std::nullopt;
      }
      return not_allowed;
    }
  }
  return not_allowed;
}

bool ReturnsODataBody(Operation op) {
  switch (op) {
    case Operation::kQueryTables:
    case Operation::kGetTable:
    case Operation::kCreateTable:
    case Operation::kQueryEntities:
    case Operation::kGetEntity:
    case Operation::kInsertEntity:
      return true;
    default:
      return false;
  }
}

// True iff the request body of `op` is an OData JSON document.
bool HasODataBody(Operation op) {
  switch (op) {
    case Operation::kCreateTable:
    case Operation::kInsertEntity:
    case Operation::kUpdateEntity:
    case Operation::kMergeEntity:
    case Operation::kInsertOrReplace:
    case Operation::kInsertOrMerge:
      return true;
    default:
      return false;
  }
}

bool IsWrite(Operation op) {
  switch (op) {
    case Operation::kCreateTable:
    case Operation::kDeleteTable:
    case Operation::kBatch:
    case Operation::kSetTableAcl:
    case Operation::kSetServiceProperties:
      return true;
    default:
      return IsEntityWrite(op);
  }
}

OperationResult Dispatch(const ServerContext& ctx, Request& req) {
  if (req.admin) return HandleAdmin(ctx, req, req.raw_path);
  switch (req.op) {
    case Operation::kQueryTables:
      return QueryTables(ctx, req);
    case Operation::kGetTable:
      return GetTable(ctx, req);
    case Operation::kCreateTable:
      return CreateTable(ctx, req);
    case Operation::kDeleteTable:
      return DeleteTable(ctx, req);
    case Operation::kGetTableAcl:
      return GetTableAcl(ctx, req);
    case Operation::kSetTableAcl:
      return SetTableAcl(ctx, req);
    case Operation::kQueryEntities:
      return QueryEntities(ctx, req);
    case Operation::kGetEntity:
      return GetEntity(ctx, req);
    case Operation::kInsertEntity:
    case Operation::kUpdateEntity:
    case Operation::kMergeEntity:
    case Operation::kDeleteEntity:
    case Operation::kInsertOrReplace:
    case Operation::kInsertOrMerge:
      return WriteEntity(ctx, req);
    case Operation::kBatch:
      return Batch(ctx, req);
    case Operation::kGetServiceProperties:
      return GetServiceProperties(ctx, req);
    case Operation::kSetServiceProperties:
      return SetServiceProperties(ctx, req);
    case Operation::kGetServiceStats:
      return GetServiceStats(ctx, req);
    case Operation::kPreflight:
    case Operation::kResetAccount:
    case Operation::kFaults:
    case Operation::kSnapshots:
      break;
  }
  return ErrorResponse(req, ErrorReply(AzureError::kNotImplemented));
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
  if (*method != "POST") return ErrorReply(AzureError::kXMethodNotUsingPost);
  if (value != "MERGE" && value != "PUT" && value != "DELETE" && value != "PATCH") {
    return ErrorReply(AzureError::kXMethodIncorrectValue);
  }
  *method = std::string(value);
  return std::nullopt;
}

// Everything up to dispatch: the response of the first failing step, or
// nullopt when the request is ready for Dispatch.
std::optional<HttpResponse> Prepare(const ServerContext& ctx, Request& req) {
  HttpRequest& http = req.http;
  std::string_view target = http.target();
  std::string_view encoded_path;
  // Most targets are plain "/path?k=v&..." and are split directly; Boost.URL
  // parses the rest (validating them cost ~8 % of a point read, callgrind).
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
    return std::nullopt;
  }
  req.xml_errors = EarlyXmlErrors(http, req.query);

  std::string_view host = Header(http, "Host");
  if (host.empty() && http.version() >= 11)
    return ErrorResponse(req, ErrorReply(AzureError::kHostInformationNotPresent));
  std::string scheme = ctx.options.https ? "https://" : "http://";
  std::string_view resource_raw;
  std::string account;
  if (ctx.options.force_path_style || IsPathStyle(host)) {
    std::string_view rest = encoded_path.substr(encoded_path.empty() ? 0 : 1);
    size_t slash = rest.find('/');
    std::string_view segment = rest.substr(0, slash);
    auto decoded = PercentDecode(segment);
    if (!decoded || decoded->empty())
      return ErrorResponse(req, ErrorReply(AzureError::kInvalidUri));
    account = *decoded;
    resource_raw = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
    req.base = scheme + std::string(host) + "/" + std::string(segment);
  } else {
    std::string_view name = HostName(host);
    account = std::string(name.substr(0, name.find('.')));
    resource_raw = encoded_path;
    req.base = scheme + std::string(host);
  }
  if (account.ends_with("-secondary")) {
    req.secondary = true;
    account.resize(account.size() - std::string_view("-secondary").size());
  }
  req.account = std::move(account);
  if (ctx.accounts.Find(req.account) == nullptr) {
    return ErrorResponse(req, ErrorReply(AzureError::kAuthenticationFailed));
  }

  if (http.method() == http::verb::options) return Preflight(ctx, req);

  auto decoded_resource = PercentDecode(resource_raw);
  if (!decoded_resource) return ErrorResponse(req, ErrorReply(AzureError::kInvalidUri));
  if (auto err = ParseResourcePath(*decoded_resource, &req.path)) return ErrorResponse(req, *err);
  if (auto err = ResolveMethod(http, &req.method)) return ErrorResponse(req, *err);
  if (auto err = RouteRequest(&req, http)) return ErrorResponse(req, *err);

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

  // Authentication and authorization.
  if (auto err = Authenticate(ctx, &req)) return ErrorResponse(req, *err);
  if (req.version.empty()) req.version = std::string(kNewestVersion);
  if (req.secondary && IsWrite(req.op)) {
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
    if (ReturnsODataBody(req.op)) {
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
  if (HasODataBody(req.op)) {
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

// True iff the prepared request is dispatched on the calling thread: point
// reads, queries (which answer there only when the page is short, and
// otherwise leave a PendingRead for the blocking pool), writes (through
// Store::ApplyAsync) and the health check. Everything else may scan or
// commit on its own.
bool RunsInline(const Request& req) {
  if (req.admin) return req.raw_path == "/_health";
  return req.op == Operation::kGetEntity || req.op == Operation::kQueryEntities ||
         req.op == Operation::kBatch || IsEntityWrite(req.op);
}

// Runs `step`, turning an exception into 500 InternalError.
template <typename Step>
HttpResponse Guarded(const Request& req, Step&& step) {
  try {
    return step();
  } catch (const std::exception&) {
    return ErrorResponse(req, ErrorReply(AzureError::kInternalError));
  }
}

// The response of an operation's result, applying its write or running its
// read synchronously.
HttpResponse ResolveNow(const ServerContext& ctx, Request& req, OperationResult result) {
  if (auto* res = std::get_if<HttpResponse>(&result)) return std::move(*res);
  if (auto* read = std::get_if<PendingRead>(&result)) return read->run(ctx, req);
  PendingWrite& write = std::get<PendingWrite>(result);
  storage::ApplyOutcome outcome;
  outcome.status =
      ctx.store->Apply(req.account, write.table, write.ops, &outcome.result, &outcome.error);
  outcome.ops = std::move(write.ops);
  return write.answer(req, outcome);
}

void FinishResponse(const ServerContext& ctx, const Request& req, HttpResponse& res,
                    bool keep_alive) {
  res.set("x-ms-request-id", req.request_id);
  res.set("x-ms-version", req.version.empty() ? std::string(kNewestVersion) : req.version);
  res.set(http::field::date, HttpDateNow());
  res.set(http::field::server, "Cerulean-Table/" CERULEAN_VERSION);
  res.set(http::field::cache_control, "no-cache");
  res.set("X-Content-Type-Options", "nosniff");
  std::string_view client_id = Header(req.http, "x-ms-client-request-id");
  if (!client_id.empty()) res.set("x-ms-client-request-id", client_id);
  ApplyCorsHeaders(ctx, req, res);
  res.keep_alive(keep_alive);
  res.prepare_payload();
  // HEAD: GET's headers, Content-Length included, without the body.
  if (req.http.method() == http::verb::head) res.body().clear();
}

// Everything after the answer: common headers, metrics, access log.
void Finish(const ServerContext& ctx, const Request& req, HttpResponse& res,
            std::chrono::steady_clock::time_point started) {
  FinishResponse(ctx, req, res, req.http.keep_alive());
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  if (ctx.metrics) ctx.metrics->Record(req, res.result_int(), ms);
  if (ctx.logger) ctx.logger->Access(req, res, ms);
}

// A request answered by HandleRequestAsync, alive until its completion ran.
struct AsyncRequest {
  AsyncRequest(HttpRequest& http, boost::asio::any_io_executor ex, Completion d)
      : req(http), executor(std::move(ex)), done(std::move(d)) {}
  Request req;
  boost::asio::any_io_executor executor;
  Completion done;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  bool drop_answer = false;  // FaultAction::kDropAfter: the answer is logged, not sent
};

void Complete(const ServerContext& ctx, AsyncRequest& a, HttpResponse res) {
  Finish(ctx, a.req, res, a.started);
  if (a.drop_answer) MarkConnectionDrop(res);
  Completion done = std::move(a.done);
  done(std::move(res));  // last: the request may be gone after it
}

// Answers of writes that the store's thread holds back until the last
// callback of its run (ApplyOutcome::more_in_batch), then hands to each I/O
// thread at once. Posting each answer on its own woke the I/O thread once
// per write: on a shared core it preempted the store's thread at every post,
// ~2 context switches and an epoll round per insert (perf sched timehist).
struct HeldAnswer {
  boost::asio::any_io_executor executor;
  std::function<void()> run;
};
thread_local std::vector<HeldAnswer> held_answers;

void HandOn(boost::asio::any_io_executor executor, std::function<void()> run, bool more) {
  if (!more && held_answers.empty()) {
    boost::asio::post(executor, std::move(run));
    return;
  }
  held_answers.push_back(HeldAnswer{std::move(executor), std::move(run)});
  if (more) return;
  std::vector<HeldAnswer> held;
  held.swap(held_answers);
  // One post per executor, in the order the writes were committed.
  for (size_t i = 0; i < held.size(); ++i) {
    if (!held[i].run) continue;
    auto runs = std::make_shared<std::vector<std::function<void()>>>();
    for (size_t j = i; j < held.size(); ++j) {
      if (held[j].run && held[j].executor == held[i].executor)
        runs->push_back(std::move(held[j].run));
    }
    boost::asio::post(held[i].executor, [runs] {
      for (auto& run : *runs) run();
    });
  }
}

}  // namespace

std::optional<ErrorReply> ParseResourcePath(std::string_view s, ResourcePath* out) {
  const ErrorReply invalid_uri(AzureError::kInvalidUri);
  if (s.empty() || s == "/") {
    out->kind = ResourceKind::kService;
    return std::nullopt;
  }
  if (s.front() == '/') s.remove_prefix(1);
  // One trailing slash is accepted, as Azure does (`POST /account/Tables/`).
  if (s.size() > 1 && s.back() == '/') s.remove_suffix(1);
  size_t paren = s.find('(');
  std::string_view name = s.substr(0, paren);
  if (name.empty() || name.find('/') != std::string_view::npos) return invalid_uri;
  if (paren == std::string_view::npos) {
    if (name == "$batch") {
      out->kind = ResourceKind::kBatch;
    } else if (name == "Tables") {
      out->kind = ResourceKind::kTables;
    } else {
      out->kind = ResourceKind::kEntities;
      out->table = std::string(name);
    }
    return std::nullopt;
  }
  if (s.back() != ')')
    return ErrorReply(AzureError::kInvalidInput, "Bad Request - Error in query syntax.");
  std::string_view inner = s.substr(paren + 1, s.size() - paren - 2);
  if (name == "Tables") {
    if (inner.empty()) {
      out->kind = ResourceKind::kTables;
      return std::nullopt;
    }
    if (inner.size() < 2 || inner.front() != '\'' || inner.back() != '\'') return invalid_uri;
    out->kind = ResourceKind::kTable;
    out->table = std::string(inner.substr(1, inner.size() - 2));
    return std::nullopt;
  }
  out->table = std::string(name);
  if (inner.empty()) {
    out->kind = ResourceKind::kEntities;
    return std::nullopt;
  }
  auto keys = odata::ParseKeyPath(inner);
  if (!keys.ok())
    return ErrorReply(AzureError::kInvalidInput, "Bad Request - Error in query syntax.");
  out->kind = ResourceKind::kEntity;
  out->partition_key = std::move(keys->partition_key);
  out->row_key = std::move(keys->row_key);
  return ValidateUrlKeys(*out);
}

std::optional<ErrorReply> NegotiateFormat(std::string_view format_param, std::string_view accept,
                                          std::string_view version, Metadata* out, bool* atom) {
  *out = Metadata::kMinimal;
  *atom = false;
  auto choose_atom = [&]() -> std::optional<ErrorReply> {
    if (version >= kFirstAtomlessVersion) return ErrorReply(AzureError::kAtomFormatNotSupported);
    *atom = true;
    return std::nullopt;
  };
  std::string_view value = format_param.empty() ? accept : format_param;
  // No Accept means Atom, the documented default (payload.md §1.1).
  if (value.empty()) return choose_atom();
  // The first recognized media range decides.
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    if (comma == std::string_view::npos) comma = value.size();
    std::string_view range = Trim(value.substr(start, comma - start));
    start = comma + 1;
    size_t semi = range.find(';');
    std::string_view type = Trim(range.substr(0, semi));
    std::string odata;
    while (semi != std::string_view::npos) {
      size_t next = range.find(';', semi + 1);
      std::string_view param =
          Trim(range.substr(semi + 1, next == std::string_view::npos ? next : next - semi - 1));
      size_t eq = param.find('=');
      if (eq != std::string_view::npos && IEquals(Trim(param.substr(0, eq)), "odata")) {
        odata = ToLower(Trim(param.substr(eq + 1)));
      }
      semi = next;
    }
    if (IEquals(type, "application/json") || IEquals(type, "json")) {
      if (odata == "verbose") return ErrorReply(AzureError::kJsonVerboseFormatNotSupported);
      if (odata.empty() || odata == "minimalmetadata")
        *out = Metadata::kMinimal;
      else if (odata == "nometadata")
        *out = Metadata::kNone;
      else if (odata == "fullmetadata")
        *out = Metadata::kFull;
      else
        continue;
      if (version < kFirstJsonVersion) return ErrorReply(AzureError::kJsonFormatNotSupported);
      return std::nullopt;
    }
    if (IEquals(type, "application/atom+xml") || IEquals(type, "application/xml") ||
        IEquals(type, "atom")) {
      return choose_atom();
    }
    // Any type: the service's default while it had Atom, JSON after.
    if (type == "*/*" || IEquals(type, "application/*")) {
      if (version < kFirstAtomlessVersion) *atom = true;
      return std::nullopt;
    }
  }
  return ErrorReply(AzureError::kMediaTypeNotSupported);
}

HttpResponse HandleRequest(const ServerContext& ctx, HttpRequest& http,
                           const std::string& peer_address) {
  auto started = std::chrono::steady_clock::now();
  Request req(http);
  req.request_id = NewRequestId();
  req.peer_address = peer_address;
  HttpResponse res = Guarded(req, [&] {
    if (auto early = Prepare(ctx, req)) return std::move(*early);
    return ResolveNow(ctx, req, Dispatch(ctx, req));
  });
  Finish(ctx, req, res, started);
  return res;
}

namespace {

// Commits a prepared write without blocking: the store commits it with
// whatever else is queued, and the answer is built back on the request's
// executor.
void CommitAsync(const ServerContext& ctx, const std::shared_ptr<AsyncRequest>& a,
                 PendingWrite& write) {
  const std::string& account = a->req.account;
  ctx.store->ApplyAsync(account, std::move(write.table), std::move(write.ops),
                        [&ctx, a, answer = std::move(write.answer)](storage::ApplyOutcome outcome) {
                          bool more = outcome.more_in_batch;
                          HandOn(
                              a->executor,
                              [&ctx, a, answer, outcome = std::move(outcome)] {
                                Complete(ctx, *a,
                                         Guarded(a->req, [&] { return answer(a->req, outcome); }));
                              },
                              more);
                        });
}

// Carries out `fault` (faults.h) for request `a`: after its delay (a timer
// on the request's executor, never a sleep), answers with the error, drops
// the connection, or runs `proceed` (for kDropAfter, whose answer is then
// dropped by Complete).
void InjectFault(const ServerContext& ctx, const std::shared_ptr<AsyncRequest>& a, Fault fault,
                 std::function<void()> proceed) {
  a->req.fault = FaultActionName(fault.action);
  auto act = [&ctx, a, fault, proceed = std::move(proceed)] {
    switch (fault.action) {
      case FaultAction::kError:
        return Complete(ctx, *a, ErrorResponse(a->req, ErrorReply(fault.error, fault.message)));
      case FaultAction::kDropBefore: {
        HttpResponse res = MakeResponse(a->req, http::status::unknown);
        return Complete(ctx, *a, std::move(res));
      }
      case FaultAction::kDropAfter:
        a->drop_answer = true;
        return proceed();
      case FaultAction::kNone:
        return proceed();
    }
  };
  if (fault.delay.count() == 0) return act();
  auto timer = std::make_shared<boost::asio::steady_timer>(a->executor, fault.delay);
  timer->async_wait([timer, act = std::move(act)](boost::system::error_code) { act(); });
}

// The fault, if any, for request `a` addressing `table` (and the entity
// key `partition_key`, when known).
std::optional<Fault> DecideFault(const ServerContext& ctx, const AsyncRequest& a,
                                 std::string_view table,
                                 std::optional<std::string_view> partition_key) {
  return ctx.faults->Decide(
      FaultTarget{a.req.account, OperationName(a.req.op), table, partition_key});
}

// Everything after Prepare: dispatch on this thread or the blocking pool,
// commit a write through ApplyAsync. `faults`: fault rules are set
// (FaultsArmed, read once per request).
void RunPrepared(const ServerContext& ctx, const std::shared_ptr<AsyncRequest>& a, bool faults) {
  if (ctx.blocking_pool != nullptr && !RunsInline(a->req)) {
    ctx.blocking_pool->Post([&ctx, a] {
      Complete(ctx, *a,
               Guarded(a->req, [&] { return ResolveNow(ctx, a->req, Dispatch(ctx, a->req)); }));
    });
    return;
  }
  OperationResult result;
  try {
    result = Dispatch(ctx, a->req);
  } catch (const std::exception&) {
    result = ErrorResponse(a->req, ErrorReply(AzureError::kInternalError));
  }
  if (auto* res = std::get_if<HttpResponse>(&result)) return Complete(ctx, *a, std::move(*res));
  if (auto* read = std::get_if<PendingRead>(&result)) {
    auto finish = [&ctx, a, run = read->run] {
      Complete(ctx, *a, Guarded(a->req, [&] { return run(ctx, a->req); }));
    };
    if (ctx.blocking_pool == nullptr) return finish();
    ctx.blocking_pool->Post(std::move(finish));
    return;
  }
  PendingWrite& write = std::get<PendingWrite>(result);
  // Writes and batches meet their fault here, parsed but not yet applied:
  // the table and PartitionKey of a $batch or an insert are in its body.
  if (faults) {
    std::optional<std::string_view> pk;
    if (!write.ops.empty()) pk = write.ops.front().entity.partition_key;
    if (auto fault = DecideFault(ctx, *a, write.table, pk)) {
      auto held = std::make_shared<PendingWrite>(std::move(write));
      return InjectFault(ctx, a, std::move(*fault),
                         [&ctx, a, held] { CommitAsync(ctx, a, *held); });
    }
  }
  CommitAsync(ctx, a, write);
}

}  // namespace

void HandleRequestAsync(const ServerContext& ctx, HttpRequest& http,
                        const std::string& peer_address, boost::asio::any_io_executor executor,
                        Completion done) {
  auto a = std::make_shared<AsyncRequest>(http, std::move(executor), std::move(done));
  a->req.request_id = NewRequestId();
  a->req.peer_address = peer_address;
  std::optional<HttpResponse> early;
  try {
    early = Prepare(ctx, a->req);
  } catch (const std::exception&) {
    early = ErrorResponse(a->req, ErrorReply(AzureError::kInternalError));
  }
  if (early) return Complete(ctx, *a, std::move(*early));
  // Other operations meet their fault before they run (entity writes and
  // batches in RunPrepared). The reserved /_ endpoints never do.
  const bool faults = FaultsArmed(ctx) && !a->req.admin;
  if (faults && !IsEntityWrite(a->req.op) && a->req.op != Operation::kBatch) {
    const ResourcePath& path = a->req.path;
    std::optional<std::string_view> pk;
    if (path.kind == ResourceKind::kEntity) pk = path.partition_key;
    if (auto fault = DecideFault(ctx, *a, path.table, pk)) {
      return InjectFault(ctx, a, std::move(*fault), [&ctx, a] { RunPrepared(ctx, a, false); });
    }
  }
  RunPrepared(ctx, a, faults);
}

}  // namespace cerulean::server
