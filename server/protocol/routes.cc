#include "server/protocol/routes.h"

#include <array>

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

// One entry per Operation, in its order.
// clang-format off
constexpr std::array<Route, 22> kRoutes = {{
  // op                      name                     resource   verbs            selector               If-Match     body        response      write    change set    runs           SAS
  {O::kQueryTables,          "QueryTables",           kTables,   kGet,            S::kNone,              M::kAny,     kNone,      R::kOData,    kReads,  kAlone,       kPool,         AccountSas("cs", "lr")},
  {O::kGetTable,             "GetTable",              kTable,    kGet,            S::kNone,              M::kAny,     kNone,      R::kOData,    kReads,  kAlone,       kPool,         AccountSas("cs", "lr")},
  {O::kCreateTable,          "CreateTable",           kTables,   kPost,           S::kNone,              M::kAny,     kOData,     R::kOData,    kWrites, kAlone,       kPool,         AccountSas("c", "cw")},
  {O::kDeleteTable,          "DeleteTable",           kTable,    kDelete,         S::kNone,              M::kAny,     kNone,      R::kNone,     kWrites, kAlone,       kPool,         AccountSas("c", "d")},
  {O::kQueryEntities,        "QueryEntities",         kEntities, kGet,            S::kNone,              M::kAny,     kNone,      R::kOData,    kReads,  kAlone,       kInlineOrPool, EntitySas("r")},
  {O::kGetEntity,            "GetEntity",             kEntity,   kGet,            S::kNone,              M::kAny,     kNone,      R::kOData,    kReads,  kAlone,       kInline,       EntitySas("r")},
  {O::kInsertEntity,         "InsertEntity",          kEntities, kPost,           S::kNone,              M::kAny,     kOData,     R::kOData,    kWrites, kInChangeset, kCommit,       EntitySas("a")},
  {O::kUpdateEntity,         "UpdateEntity",          kEntity,   kPut,            S::kNone,              M::kPresent, kOData,     R::kNone,     kWrites, kInChangeset, kCommit,       EntitySas("u")},
  {O::kMergeEntity,          "MergeEntity",           kEntity,   kMerge | kPatch, S::kNone,              M::kPresent, kOData,     R::kNone,     kWrites, kInChangeset, kCommit,       EntitySas("u")},
  {O::kDeleteEntity,         "DeleteEntity",          kEntity,   kDelete,         S::kNone,              M::kAny,     kNone,      R::kNone,     kWrites, kInChangeset, kCommit,       EntitySas("d")},
  {O::kInsertOrReplace,      "InsertOrReplaceEntity", kEntity,   kPut,            S::kNone,              M::kAbsent,  kOData,     R::kNone,     kWrites, kInChangeset, kCommit,       EntitySas("a u")},
  {O::kInsertOrMerge,        "InsertOrMergeEntity",   kEntity,   kMerge | kPatch, S::kNone,              M::kAbsent,  kOData,     R::kNone,     kWrites, kInChangeset, kCommit,       EntitySas("a u")},
  {O::kBatch,                "Batch",                 kBatch,    kPost,           S::kNone,              M::kAny,     kMultipart, R::kMultipart, kWrites, kAlone,      kCommit,       EntitySas("")},
  {O::kGetTableAcl,          "GetTableAcl",           kEntities, kGet,            S::kAcl,               M::kAny,     kNone,      R::kXml,      kReads,  kAlone,       kPool,         kNoSas},
  {O::kSetTableAcl,          "SetTableAcl",           kEntities, kPut,            S::kAcl,               M::kAny,     kXml,       R::kNone,     kWrites, kAlone,       kPool,         kNoSas},
  {O::kGetServiceProperties, "GetServiceProperties",  kService,  kGet,            S::kServiceProperties, M::kAny,     kNone,      R::kXml,      kReads,  kAlone,       kPool,         AccountSas("s", "r")},
  {O::kSetServiceProperties, "SetServiceProperties",  kService,  kPut,            S::kServiceProperties, M::kAny,     kXml,       R::kNone,     kWrites, kAlone,       kPool,         AccountSas("s", "w")},
  {O::kGetServiceStats,      "GetServiceStats",       kService,  kGet,            S::kServiceStats,      M::kAny,     kNone,      R::kXml,      kReads,  kAlone,       kPool,         AccountSas("s", "r")},
  // Answered before routing (OPTIONS) or by path (/_...): no verb.
  {O::kPreflight,            "Preflight",             kService,  kNoVerb,         S::kNone,              M::kAny,     kNone,      R::kNone,     kReads,  kAlone,       kInline,       AccountSas("", "")},
  {O::kResetAccount,         "ResetAccount",          kService,  kNoVerb,         S::kNone,              M::kAny,     kNone,      R::kNone,     kWrites, kAlone,       kPool,         kNoSas},
  {O::kFaults,               "Faults",                kService,  kNoVerb,         S::kNone,              M::kAny,     kNone,      R::kNone,     kWrites, kAlone,       kPool,         kNoSas},
  {O::kSnapshots,            "Snapshots",             kService,  kNoVerb,         S::kNone,              M::kAny,     kNone,      R::kNone,     kWrites, kAlone,       kPool,         kNoSas},
}};
// clang-format on

constexpr bool InOperationOrder() {
  for (size_t i = 0; i < kRoutes.size(); ++i) {
    if (static_cast<size_t>(kRoutes[i].op) != i) return false;
  }
  return static_cast<size_t>(Operation::kSnapshots) + 1 == kRoutes.size();
}
static_assert(InOperationOrder(), "kRoutes lists every Operation once, in order");

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
