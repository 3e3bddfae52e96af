// The operation table: every operation of the Table API, one row each, in
// one place. A row holds all the server knows about an operation: its
// Operation value, its name (access log, metrics, fault rules), the
// resource kind, verbs, selector and If-Match that reach it, the format of
// its request and response bodies, whether it writes, whether a $batch
// change set may hold it, where it runs, what a SAS must grant to reach it,
// and its handler.
//
// The table is an X-macro so that each layer takes the columns it may see
// and no layer repeats a row: request.h makes the Operation enum of the
// first column, routes.cc the Route table (all columns but the handler),
// and the scheduler (http/scheduler.cc, above the operations it binds) the
// handler of each Operation. Adding an operation is its row here, its
// handler (operations/) and its test; the number of operations follows.
//
// Columns, as routes.h names them (Route): op, name, kind, verbs, selector,
// if_match, body, response, write, in_changeset, runs, sas, handler. The
// reserved operations (Preflight and the /_ endpoints) have no verb and no
// handler (nullptr): the router answers them before routing (Preflight) or
// by path (operations/admin.h, HandleAdmin).
// Thread-safety: compile-time data.
#pragma once

// clang-format off
#define CERULEAN_OPERATIONS(X) \
  /* op                   name                     resource   verbs            selector               If-Match     body        response       write    change set    runs           SAS                     handler */ \
  X(kQueryTables,          "QueryTables",           kTables,   kGet,            S::kNone,              M::kAny,     kNone,      R::kOData,     kReads,  kAlone,       kPool,         AccountSas("cs", "lr"), QueryTables) \
  X(kGetTable,             "GetTable",              kTable,    kGet,            S::kNone,              M::kAny,     kNone,      R::kOData,     kReads,  kAlone,       kPool,         AccountSas("cs", "lr"), GetTable) \
  X(kCreateTable,          "CreateTable",           kTables,   kPost,           S::kNone,              M::kAny,     kOData,     R::kOData,     kWrites, kAlone,       kPool,         AccountSas("c", "cw"),  CreateTable) \
  X(kDeleteTable,          "DeleteTable",           kTable,    kDelete,         S::kNone,              M::kAny,     kNone,      R::kNone,      kWrites, kAlone,       kPool,         AccountSas("c", "d"),   DeleteTable) \
  X(kQueryEntities,        "QueryEntities",         kEntities, kGet,            S::kNone,              M::kAny,     kNone,      R::kOData,     kReads,  kAlone,       kInlineOrPool, EntitySas("r"),         QueryEntities) \
  X(kGetEntity,            "GetEntity",             kEntity,   kGet,            S::kNone,              M::kAny,     kNone,      R::kOData,     kReads,  kAlone,       kInline,       EntitySas("r"),         GetEntity) \
  X(kInsertEntity,         "InsertEntity",          kEntities, kPost,           S::kNone,              M::kAny,     kOData,     R::kOData,     kWrites, kInChangeset, kCommit,       EntitySas("a"),         WriteEntity) \
  X(kUpdateEntity,         "UpdateEntity",          kEntity,   kPut,            S::kNone,              M::kPresent, kOData,     R::kNone,      kWrites, kInChangeset, kCommit,       EntitySas("u"),         WriteEntity) \
  X(kMergeEntity,          "MergeEntity",           kEntity,   kMerge | kPatch, S::kNone,              M::kPresent, kOData,     R::kNone,      kWrites, kInChangeset, kCommit,       EntitySas("u"),         WriteEntity) \
  X(kDeleteEntity,         "DeleteEntity",          kEntity,   kDelete,         S::kNone,              M::kAny,     kNone,      R::kNone,      kWrites, kInChangeset, kCommit,       EntitySas("d"),         WriteEntity) \
  X(kInsertOrReplace,      "InsertOrReplaceEntity", kEntity,   kPut,            S::kNone,              M::kAbsent,  kOData,     R::kNone,      kWrites, kInChangeset, kCommit,       EntitySas("a u"),       WriteEntity) \
  X(kInsertOrMerge,        "InsertOrMergeEntity",   kEntity,   kMerge | kPatch, S::kNone,              M::kAbsent,  kOData,     R::kNone,      kWrites, kInChangeset, kCommit,       EntitySas("a u"),       WriteEntity) \
  X(kBatch,                "Batch",                 kBatch,    kPost,           S::kNone,              M::kAny,     kMultipart, R::kMultipart, kWrites, kAlone,       kCommit,       EntitySas(""),          Batch) \
  X(kGetTableAcl,          "GetTableAcl",           kEntities, kGet,            S::kAcl,               M::kAny,     kNone,      R::kXml,       kReads,  kAlone,       kPool,         kNoSas,                 GetTableAcl) \
  X(kSetTableAcl,          "SetTableAcl",           kEntities, kPut,            S::kAcl,               M::kAny,     kXml,       R::kNone,      kWrites, kAlone,       kPool,         kNoSas,                 SetTableAcl) \
  X(kGetServiceProperties, "GetServiceProperties",  kService,  kGet,            S::kServiceProperties, M::kAny,     kNone,      R::kXml,       kReads,  kAlone,       kPool,         AccountSas("s", "r"),   GetServiceProperties) \
  X(kSetServiceProperties, "SetServiceProperties",  kService,  kPut,            S::kServiceProperties, M::kAny,     kXml,       R::kNone,      kWrites, kAlone,       kPool,         AccountSas("s", "w"),   SetServiceProperties) \
  X(kGetServiceStats,      "GetServiceStats",       kService,  kGet,            S::kServiceStats,      M::kAny,     kNone,      R::kXml,       kReads,  kAlone,       kPool,         AccountSas("s", "r"),   GetServiceStats) \
  /* Answered before routing (OPTIONS) or by path (/_...): no verb, no handler. */ \
  X(kPreflight,            "Preflight",             kService,  kNoVerb,         S::kNone,              M::kAny,     kNone,      R::kNone,      kReads,  kAlone,       kInline,       AccountSas("", ""),     nullptr) \
  X(kResetAccount,         "ResetAccount",          kService,  kNoVerb,         S::kNone,              M::kAny,     kNone,      R::kNone,      kWrites, kAlone,       kPool,         kNoSas,                 nullptr) /* POST /_reset/{account} */ \
  X(kFaults,               "Faults",                kService,  kNoVerb,         S::kNone,              M::kAny,     kNone,      R::kNone,      kWrites, kAlone,       kPool,         kNoSas,                 nullptr) /* /_faults/{account} */ \
  X(kSnapshots,            "Snapshots",             kService,  kNoVerb,         S::kNone,              M::kAny,     kNone,      R::kNone,      kWrites, kAlone,       kPool,         kNoSas,                 nullptr) /* /_snapshots/{account}[/{name}[/restore]] */
// clang-format on
