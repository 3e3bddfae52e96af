// Operation handlers: plain functions from a routed, authenticated Request to
// a Response, testable without sockets.
// Thread-safety: handlers may run concurrently; they share only the Store.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "server/protocol/request.h"

namespace cerulean::server {

// A write an operation leaves to the store, and how to answer once the store
// has applied or refused it. The router applies it: synchronously
// (Store::Apply), or without blocking its thread (Store::ApplyAsync) so that
// concurrent writes share one commit.
struct PendingWrite {
  std::string table;
  std::vector<storage::WriteOp> ops;
  // Builds the response from the outcome (whose `ops` are the ones above).
  std::function<HttpResponse(const Request& req, const storage::ApplyOutcome& outcome)> answer;
  // A close upper estimate of the answer's body (WriteAnswerBytes): the
  // scheduler reserves it from the response budget before the write
  // commits (response_budget.h).
  size_t answer_bytes = 0;
};

// The answer_bytes of a write of `ops` operations whose answer repeats the
// entities of `content_bytes` of its request body (inserts answered with
// their content): those, plus headers and metadata.
inline size_t WriteAnswerBytes(size_t content_bytes, size_t ops) {
  return content_bytes + ops * 1024 + 4096;
}

// A read an operation found too long to answer on the thread that read the
// request (a query that may examine many rows): the scheduler runs `run` on
// the blocking pool instead, or at once where it has none. `run` carries
// what the operation already parsed and planned, so nothing is done twice.
struct PendingRead {
  std::function<HttpResponse(const ServerContext& ctx, Request& req)> run;
};

// What an operation returns: its response, the write to apply (an entity
// write that did not fail before writing), or the read to run elsewhere.
using OperationResult = std::variant<HttpResponse, PendingWrite, PendingRead>;

HttpResponse QueryTables(const ServerContext& ctx, Request& req);
HttpResponse GetTable(const ServerContext& ctx, Request& req);
HttpResponse CreateTable(const ServerContext& ctx, Request& req);
HttpResponse DeleteTable(const ServerContext& ctx, Request& req);
HttpResponse GetTableAcl(const ServerContext& ctx, Request& req);
HttpResponse SetTableAcl(const ServerContext& ctx, Request& req);

// Parses and plans the query, then answers on the calling thread when the
// page is short (key ranges only, at most kInlineQueryRows rows and
// kInlineQueryBytes of JSON), else returns a PendingRead that renders the
// planned page, however long.
OperationResult QueryEntities(const ServerContext& ctx, Request& req);
HttpResponse GetEntity(const ServerContext& ctx, Request& req);
// Insert, Update, Merge, Delete and the upserts (req.op says which).
OperationResult WriteEntity(const ServerContext& ctx, Request& req);

OperationResult Batch(const ServerContext& ctx, Request& req);

HttpResponse GetServiceProperties(const ServerContext& ctx, Request& req);
HttpResponse SetServiceProperties(const ServerContext& ctx, Request& req);
HttpResponse GetServiceStats(const ServerContext& ctx, Request& req);

// Builds the storage write of an entity operation from its parts (shared by
// single requests and batches). `body` is ignored for deletes; it is an Atom
// entry iff `atom_body`, else JSON. `if_match` is nullopt when the header is
// absent.
std::optional<ErrorReply> BuildWriteOp(Operation op, const ResourcePath& path,
                                       std::optional<std::string_view> if_match,
                                       std::string_view body, bool atom_body,
                                       storage::WriteOp* out);

}  // namespace cerulean::server
