#include "server/protocol/routes.h"

namespace cerulean::server {

namespace {

using enum ResourceKind;
using enum BodyFormat;
using enum Runs;
using S = Selector;
using M = IfMatch;
using R = ResponseFormat;
using O = Operation;

// SAS rules: an entity operation, which a table SAS with `perms` reaches as
// an account SAS for objects does; an operation only an account SAS of
// `types` with `perms` reaches; one no SAS reaches.
constexpr SasRule EntitySas(std::string_view perms) { return {true, perms, true, "o", perms}; }
constexpr SasRule AccountSas(std::string_view types, std::string_view perms) {
  return {false, "", true, types, perms};
}
constexpr SasRule kNoSas = {false, "", false, "", ""};

constexpr bool kWrites = true;
constexpr bool kReads = false;
constexpr bool kInChangeset = true;
constexpr bool kAlone = false;

// The operation table's rows without their handler, in the order of
// Operation (both come from operation_table.h).
#define CERULEAN_ROUTE(op, name, kind, verbs, selector, if_match, body, response, write, \
                       in_changeset, runs, sas, handler)                                 \
  Route{O::op, name,     kind,  verbs,        selector, if_match,                        \
        body,  response, write, in_changeset, runs,     sas},
constexpr Route kRoutes[] = {CERULEAN_OPERATIONS(CERULEAN_ROUTE)};
#undef CERULEAN_ROUTE

// The selector a request names for a resource of `kind`, or the error for
// one the resource does not have.
std::optional<ErrorReply> SelectorOf(const RouteKey& key, Selector* out) {
  *out = Selector::kNone;
  switch (key.kind) {
    case kService:
      if (key.restype == "service" && key.comp == "properties") {
        *out = Selector::kServiceProperties;
        return std::nullopt;
      }
      if (key.restype == "service" && key.comp == "stats") {
        *out = Selector::kServiceStats;
        return std::nullopt;
      }
      return ErrorReply(AzureError::kInvalidQueryParameterValue);
    case kEntities:
      if (!key.comp) return std::nullopt;
      if (*key.comp != "acl") return ErrorReply(AzureError::kInvalidQueryParameterValue);
      *out = Selector::kAcl;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

}  // namespace

Verb VerbOf(std::string_view m) {
  if (m == "GET") return kGet;
  if (m == "PUT") return kPut;
  if (m == "POST") return kPost;
  if (m == "DELETE") return kDelete;
  if (m == "MERGE") return kMerge;
  if (m == "PATCH") return kPatch;
  return kNoVerb;
}

std::optional<ErrorReply> TunnelMethod(std::string_view value, std::string_view* method) {
  if (*method != "POST") return ErrorReply(AzureError::kXMethodNotUsingPost);
  if (value != "MERGE" && value != "PUT" && value != "DELETE" && value != "PATCH") {
    return ErrorReply(AzureError::kXMethodIncorrectValue);
  }
  *method = value;
  return std::nullopt;
}

std::span<const Route> AllRoutes() { return kRoutes; }

const Route& RouteOf(Operation op) { return kRoutes[static_cast<size_t>(op)]; }

std::optional<ErrorReply> FindRoute(const RouteKey& key, const Route** out) {
  Selector selector;
  if (auto err = SelectorOf(key, &selector)) return err;
  const Verb verb = VerbOf(key.method);
  if (verb != kNoVerb) {
    for (const Route& r : kRoutes) {
      if (r.kind != key.kind || r.selector != selector || (r.verbs & verb) == 0) continue;
      if (r.if_match == IfMatch::kPresent && !key.has_if_match) continue;
      if (r.if_match == IfMatch::kAbsent && key.has_if_match) continue;
      *out = &r;
      return std::nullopt;
    }
  }
  return ErrorReply(AzureError::kMethodNotAllowed);
}

Runs AdminRuns(std::string_view raw_path) {
  // /_metrics may count every entity, /_snapshots copy them, /_reset wipe
  // an account; /_faults changes rules under a lock. The health check, the
  // explorer's files and unknown paths answer at once.
  for (std::string_view prefix : {"/_metrics", "/_snapshots", "/_reset", "/_faults"}) {
    if (raw_path.starts_with(prefix)) return kPool;
  }
  return kInline;
}

}  // namespace cerulean::server
