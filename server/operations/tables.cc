// Table operations: Query Tables, Get Table, Create Table, Delete Table, and
// the table ACL.
#include "server/formats/acl_xml.h"
#include "server/formats/ascii.h"
#include "server/formats/entity_atom.h"
#include "server/formats/entity_rules.h"
#include "server/formats/escape.h"
#include "server/operations/operations.h"
#include "server/protocol/document_cache.h"
#include "server/protocol/query_options.h"

namespace cerulean::server {

namespace {

JsonContext TableJsonContext(const Request& req) {
  return JsonContext{req.base, req.account, "Tables", req.format};
}

HttpResponse StatusError(const Request& req, const storage::Status& s) {
  return ErrorResponse(req, FromStatus(s));
}

// One table as a response body: JSON at the negotiated level, or an Atom
// entry (payload.md §6.5).
HttpResponse TableResponse(const Request& req, http::status status, std::string_view name) {
  std::string body;
  if (req.atom) {
    AppendTableAtom(&body, name, MakeAtomContext(req.base, req.account, "Tables"), true);
    return AtomResponse(req, status, std::move(body));
  }
  AppendTableJson(&body, name, TableJsonContext(req), true);
  return JsonResponse(req, status, std::move(body));
}

// A Query Tables page in JSON.
std::string TableFeedJson(const Request& req, const std::vector<std::string>& names) {
  JsonContext jc = TableJsonContext(req);
  std::string body = "{";
  if (req.format != Metadata::kNone) {
    body += "\"odata.metadata\":";
    AppendJsonString(&body, req.base + "/$metadata#Tables");
    body += ',';
  }
  body += "\"value\":[";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) body += ',';
    AppendTableJson(&body, names[i], jc, false);
  }
  body += "]}";
  return body;
}

// A Query Tables page as an Atom feed.
std::string TableFeedAtom(const Request& req, const std::vector<std::string>& names) {
  AtomContext ac = MakeAtomContext(req.base, req.account, "Tables");
  std::string body;
  AppendAtomFeedStart(&body, ac, names.empty());
  for (const auto& name : names) AppendTableAtom(&body, name, ac, false);
  AppendAtomFeedEnd(&body);
  return body;
}

}  // namespace

HttpResponse QueryTables(const ServerContext& ctx, Request& req) {
  QueryOptions opts;
  if (auto err = ParseQueryOptions(ctx, req, &opts)) return ErrorResponse(req, *err);
  if (opts.top == 0) return ErrorResponse(req, ErrorReply(AzureError::kInvalidInput));
  if (opts.select) {
    for (const auto& name : *opts.select) {
      if (name != "TableName") return ErrorResponse(req, ErrorReply(AzureError::kInvalidInput));
    }
  }
  // TableName is the only property of a table (operations.md §1.1).
  if (opts.filter) {
    for (const auto& name : odata::ReferencedProperties(*opts.filter)) {
      if (name != "TableName") return ErrorResponse(req, ErrorReply(AzureError::kInvalidInput));
    }
  }
  std::vector<std::string> names;
  std::optional<std::string> next;
  storage::Status s = ctx.store->ScanTables(
      req.account, opts.next_table_name.value_or(""), [&](const std::string& name) {
        if (opts.filter && !odata::MatchesTable(*opts.filter, name)) return true;
        if (names.size() == opts.top) {
          next = name;
          return false;
        }
        names.push_back(name);
        return true;
      });
  if (!s.ok()) return StatusError(req, s);
  HttpResponse res = req.atom ? AtomResponse(req, http::status::ok, TableFeedAtom(req, names))
                              : JsonResponse(req, http::status::ok, TableFeedJson(req, names));
  if (next) res.set("x-ms-continuation-NextTableName", EncodeContinuation(*next));
  return res;
}

HttpResponse GetTable(const ServerContext& ctx, Request& req) {
  auto name = ctx.store->GetTable(req.account, req.path.table);
  if (!name.ok()) return ErrorResponse(req, FromStatus(name.status(), Addressed::kTableEntry));
  return TableResponse(req, http::status::ok, *name);
}

HttpResponse CreateTable(const ServerContext& ctx, Request& req) {
  std::string name;
  auto err = req.atom_body ? ParseAtomTableBody(req.http.body(), &name)
                           : ParseTableBody(req.http.body(), &name);
  if (err) return ErrorResponse(req, *err);
  if (auto err = ValidateTableName(name)) return ErrorResponse(req, *err);
  storage::Status s = ctx.store->CreateTable(req.account, name);
  if (!s.ok()) return StatusError(req, s);
  std::string location = req.base + "/Tables('" + name + "')";
  std::string_view prefer = Header(req.http, "Prefer");
  if (prefer == "return-no-content") {
    HttpResponse res = MakeResponse(req, http::status::no_content);
    res.set("Location", location);
    res.set("DataServiceId", location);
    res.set("Preference-Applied", "return-no-content");
    return res;
  }
  HttpResponse res = TableResponse(req, http::status::created, name);
  res.set("Location", location);
  if (prefer == "return-content") res.set("Preference-Applied", "return-content");
  return res;
}

HttpResponse DeleteTable(const ServerContext& ctx, Request& req) {
  storage::Status s = ctx.store->DeleteTable(req.account, req.path.table);
  // A table created again under the name starts without stored policies.
  if (ctx.documents != nullptr) ctx.documents->InvalidateAcl(req.account, req.path.table);
  if (!s.ok()) return ErrorResponse(req, FromStatus(s, Addressed::kTableEntry));
  return MakeResponse(req, http::status::no_content);
}

HttpResponse GetTableAcl(const ServerContext& ctx, Request& req) {
  req.xml_errors = true;
  // Read from the store, refreshing the cached policies (SAS with `si`).
  auto policies = ctx.documents != nullptr
                      ? ctx.documents->ReadAcl(*ctx.store, req.account, req.path.table)
                      : LoadAcl(nullptr, *ctx.store, req.account, req.path.table);
  if (!policies.ok()) return StatusError(req, policies.status());
  HttpResponse res = MakeResponse(req, http::status::ok);
  res.set("Content-Type", "application/xml");
  res.body() = *policies ? AclToXml(**policies) : AclToXml({});
  return res;
}

HttpResponse SetTableAcl(const ServerContext& ctx, Request& req) {
  req.xml_errors = true;
  std::vector<AccessPolicy> policies;
  if (auto err = ParseAclXml(req.http.body(), &policies)) return ErrorResponse(req, *err);
  storage::Status s = ctx.store->SetTableAcl(req.account, req.path.table, AclToXml(policies));
  if (ctx.documents != nullptr) ctx.documents->InvalidateAcl(req.account, req.path.table);
  if (!s.ok()) return StatusError(req, s);
  return MakeResponse(req, http::status::no_content);
}

}  // namespace cerulean::server
