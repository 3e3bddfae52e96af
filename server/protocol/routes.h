// The route table: every operation of the Table API, as its row of the
// operation table (operation_table.h) without the handler — the resource
// kind and verb that reach it, its name (access log, metrics, fault rules),
// the format of its request and response bodies, whether it writes, whether
// it may appear in a $batch change set, and where it runs. The router,
// $batch, authorization, the access log, metrics and fault injection all
// read it; nothing else routes. The handlers (operations/) sit in a layer
// above this one; the scheduler binds each operation to the handler of its
// row (http/scheduler.h, HandlerOf).
// Thread-safety: the table is immutable; every function may run on any thread.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "server/protocol/request.h"

namespace cerulean::server {

// Verbs as a bit set, so that a route can accept two spellings of one verb
// (MERGE and PATCH).
enum Verb : unsigned {
  kNoVerb = 0,
  kGet = 1u << 0,
  kPut = 1u << 1,
  kPost = 1u << 2,
  kDelete = 1u << 3,
  kMerge = 1u << 4,
  kPatch = 1u << 5,
};
// The Verb of an effective method name ("GET", ... after X-HTTP-Method), or
// kNoVerb if it is none of them.
Verb VerbOf(std::string_view method);

// What, beyond the resource kind and verb, selects the operation.
enum class Selector {
  kNone,               // nothing (comp and restype are ignored)
  kAcl,                // ?comp=acl
  kServiceProperties,  // ?restype=service&comp=properties
  kServiceStats,       // ?restype=service&comp=stats
};

// The If-Match header, where it tells two operations apart (Update Entity
// from Insert Or Replace Entity, for instance).
enum class IfMatch { kAny, kPresent, kAbsent };

// The request body an operation reads.
enum class BodyFormat {
  kNone,       // none, or ignored
  kOData,      // an OData JSON document, or an Atom entry before 2015-12-11
  kXml,        // an XML document (ACLs, service properties)
  kMultipart,  // a multipart/mixed $batch body
};

// The response body an operation answers with.
enum class ResponseFormat {
  kNone,       // none (headers only)
  kOData,      // OData JSON or an Atom feed/entry: $format and Accept must be met
  kXml,        // XML whatever was asked for
  kMultipart,  // multipart/mixed ($batch)
};

// Where an operation runs once prepared (routed, authenticated, negotiated).
enum class Runs {
  // On the I/O thread that read it: it reads one row or none.
  kInline,
  // On the I/O thread when its answer is short, else it hands what it has
  // already parsed and planned (a PendingRead) to the blocking pool.
  kInlineOrPool,
  // Parsed on the I/O thread; its write (a PendingWrite) is committed
  // through Store::ApplyAsync, sharing a commit with concurrent writes.
  kCommit,
  // On the blocking pool: it may scan, or commit and sync on its own.
  kPool,
};

// What a shared access signature must grant to reach an operation
// (auth.cc, Authorize). Permissions are written as groups separated by
// spaces, each satisfied by any one of its letters: "lr" needs l or r,
// "a u" needs a and u, "" needs nothing.
struct SasRule {
  bool table_sas;                  // a table (service) SAS may reach it
  std::string_view table_perms;    // what that SAS's sp must hold
  bool account_sas;                // an account SAS may reach it
  std::string_view account_types;  // any one of these srt letters ("": none needed)
  std::string_view account_perms;  // what that SAS's sp must hold
};

struct Route {
  Operation op;
  std::string_view name;  // as in the access log, metrics and fault rules
  ResourceKind kind;
  unsigned verbs;  // Verb bits
  Selector selector;
  IfMatch if_match;
  BodyFormat body;
  ResponseFormat response;
  bool write;         // changes state (refused on the secondary endpoint)
  bool in_changeset;  // may appear in a $batch change set
  Runs runs;
  SasRule sas;
};

// Every route, in the order of Operation (RouteOf indexes it). The reserved
// operations (Preflight and the /_ endpoints) have no verb and no handler: the
// router answers them before routing (Preflight) or by path (AdminRuns).
std::span<const Route> AllRoutes();

// The route of `op`.
const Route& RouteOf(Operation op);
inline std::string_view OperationName(Operation op) { return RouteOf(op).name; }
// Insert, Update, Merge, Delete Entity and the two upserts: the operations
// a change set may hold.
inline bool IsEntityWrite(Operation op) { return RouteOf(op).in_changeset; }

// Replaces *method (the request's) with the one X-HTTP-Method `value`
// tunnels through a POST (operations.md §4.8), or returns the error.
std::optional<ErrorReply> TunnelMethod(std::string_view value, std::string_view* method);

// What selects a route besides its resource.
struct RouteKey {
  ResourceKind kind = ResourceKind::kService;
  std::string_view method;                  // effective verb (after X-HTTP-Method)
  std::optional<std::string_view> comp;     // ?comp=
  std::optional<std::string_view> restype;  // ?restype=
  bool has_if_match = false;
};

// Finds the route of a request (errors-limits.md §3.1): its route, or the
// error Azure answers — InvalidQueryParameterValue for a comp/restype the
// resource does not have, MethodNotAllowed for a verb it does not take.
std::optional<ErrorReply> FindRoute(const RouteKey& key, const Route** out);

// Where the reserved endpoint at (still encoded) path `raw_path` runs:
// kInline, or kPool for the ones that may count, copy or wipe entities.
Runs AdminRuns(std::string_view raw_path);

}  // namespace cerulean::server
