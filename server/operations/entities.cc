// Entity operations on one entity: Get Entity, Insert, Update, Merge, Delete
// and the upserts, and the storage write of an entity operation
// (BuildWriteOp, shared with $batch). Query Entities: query_entities.cc.
#include "server/formats/ascii.h"
#include "server/formats/entity_atom.h"
#include "server/formats/entity_id.h"
#include "server/operations/operations.h"
#include "server/protocol/query_options.h"

namespace cerulean::server {

namespace {

// If-Match of an update/merge/delete: nullopt for "*", else the ETag's ticks
// (-1 for a weak ETag this server never produced: it matches nothing).
std::optional<ErrorReply> ParseIfMatch(std::string_view value, std::optional<int64_t>* out) {
  value = Trim(value);
  if (value == "*") {
    *out = std::nullopt;
    return std::nullopt;
  }
  // The weak prefix is read case-insensitively: `w/"..."` is compared like `W/"..."`.
  if (value.size() >= 4 && (value.starts_with("W/\"") || value.starts_with("w/\"")) &&
      value.ends_with("\"")) {
    *out = ParseETag(value).value_or(-1);
    return std::nullopt;
  }
  return ErrorReply(
      AzureError::kInvalidInput,
      "The etag value '" + std::string(value) +
          "' specified in one of the request headers is not valid. Please make sure only one "
          "etag value is specified and is valid.");
}

JsonContext EntityJsonContext(const Request& req) {
  return JsonContext{req.base, req.account, req.path.table, req.format};
}

// A single entity: JSON at the negotiated metadata level, or an Atom entry.
HttpResponse EntityResponse(const Request& req, http::status status, const storage::Entity& entity,
                            const std::vector<std::string>* select) {
  std::string body;
  if (req.atom) {
    AppendEntityAtom(&body, entity, MakeAtomContext(req.base, req.account, req.path.table), true,
                     select);
    return AtomResponse(req, status, std::move(body));
  }
  body.reserve(768);
  AppendEntityJson(&body, entity, EntityJsonContext(req), true, select);
  return JsonResponse(req, status, std::move(body));
}

// A body error is reported only if the table exists (operations.md §0.1:
// table existence is checked before the body). Reads the store: run it as
// a PendingRead.
HttpResponse BodyError(const ServerContext& ctx, const Request& req, const ErrorReply& err) {
  auto table = ctx.store->GetTable(req.account, req.path.table);
  if (!table.ok()) return ErrorResponse(req, FromStatus(table.status()));
  return ErrorResponse(req, err);
}

}  // namespace

std::optional<ErrorReply> BuildWriteOp(Operation op, const ResourcePath& path,
                                       std::optional<std::string_view> if_match,
                                       std::string_view body, bool atom_body,
                                       storage::WriteOp* out) {
  using storage::WriteKind;
  switch (op) {
    case Operation::kInsertEntity:
      out->kind = WriteKind::kInsert;
      break;
    case Operation::kUpdateEntity:
      out->kind = WriteKind::kUpdate;
      break;
    case Operation::kMergeEntity:
      out->kind = WriteKind::kMerge;
      break;
    case Operation::kDeleteEntity:
      out->kind = WriteKind::kDelete;
      break;
    case Operation::kInsertOrReplace:
      out->kind = WriteKind::kInsertOrReplace;
      break;
    case Operation::kInsertOrMerge:
      out->kind = WriteKind::kInsertOrMerge;
      break;
    default:
      return ErrorReply(AzureError::kInvalidInput);
  }
  if (op == Operation::kUpdateEntity || op == Operation::kMergeEntity ||
      op == Operation::kDeleteEntity) {
    if (!if_match) {
      // Update/Merge without If-Match were routed to the upserts; only a
      // delete can get here without one.
      return ErrorReply(AzureError::kInvalidInput,
                        "If-Match header is mandatory when deleting an entity.");
    }
    if (auto err = ParseIfMatch(*if_match, &out->if_match)) return err;
  }
  if (op != Operation::kDeleteEntity) {
    bool keys_from_body = op == Operation::kInsertEntity;
    auto err = atom_body ? ParseAtomEntityBody(body, keys_from_body, &out->entity)
                         : ParseEntityBody(body, keys_from_body, &out->entity);
    if (err) return err;
  }
  if (op != Operation::kInsertEntity) {
    out->entity.partition_key = path.partition_key;
    out->entity.row_key = path.row_key;
  }
  return std::nullopt;
}

HttpResponse GetEntity(const ServerContext& ctx, Request& req) {
  QueryOptions opts;
  if (auto err = ParseQueryOptions(ctx, req, &opts)) return ErrorResponse(req, *err);
  // Outside the SAS key range the entity does not exist for the caller,
  // whether or not it does in the table (auth.md §3.4): the store is not
  // asked.
  if (!req.grant.InRange(req.path.partition_key, req.path.row_key)) {
    return ErrorResponse(req, ErrorReply(AzureError::kResourceNotFound));
  }
  if (!req.atom && !opts.select) {
    // JSON of every property: written from the stored row as it is read,
    // without decoding it into an Entity.
    std::string body;
    int64_t timestamp = 0;
    storage::Status s = ctx.store->GetEntityRow(req.account, req.path.table, req.path.partition_key,
                                                req.path.row_key, [&](storage::EntityRow& row) {
                                                  timestamp = row.timestamp;
                                                  return AppendEntityRowJson(
                                                      &body, row, EntityJsonContext(req), true);
                                                });
    if (!s.ok()) return ErrorResponse(req, FromStatus(s));
    HttpResponse res = JsonResponse(req, http::status::ok, std::move(body));
    thread_local std::string etag;  // copied into the response's fields
    etag.clear();
    AppendETag(&etag, timestamp);
    res.set("ETag", etag);
    return res;
  }
  auto entity =
      ctx.store->GetEntity(req.account, req.path.table, req.path.partition_key, req.path.row_key);
  if (!entity.ok()) return ErrorResponse(req, FromStatus(entity.status()));
  HttpResponse res =
      EntityResponse(req, http::status::ok, *entity, opts.select ? &*opts.select : nullptr);
  res.set("ETag", ETagFor(entity->timestamp));
  return res;
}

namespace {

// The response to a single entity write the store has applied or refused.
HttpResponse AnswerWriteEntity(const Request& req, const storage::ApplyOutcome& outcome) {
  if (!outcome.status.ok()) return ErrorResponse(req, FromStatus(outcome.status));
  const storage::Entity& entity = outcome.ops[0].entity;
  int64_t ts = outcome.result.timestamps.empty() ? 0 : outcome.result.timestamps[0];
  if (req.op == Operation::kDeleteEntity) return MakeResponse(req, http::status::no_content);
  if (req.op != Operation::kInsertEntity) {
    HttpResponse res = MakeResponse(req, http::status::no_content);
    res.set("ETag", ETagFor(ts));
    return res;
  }
  // Composed in one buffer (the chain of + made a string per step).
  std::string location;
  location.reserve(req.base.size() + 1 + req.path.table.size() + entity.partition_key.size() +
                   entity.row_key.size() + 32);
  location.append(req.base).push_back('/');
  AppendEntityPath(&location, req.path.table, entity.partition_key, entity.row_key);
  std::string_view prefer = Header(req.http, "Prefer");
  if (prefer == "return-no-content") {
    HttpResponse res = MakeResponse(req, http::status::no_content);
    res.set("ETag", ETagFor(ts));
    res.set("Location", location);
    res.set("DataServiceId", location);
    res.set("Preference-Applied", "return-no-content");
    return res;
  }
  storage::Entity stored = entity;
  stored.timestamp = ts;
  HttpResponse res = EntityResponse(req, http::status::created, stored, nullptr);
  res.set("ETag", ETagFor(ts));
  res.set("Location", location);
  if (prefer == "return-content") res.set("Preference-Applied", "return-content");
  return res;
}

}  // namespace

OperationResult WriteEntity(const ServerContext& /*ctx*/, Request& req) {
  if (req.http.find("If-None-Match") != req.http.end()) {
    bool both = req.http.find("If-Match") != req.http.end();
    return ErrorResponse(
        req,
        ErrorReply(AzureError::kInvalidInput,
                   both ? "Both If-Match and If-None-Match HTTP headers cannot be specified at the "
                          "same time. Please specify either one of the headers or none of them."
                        : std::string("If-None-Match HTTP header cannot be specified for ") +
                              (req.op == Operation::kDeleteEntity ? "DELETE" : "PUT") +
                              " operations."));
  }
  std::optional<std::string_view> if_match;
  if (auto it = req.http.find("If-Match"); it != req.http.end()) {
    if_match = std::string_view(it->value().data(), it->value().size());
  }

  storage::WriteOp op;
  if (auto err = BuildWriteOp(req.op, req.path, if_match, req.http.body(), req.atom_body, &op)) {
    // Which error wins depends on whether the table exists: a store read,
    // left to the blocking pool.
    return PendingRead{
        [err = *err](const ServerContext& ctx, Request& req) { return BodyError(ctx, req, err); }};
  }
  if (!req.grant.InRange(op.entity.partition_key, op.entity.row_key)) {
    return ErrorResponse(req, ErrorReply(AzureError::kAuthorizationFailure));
  }
  PendingWrite write;
  write.table = req.path.table;
  write.ops.push_back(std::move(op));
  write.answer = &AnswerWriteEntity;
  const bool content =
      req.op == Operation::kInsertEntity && Header(req.http, "Prefer") != "return-no-content";
  write.answer_bytes = WriteAnswerBytes(content ? req.http.body().size() : 0, 1);
  return write;
}

}  // namespace cerulean::server