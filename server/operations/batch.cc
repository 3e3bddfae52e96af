// Entity group transactions ($batch, batch.md): parse the multipart body,
// check the change set's structure, apply all writes atomically through
// Store::Apply, and answer with a multipart response.
#include <array>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <functional>
#include <memory>
#include <string_view>

#include "server/formats/ascii.h"
#include "server/formats/batch_multipart.h"
#include "server/formats/entity_atom.h"
#include "server/formats/entity_id.h"
#include "server/formats/url.h"
#include "server/operations/operations.h"
#include "server/protocol/content_negotiation.h"
#include "server/protocol/error_response.h"
#include "server/protocol/resource_path.h"
#include "server/protocol/routes.h"

namespace cerulean::server {

namespace {

constexpr size_t kMaxBatchOperations = 100;

// One change set operation after parsing.
struct BatchOp {
  Operation op = Operation::kInsertEntity;
  ResourcePath path;
  Metadata format = Metadata::kMinimal;
  bool atom = false;  // answer in Atom (format unused)
  bool json_errors = true;
  std::string_view prefer;  // the part's Prefer header, or empty
  storage::WriteOp write;

  // The base URL of the inner request, for Location.
  std::string_view base() const { return base_owned.empty() ? base_view : base_owned; }
  // A view of the inner URL or of the request's base, or (rarely) a string
  // of its own.
  std::string_view base_view;
  std::string base_owned;
};

// A change set after parsing: its parts (views into the request body) and
// operations.
struct ChangeSet {
  ParsedBatch batch;
  std::vector<BatchOp> ops;
};

// A failure to report as the single sub-response.
struct BatchFailure {
  size_t index = 0;
  ErrorReply error;
  // Refused by the credentials: answered as is, whether the table exists or
  // not (as a single request is authorized before its table is looked up).
  bool authorization = false;
};

// True iff the (percent-encoded) path segment `segment` names `account` or
// its secondary ("<account>-secondary"), ASCII case-insensitive.
bool NamesAccount(std::string_view segment, std::string_view account) {
  std::optional<std::string> decoded;
  if (segment.find('%') != std::string_view::npos) {
    decoded = PercentDecode(segment);
    if (!decoded) return false;
    segment = *decoded;
  }
  static constexpr std::string_view kSecondary = "-secondary";
  return IEquals(segment, account) || (segment.size() == account.size() + kSecondary.size() &&
                                       IEquals(segment.substr(0, account.size()), account) &&
                                       IEquals(segment.substr(account.size()), kSecondary));
}

// Splits an inner URL into its base (op->base()) and the decoded resource
// part (op->path). The base may be a view of `url` or of req.base.
std::optional<ErrorReply> ResolveInnerUrl(const Request& req, std::string_view url, BatchOp* op) {
  const ErrorReply invalid(AzureError::kInvalidInput);
  const bool absolute = !url.starts_with("/");
  // scheme "://" host-and-port, for the base of an absolute URL.
  std::string_view scheme, host_port, encoded_path;
  bool has_userinfo = false;
  if (absolute && SplitPlainAbsoluteUrl(url, &scheme, &host_port, &encoded_path)) {
    // The usual shape, split without Boost.URL: parse_absolute_uri costs
    // far more than the split, once per entity of a batch.
  } else if (absolute) {
    auto parsed = boost::urls::parse_absolute_uri(url);
    if (!parsed) return invalid;
    scheme = std::string_view(parsed->scheme().data(), parsed->scheme().size());
    host_port = std::string_view(parsed->encoded_host_and_port().data(),
                                 parsed->encoded_host_and_port().size());
    encoded_path = std::string_view(parsed->encoded_path().data(), parsed->encoded_path().size());
    has_userinfo = parsed->has_userinfo();
  } else {
    auto parsed = boost::urls::parse_origin_form(url);
    if (!parsed) return invalid;
    encoded_path = std::string_view(parsed->encoded_path().data(), parsed->encoded_path().size());
  }
  // Path-style: drop the account segment when it names this account.
  std::string_view rest = encoded_path;
  if (rest.starts_with("/")) rest.remove_prefix(1);
  size_t slash = rest.find('/');
  std::string_view first = rest.substr(0, slash);
  std::string_view resource = encoded_path;
  size_t prefix_size = 0;  // "/" + first, when it names the account
  if (slash != std::string_view::npos && NamesAccount(first, req.account)) {
    resource = rest.substr(slash);
    prefix_size = 1 + first.size();
  }
  op->base_owned.clear();
  if (!absolute) {
    op->base_view = req.base;
  } else {
    // The base is scheme "://" host-and-port, then the account segment: the
    // URL's own beginning unless it has user information.
    const size_t path_offset = static_cast<size_t>(encoded_path.data() - url.data());
    if (!has_userinfo && path_offset == scheme.size() + 3 + host_port.size()) {
      op->base_view = url.substr(0, path_offset + prefix_size);
    } else {
      op->base_owned.append(scheme).append("://").append(host_port);
      op->base_owned.append(encoded_path.substr(0, prefix_size));
      op->base_view = {};
    }
  }
  auto decoded = PercentDecode(resource);
  if (!decoded) return invalid;
  return ParseResourcePath(*decoded, &op->path);
}

// The headers every sub-response starts with (CommonSubHeaders, as lines).
constexpr std::string_view kCommonSubHeaderLines =
    "X-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\n";

std::vector<std::pair<std::string_view, std::string>> CommonSubHeaders() {
  std::vector<std::pair<std::string_view, std::string>> headers;
  headers.reserve(8);  // the most any sub-response adds
  headers.emplace_back("X-Content-Type-Options", "nosniff");
  headers.emplace_back("Cache-Control", "no-cache");
  return headers;
}

// How the error of operation `op` is answered (JSON at minimal metadata when
// `op` is null); `index` prefixes the message of a change set's failure.
ErrorForm OperationErrorForm(const Request& req, const BatchOp* op, std::optional<size_t> index) {
  ErrorForm form;
  form.scope = ErrorScope::kOperation;
  if (op) {
    form.xml = !op->json_errors;
    form.metadata = op->format;
    form.prefer = op->prefer;
  }
  form.index = index;
  form.request_id = req.request_id;
  return form;
}

// The sub-response of `error`, in part `part` (null: no Content-ID).
BatchSubResponse ErrorSub(const ErrorReply& error, const ErrorForm& form, const BatchPart* part) {
  ErrorAnswer answer = RenderError(error, form);
  BatchSubResponse sub;
  sub.status = answer.status;
  if (part) sub.content_id = part->content_id;
  sub.headers = std::move(answer.headers);
  sub.body = std::move(answer.body);
  return sub;
}

// The body of a sub-response carrying `entity`, in the operation's format.
void AppendEntityBody(std::string* out, const storage::Entity& entity, const Request& req,
                      const BatchOp& op) {
  if (op.atom) {
    AppendEntityAtom(out, entity, MakeAtomContext(op.base(), req.account, op.path.table), true,
                     nullptr);
  } else {
    AppendEntityJson(out, entity, JsonContext{op.base(), req.account, op.path.table, op.format},
                     true, nullptr);
  }
}

HttpResponse MultipartResponse(const Request& req, BatchResponseWriter* writer) {
  HttpResponse res = MakeResponse(req, http::status::accepted);
  std::string content_type;
  res.body() = writer->Finish(&content_type);
  res.set("Content-Type", content_type);
  return res;
}

HttpResponse MultipartResponse(const Request& req, const std::vector<BatchSubResponse>& subs,
                               bool changeset) {
  HttpResponse res = MakeResponse(req, http::status::accepted);
  std::string content_type;
  res.body() = SerializeBatchResponse(subs, changeset, &content_type);
  res.set("Content-Type", content_type);
  return res;
}

// True iff `s` says the store could not be used (kBusy: a database that does
// not answer; an I/O error) or lost sight of the change set's commit
// (kOutcomeUnknown): the whole request's failure, as Azure's 503 ServerBusy
// and 500 OperationTimedOut are. No operation caused it.
bool StoreUnusable(const storage::Status& s) {
  return s.code() == storage::StatusCode::kIOError ||
         s.code() == storage::StatusCode::kCorruption || s.code() == storage::StatusCode::kBusy ||
         s.code() == storage::StatusCode::kOutcomeUnknown;
}

// The answer to a single retrieve that failed with `error` (no index
// prefix).
HttpResponse RetrieveError(const Request& req, const BatchOp& op, const BatchPart& part,
                           const ErrorReply& error) {
  return MultipartResponse(
      req, {ErrorSub(error, OperationErrorForm(req, &op, std::nullopt), &part)}, false);
}

// The read-only batch: one GET of one entity, read on the blocking pool (a
// PendingRead). `batch` holds the part, whose views the read keeps.
OperationResult SingleRetrieve(const Request& req, std::shared_ptr<const ParsedBatch> batch) {
  const BatchPart& part = batch->parts.front();
  BatchOp op;
  // No Accept: JSON, except before 2015-12-11 where Atom is the default.
  auto accept = part.Header("Accept");
  if (accept || req.version < kFirstAtomlessVersion) {
    bool ok =
        NegotiateFormat("", accept.value_or(""), req.version, &op.format, &op.atom) == std::nullopt;
    op.json_errors = ok && !op.atom;
  }
  // The parser admits only a GET here; the route table says of what.
  const Route* route = nullptr;
  if (auto err = ResolveInnerUrl(req, part.url, &op);
      err || FindRoute(RouteKey{op.path.kind, "GET", std::nullopt, std::nullopt, false}, &route) ||
      route->op != Operation::kGetEntity) {
    return ErrorResponse(req, err.value_or(ErrorReply(AzureError::kInvalidInput)));
  }
  if (auto err = Authorize(req, route->op, op.path.table)) return ErrorResponse(req, *err);
  // Outside the SAS key range the entity does not exist for the caller, as
  // for Get Entity: the store is not asked.
  if (!req.grant.InRange(op.path.partition_key, op.path.row_key)) {
    return RetrieveError(req, op, part, ErrorReply(AzureError::kResourceNotFound));
  }
  return PendingRead{[batch = std::move(batch), op = std::move(op)](const ServerContext& ctx,
                                                                    Request& req) {
    const BatchPart& part = batch->parts.front();
    auto entity =
        ctx.store->GetEntity(req.account, op.path.table, op.path.partition_key, op.path.row_key);
    if (!entity.ok()) {
      if (StoreUnusable(entity.status())) return ErrorResponse(req, FromStatus(entity.status()));
      return RetrieveError(req, op, part, FromStatus(entity.status()));
    }
    BatchSubResponse sub;
    sub.status = 200;
    sub.content_id = part.content_id;
    sub.headers = CommonSubHeaders();
    sub.headers.emplace_back("DataServiceVersion", "3.0;");
    sub.headers.emplace_back("Content-Type",
                             std::string(op.atom ? kAtomContentType : JsonContentType(op.format)));
    sub.headers.emplace_back("ETag", ETagFor(entity->timestamp));
    AppendEntityBody(&sub.body, *entity, req, op);
    std::vector<BatchSubResponse> subs;
    subs.push_back(std::move(sub));
    return MultipartResponse(req, subs, false);
  }};
}

// The RowKeys of a change set's operations so far (at most
// kMaxBatchOperations): open addressing over their hashes, so that finding
// a duplicate costs about one comparison per operation rather than one per
// earlier operation.
class RowKeySet {
 public:
  // False iff `key` is already in the set. The set keeps the view.
  bool Insert(std::string_view key) {
    const uint64_t h = std::hash<std::string_view>{}(key);
    for (size_t slot = h % kSlots;; slot = (slot + 1) % kSlots) {
      Slot& s = slots_[slot];
      if (!s.used) {
        s = {true, h, key};
        return true;
      }
      if (s.hash == h && s.key == key) return false;
    }
  }

