// Table-driven tests of the route table: every verb on every resource, with
// the operation it reaches (and its name, read or write, where it runs), or
// the error Azure answers.
#include "server/protocol/routes.h"

#include <doctest/doctest.h>

#include <set>
#include <string>

namespace cerulean::server {

namespace {

using K = ResourceKind;
using Op = Operation;

struct Case {
  K kind;
  std::string_view method;
  std::optional<std::string_view> comp;
  std::optional<std::string_view> restype;
  bool if_match;
  // Either the operation reached...
  std::optional<Op> op;
  std::string_view name;
  bool write;
  Runs runs;
  // ...or the error.
  AzureError error = AzureError::kInternalError;
};

constexpr auto kNo = std::nullopt;

Case Reaches(K kind, std::string_view method, bool if_match, Op op, std::string_view name,
             bool write, Runs runs, std::optional<std::string_view> comp = kNo,
             std::optional<std::string_view> restype = kNo) {
  return Case{kind, method, comp, restype, if_match, op, name, write, runs};
}

Case Fails(K kind, std::string_view method, AzureError error,
           std::optional<std::string_view> comp = kNo,
           std::optional<std::string_view> restype = kNo) {
  return Case{kind, method, comp, restype, false, kNo, "", false, Runs::kInline, error};
}

std::string Describe(const Case& c) {
  return std::string(c.method) + " kind " + std::to_string(static_cast<int>(c.kind)) +
         " comp=" + std::string(c.comp.value_or("-")) +
         " restype=" + std::string(c.restype.value_or("-")) + (c.if_match ? " If-Match" : "");
}

}  // namespace

TEST_CASE("every verb on every resource reaches its operation or Azure's error") {
  using enum Runs;
  const AzureError kNotAllowed = AzureError::kMethodNotAllowed;
  const AzureError kBadParam = AzureError::kInvalidQueryParameterValue;
  const Case cases[] = {
      // /  (the service)
      Reaches(K::kService, "GET", false, Op::kGetServiceProperties, "GetServiceProperties", false,
              kPool, "properties", "service"),
      Reaches(K::kService, "PUT", false, Op::kSetServiceProperties, "SetServiceProperties", true,
              kPool, "properties", "service"),
      Fails(K::kService, "POST", kNotAllowed, "properties", "service"),
      Fails(K::kService, "DELETE", kNotAllowed, "properties", "service"),
      Reaches(K::kService, "GET", false, Op::kGetServiceStats, "GetServiceStats", false, kPool,
              "stats", "service"),
      Fails(K::kService, "PUT", kNotAllowed, "stats", "service"),
      Fails(K::kService, "GET", kBadParam),
      Fails(K::kService, "GET", kBadParam, "properties"),
      Fails(K::kService, "GET", kBadParam, "acl", "service"),
      Fails(K::kService, "DELETE", kBadParam),
      // /Tables
      Reaches(K::kTables, "GET", false, Op::kQueryTables, "QueryTables", false, kPool),
      Reaches(K::kTables, "POST", false, Op::kCreateTable, "CreateTable", true, kPool),
      Reaches(K::kTables, "GET", false, Op::kQueryTables, "QueryTables", false, kPool, "acl"),
      Fails(K::kTables, "PUT", kNotAllowed),
      Fails(K::kTables, "DELETE", kNotAllowed),
      Fails(K::kTables, "MERGE", kNotAllowed),
      // /Tables('t')
      Reaches(K::kTable, "GET", false, Op::kGetTable, "GetTable", false, kPool),
      Reaches(K::kTable, "DELETE", false, Op::kDeleteTable, "DeleteTable", true, kPool),
      Fails(K::kTable, "POST", kNotAllowed),
      Fails(K::kTable, "PUT", kNotAllowed),
      Fails(K::kTable, "PATCH", kNotAllowed),
      // /$batch
      Reaches(K::kBatch, "POST", false, Op::kBatch, "Batch", true, kCommit),
      Fails(K::kBatch, "GET", kNotAllowed),
      Fails(K::kBatch, "PUT", kNotAllowed),
      // /t
      Reaches(K::kEntities, "GET", false, Op::kQueryEntities, "QueryEntities", false,
              kInlineOrPool),
      Reaches(K::kEntities, "POST", false, Op::kInsertEntity, "InsertEntity", true, kCommit),
      Reaches(K::kEntities, "POST", true, Op::kInsertEntity, "InsertEntity", true, kCommit),
      Fails(K::kEntities, "PUT", kNotAllowed),
      Fails(K::kEntities, "DELETE", kNotAllowed),
      Fails(K::kEntities, "MERGE", kNotAllowed),
      // /t?comp=acl
      Reaches(K::kEntities, "GET", false, Op::kGetTableAcl, "GetTableAcl", false, kPool, "acl"),
      Reaches(K::kEntities, "PUT", false, Op::kSetTableAcl, "SetTableAcl", true, kPool, "acl"),
      Fails(K::kEntities, "POST", kNotAllowed, "acl"),
      Fails(K::kEntities, "DELETE", kNotAllowed, "acl"),
      Fails(K::kEntities, "GET", kBadParam, "stats"),
      Fails(K::kEntities, "PUT", kBadParam, ""),
      // /t(PartitionKey='a',RowKey='b')
      Reaches(K::kEntity, "GET", false, Op::kGetEntity, "GetEntity", false, kInline),
      Reaches(K::kEntity, "GET", true, Op::kGetEntity, "GetEntity", false, kInline),
      Reaches(K::kEntity, "PUT", true, Op::kUpdateEntity, "UpdateEntity", true, kCommit),
      Reaches(K::kEntity, "PUT", false, Op::kInsertOrReplace, "InsertOrReplaceEntity", true,
              kCommit),
      Reaches(K::kEntity, "MERGE", true, Op::kMergeEntity, "MergeEntity", true, kCommit),
      Reaches(K::kEntity, "PATCH", true, Op::kMergeEntity, "MergeEntity", true, kCommit),
      Reaches(K::kEntity, "MERGE", false, Op::kInsertOrMerge, "InsertOrMergeEntity", true, kCommit),
      Reaches(K::kEntity, "PATCH", false, Op::kInsertOrMerge, "InsertOrMergeEntity", true, kCommit),
      Reaches(K::kEntity, "DELETE", true, Op::kDeleteEntity, "DeleteEntity", true, kCommit),
      // Without If-Match a delete still routes; the operation refuses it.
      Reaches(K::kEntity, "DELETE", false, Op::kDeleteEntity, "DeleteEntity", true, kCommit),
      Fails(K::kEntity, "POST", kNotAllowed),
      // Verbs no route takes, and spellings that are not verbs.
      Fails(K::kEntity, "HEAD", kNotAllowed),
      Fails(K::kEntity, "OPTIONS", kNotAllowed),
      Fails(K::kEntity, "get", kNotAllowed),
      Fails(K::kTables, "TRACE", kNotAllowed),
      Fails(K::kEntities, "", kNotAllowed),
  };
  for (const Case& c : cases) {
    CAPTURE(Describe(c));
    const Route* route = nullptr;
    auto err = FindRoute(RouteKey{c.kind, c.method, c.comp, c.restype, c.if_match}, &route);
    if (c.op) {
      REQUIRE_FALSE(err);
      REQUIRE(route != nullptr);
      CHECK(route->op == *c.op);
      CHECK(route->name == c.name);
      CHECK(OperationName(route->op) == c.name);
      CHECK(route->write == c.write);
      CHECK(route->runs == c.runs);
    } else {
      REQUIRE(err);
      CHECK(err->error == c.error);
    }
  }
}

// That the table lists every Operation once, in order, follows from its
// construction: the enum and the rows expand the same X-macro
// (operation_table.h).
TEST_CASE("every operation has a unique name; only those answered outside the table lack a verb") {
  std::set<std::string_view> names;
  for (const Route& r : AllRoutes()) {
    CAPTURE(r.name);
    CHECK(names.insert(r.name).second);
    const bool reserved = r.op == Op::kPreflight || r.op == Op::kResetAccount ||
                          r.op == Op::kFaults || r.op == Op::kSnapshots;
    CHECK((r.verbs == kNoVerb) == reserved);
  }
}

TEST_CASE("the change set operations are the entity writes") {
  for (const Route& r : AllRoutes()) {
    CAPTURE(r.name);
    const bool entity_write = r.op == Op::kInsertEntity || r.op == Op::kUpdateEntity ||
                              r.op == Op::kMergeEntity || r.op == Op::kDeleteEntity ||
                              r.op == Op::kInsertOrReplace || r.op == Op::kInsertOrMerge;
    CHECK(r.in_changeset == entity_write);
    CHECK(IsEntityWrite(r.op) == entity_write);
    if (entity_write) CHECK(r.write);
    if (entity_write) CHECK(r.runs == Runs::kCommit);
  }
}

TEST_CASE("a table SAS reaches entities and batches only; no SAS reaches ACLs") {
  for (const Route& r : AllRoutes()) {
    CAPTURE(r.name);
    CHECK(r.sas.table_sas == (r.in_changeset || r.op == Op::kBatch || r.op == Op::kQueryEntities ||
                              r.op == Op::kGetEntity));
    if (r.selector == Selector::kAcl) CHECK_FALSE(r.sas.account_sas);
    if (r.sas.table_sas) CHECK(r.sas.account_types == "o");
  }
  CHECK(RouteOf(Op::kInsertOrMerge).sas.table_perms == "a u");
  CHECK(RouteOf(Op::kQueryTables).sas.account_perms == "lr");
}

TEST_CASE("bodies and responses: what content negotiation and Content-Type checks apply to") {
  // An OData request body must say it is JSON (or Atom before 2015-12-11).
  std::set<Op> odata_bodies;
  std::set<Op> odata_responses;
  for (const Route& r : AllRoutes()) {
    if (r.body == BodyFormat::kOData) odata_bodies.insert(r.op);
    if (r.response == ResponseFormat::kOData) odata_responses.insert(r.op);
  }
  CHECK(odata_bodies == std::set<Op>{Op::kCreateTable, Op::kInsertEntity, Op::kUpdateEntity,
                                     Op::kMergeEntity, Op::kInsertOrReplace, Op::kInsertOrMerge});
  CHECK(odata_responses == std::set<Op>{Op::kQueryTables, Op::kGetTable, Op::kCreateTable,
                                        Op::kQueryEntities, Op::kGetEntity, Op::kInsertEntity});
  CHECK(RouteOf(Op::kBatch).body == BodyFormat::kMultipart);
  CHECK(RouteOf(Op::kBatch).response == ResponseFormat::kMultipart);
  CHECK(RouteOf(Op::kSetTableAcl).body == BodyFormat::kXml);
  CHECK(RouteOf(Op::kGetServiceStats).response == ResponseFormat::kXml);
}

TEST_CASE("X-HTTP-Method tunnels four verbs through a POST") {
  for (std::string_view verb : {"MERGE", "PUT", "DELETE", "PATCH"}) {
    std::string_view method = "POST";
    CHECK_FALSE(TunnelMethod(verb, &method));
    CHECK(method == verb);
  }
  std::string_view method = "POST";
  CHECK(TunnelMethod("GET", &method)->error == AzureError::kXMethodIncorrectValue);
  CHECK(TunnelMethod("merge", &method)->error == AzureError::kXMethodIncorrectValue);
  method = "PUT";
  CHECK(TunnelMethod("MERGE", &method)->error == AzureError::kXMethodNotUsingPost);
}

TEST_CASE("the reserved endpoints that may scan or write run on the pool") {
  struct AdminCase {
    std::string_view path;
    Runs runs;
  };
  const AdminCase cases[] = {
      {"/_health", Runs::kInline},
      {"/_explorer", Runs::kInline},
      {"/_unknown", Runs::kInline},
      {"/_metrics", Runs::kPool},
      {"/_snapshots/acct", Runs::kPool},
      {"/_snapshots/acct/s1/restore", Runs::kPool},
      {"/_reset/devstoreaccount1", Runs::kPool},
      {"/_faults/devstoreaccount1", Runs::kPool},
  };
  for (const AdminCase& c : cases) {
    CAPTURE(c.path);
    CHECK(AdminRuns(c.path) == c.runs);
  }
}

}  // namespace cerulean::server