 private:
  static_assert(kMaxBatchOperations < 128);
  static constexpr size_t kSlots = 256;  // at most half full: probes stay short
  struct Slot {
    bool used = false;
    uint64_t hash = 0;
    std::string_view key;
  };
  std::array<Slot, kSlots> slots_{};
};

// The format negotiated for the last Accept value seen in a change set
// (the SDKs send the same one with every operation).
struct AcceptMemo {
  std::optional<std::string_view> accept;
  Metadata format = Metadata::kMinimal;
  bool atom = false;
  bool json_errors = true;
};

// Parses change set part `i` into `op`.
std::optional<ErrorReply> ParseChangesetPart(const Request& req, const BatchPart& part, BatchOp* op,
                                             AcceptMemo* memo) {
  if (auto accept = part.Header("Accept")) {
    if (memo->accept != accept) {
      bool ok =
          NegotiateFormat("", *accept, req.version, &memo->format, &memo->atom) == std::nullopt;
      memo->json_errors = ok && !memo->atom;
      memo->accept = accept;
    }
    op->format = memo->format;
    op->atom = memo->atom;
    op->json_errors = memo->json_errors;
  } else {
    // No Accept: XML errors; Atom bodies where the version still has them.
    op->json_errors = false;
    op->atom = req.version < kFirstAtomlessVersion;
  }
  op->prefer = part.Header("Prefer").value_or("");
  if (auto err = ResolveInnerUrl(req, part.url, op)) return err;
  std::string_view method = part.method;
  if (auto tunnel = part.Header("X-HTTP-Method")) {
    if (auto err = TunnelMethod(Trim(*tunnel), &method)) return err;
  }
  // The route table decides, as for a request of its own; a change set
  // holds entity writes only.
  auto if_match = part.Header("If-Match");
  const ResourcePath& p = op->path;
  const Route* route = nullptr;
  if (FindRoute(RouteKey{p.kind, method, std::nullopt, std::nullopt, if_match.has_value()},
                &route) ||
      !route->in_changeset) {
    return ErrorReply(AzureError::kInvalidInput);
  }
  op->op = route->op;
  // Atom bodies before 2015-12-11; later versions parse every body as JSON.
  auto content_type = part.Header("Content-Type");
  bool atom_body = req.version < kFirstAtomlessVersion && content_type &&
                   content_type->find("atom+xml") != std::string_view::npos;
  return BuildWriteOp(op->op, p, if_match, part.body, atom_body, &op->write);
}

// The multipart response to a change set the store has applied or refused.
HttpResponse AnswerChangeSet(const Request& req, const ChangeSet& set,
                             const storage::ApplyOutcome& outcome) {
  const std::vector<BatchPart>& parts = set.batch.parts;
  const std::vector<BatchOp>& ops = set.ops;
  const std::vector<storage::WriteOp>& writes = outcome.ops;
  const storage::Status& s = outcome.status;
  if (!s.ok()) {
    if (StoreUnusable(s)) return ErrorResponse(req, FromStatus(s));
    size_t i = outcome.error.index < ops.size() ? outcome.error.index : 0;
    return MultipartResponse(
        req, {ErrorSub(FromStatus(s), OperationErrorForm(req, &ops[i], i), &parts[i])}, true);
  }

  // Written straight into the response body: about 500 bytes of framing and
  // headers per operation, plus any entity bodies.
  BatchResponseWriter writer(true, 512 + ops.size() * 640);
  std::string location;
  std::string etag;
  for (size_t i = 0; i < ops.size(); ++i) {
    const BatchOp& op = ops[i];
    const storage::Entity& e = writes[i].entity;
    const int64_t ts = outcome.result.timestamps[i];
    etag.clear();
    if (op.op != Operation::kDeleteEntity) AppendETag(&etag, ts);
    if (op.op == Operation::kInsertEntity) {
      const bool no_content = op.prefer == "return-no-content";
      writer.BeginPart(no_content ? 204 : 201, parts[i].content_id);
      writer.AddFixedHeaders(kCommonSubHeaderLines);
      if (no_content) {
        writer.AddFixedHeaders("Preference-Applied: return-no-content\r\n");
      } else if (op.prefer == "return-content") {
        writer.AddFixedHeaders("Preference-Applied: return-content\r\n");
      }
      writer.AddFixedHeaders("DataServiceVersion: 3.0;\r\n");
      if (!no_content) {
        writer.AddHeader("Content-Type", op.atom ? kAtomContentType : JsonContentType(op.format));
      }
      location.assign(op.base()).push_back('/');
      AppendEntityPath(&location, op.path.table, e.partition_key, e.row_key);
      writer.AddHeader("Location", location);
      writer.AddHeader("DataServiceId", location);
      writer.AddHeader("ETag", etag);
      if (!no_content) {
        storage::Entity stored = e;
        stored.timestamp = ts;
        AppendEntityBody(writer.Body(), stored, req, op);
      }
    } else {
      writer.BeginPart(204, parts[i].content_id);
      writer.AddFixedHeaders(kCommonSubHeaderLines);
      writer.AddFixedHeaders("DataServiceVersion: 1.0;\r\n");
      if (op.op != Operation::kDeleteEntity) writer.AddHeader("ETag", etag);
    }
  }
  return MultipartResponse(req, &writer);
}

// The answer to change set `set` refused with `failure`: its one error
// sub-response.
HttpResponse RefusedChangeSet(const Request& req, const ChangeSet& set,
                              const BatchFailure& failure) {
  const size_t i = failure.index;
  const BatchOp* op = i < set.ops.size() ? &set.ops[i] : nullptr;
  const BatchPart* part = i < set.batch.parts.size() ? &set.batch.parts[i] : nullptr;
  return MultipartResponse(req, {ErrorSub(failure.error, OperationErrorForm(req, op, i), part)},
                           true);
}

}  // namespace

OperationResult Batch(const ServerContext& /*ctx*/, Request& req) {
  auto parsed = ParseBatch(Header(req.http, "Content-Type"), req.http.body());
  if (!parsed.ok()) return ErrorResponse(req, ErrorReply(AzureError::kInvalidInput));
  if (!parsed->changeset) {
    return SingleRetrieve(req, std::make_shared<const ParsedBatch>(std::move(*parsed)));
  }

  // The parts and operations outlive this call: the answer needs them once
  // the store has applied the change set.
  auto state = std::make_shared<ChangeSet>();
  state->batch = std::move(*parsed);
  const std::vector<BatchPart>& parts = state->batch.parts;
  if (parts.empty()) {
    ErrorForm form;
    form.scope = ErrorScope::kChangeSet;
    form.xml = true;
    form.request_id = req.request_id;
    const ErrorReply error(AzureError::kInvalidInput,
                           "An error occurred while processing this request.");
    return MultipartResponse(req, {ErrorSub(error, form, nullptr)}, true);
  }
  std::vector<BatchOp>& ops = state->ops;
  ops.resize(std::min(parts.size(), kMaxBatchOperations));
  std::optional<BatchFailure> failure;
  if (parts.size() > kMaxBatchOperations) {
    failure = BatchFailure{
        kMaxBatchOperations - 1,
        ErrorReply(AzureError::kInvalidInput,
                   "The batch request operation exceeds the maximum 100 changes per change set.")};
  }
  RowKeySet row_keys;
  AcceptMemo accept_memo;
  for (size_t i = 0; i < ops.size() && !failure; ++i) {
    BatchOp& op = ops[i];
    if (auto err = ParseChangesetPart(req, parts[i], &op, &accept_memo)) {
      failure = BatchFailure{i, *err};
      break;
    }
    const storage::Entity& e = op.write.entity;
    if (!IEquals(op.path.table, ops[0].path.table)) {
      failure = BatchFailure{i, ErrorReply(AzureError::kInvalidInput)};
    } else if (e.partition_key != ops[0].write.entity.partition_key) {
      failure = BatchFailure{i, ErrorReply(AzureError::kCommandsInBatchActOnDifferentPartitions)};
    } else if (auto err = Authorize(req, op.op, op.path.table)) {
      failure = BatchFailure{i, *err, true};
    } else if (!req.grant.InRange(e.partition_key, e.row_key)) {
      failure = BatchFailure{i, ErrorReply(AzureError::kAuthorizationFailure), true};
    } else if (!row_keys.Insert(e.row_key)) {
      failure = BatchFailure{i, ErrorReply(AzureError::kInvalidDuplicateRow)};
    }
  }
  if (failure) {
    // A changeset refused for its size was not parsed: its first operation
    // still names the table.
    if (ops[0].path.table.empty()) {
      AcceptMemo first;
      static_cast<void>(ParseChangesetPart(req, parts[0], &ops[0], &first));
    }
    if (!failure->authorization && !req.grant.ReachesTable(ops[0].path.table)) {
      // Whether a table the credentials do not reach exists is not the
      // caller's to learn: its change set is refused whatever its table and
      // body, as a single request to it would be.
      failure = BatchFailure{0, ErrorReply(AzureError::kAuthorizationFailure), true};
    }
    if (failure->authorization) return RefusedChangeSet(req, *state, *failure);
    // An operation may be invalid in a table that does not exist: the table
    // error wins, as for single operations. Whether it exists is a store
    // read, left to the blocking pool.
    return PendingRead{[state, failure = *failure](const ServerContext& ctx, Request& req) {
      auto table = ctx.store->GetTable(req.account, state->ops[0].path.table);
      if (!table.ok() && StoreUnusable(table.status())) {
        return ErrorResponse(req, FromStatus(table.status()));
      }
      if (!table.ok() && table.status().code() == storage::StatusCode::kTableNotFound) {
        return RefusedChangeSet(req, *state,
                                BatchFailure{0, ErrorReply(AzureError::kTableNotFound)});
      }
      return RefusedChangeSet(req, *state, failure);
    }};
  }

  PendingWrite write;
  write.table = ops[0].path.table;
  write.ops.reserve(ops.size());
  for (auto& op : ops) write.ops.push_back(std::move(op.write));
  write.answer = [state](const Request& req, const storage::ApplyOutcome& outcome) {
    return AnswerChangeSet(req, *state, outcome);
  };
  size_t content = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].op == Operation::kInsertEntity && ops[i].prefer != "return-no-content") {
      content += parts[i].body.size();
    }
  }
  write.answer_bytes = WriteAnswerBytes(content, write.ops.size());
  return write;
}

}  // namespace cerulean::server
