// The per-request view the router builds and operations consume, and the
// immutable ServerContext shared by all requests.
// Thread-safety: ServerContext is immutable after main builds it (the Store
// is itself thread-safe); a Request belongs to one thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/formats/azure_error.h"
#include "server/formats/entity_json.h"
#include "server/protocol/auth.h"
#include "server/protocol/http_message.h"
#include "server/protocol/operation_table.h"
#include "storage/store.h"

namespace cerulean::server {

// Newest x-ms-version this server knows; sent when a request names none.
inline constexpr std::string_view kNewestVersion = "2025-11-05";
// The first version with JSON payloads, and the first without AtomPub
// (spec README §3).
inline constexpr std::string_view kFirstJsonVersion = "2013-08-15";
inline constexpr std::string_view kFirstAtomlessVersion = "2015-12-11";

class BlockingPool;
class Metrics;
class Logger;
class PagePrefetcher;
class FaultInjector;
class DocumentCache;
class BodyBudget;
class ResponseBudget;
class ResponseHold;
struct CorsRule;

struct ServerOptions {
  bool loose = false;
  bool skip_api_version_check = false;
  bool https = false;             // the listener speaks TLS (--cert)
  bool oauth = false;             // --oauth basic: bearer tokens accepted (over HTTPS)
  bool force_path_style = false;  // --disableProductStyleUrl
  bool explorer = true;           // /_explorer is served (off: --disableExplorer)
  bool public_metrics = false;    // /_metrics names every account to anyone (--publicMetrics)
};

struct ServerContext {
  storage::Store* store = nullptr;
  Accounts accounts;
  ServerOptions options;
  Metrics* metrics = nullptr;  // may be null
  // Renders Query Entities pages ahead of their request (needs
  // blocking_pool); may be null.
  PagePrefetcher* prefetcher = nullptr;
  Logger* logger = nullptr;  // may be null
  // Where requests that may block on storage run (long query pages, table
  // and document operations, each committing and syncing on its own; entity
  // writes go through Store::ApplyAsync instead), so that the I/O threads
  // keep serving meanwhile. Null: run on the I/O thread.
  BlockingPool* blocking_pool = nullptr;
  // Injected faults (faults.h); may be null.
  FaultInjector* faults = nullptr;
  // The CORS rules and stored access policies that routing, authentication
  // and response finishing use (document_cache.h); may be null: nothing is
  // cached, and every request that needs them reads them on the pool.
  DocumentCache* documents = nullptr;
  // The memory request bodies may hold across all connections
  // (body_budget.h); may be null: unbounded.
  BodyBudget* body_budget = nullptr;
  // The memory response bodies may hold across all connections
  // (response_budget.h); may be null: unbounded.
  ResponseBudget* response_budget = nullptr;
};

// What the request addresses, after the account segment.
enum class ResourceKind {
  kService,   // "/"
  kTables,    // "/Tables" or "/Tables()"
  kTable,     // "/Tables('name')"
  kBatch,     // "/$batch"
  kEntities,  // "/name" or "/name()"
  kEntity,    // "/name(PartitionKey='..',RowKey='..')"
};

struct ResourcePath {
  ResourceKind kind = ResourceKind::kService;
  std::string table;  // as written in the URL (decoded)
  std::string partition_key;
  std::string row_key;
};

// Decoded query parameters in order of appearance: views of the request
// target where a parameter needs no decoding (most do not), else of a buffer
// this object owns, so that a request makes no string per key and value
// (a SAS brings eight or nine parameters to every request it signs).
class QueryParams {
 public:
  QueryParams() = default;
  // Moving keeps the views valid (the buffers move with their addresses).
  QueryParams(QueryParams&&) = default;
  QueryParams& operator=(QueryParams&&) = default;

  // Adds the parameter encoded_key=encoded_value, decoded ('+' is a space,
  // %XX an octet). REQUIRES: both outlive this object (the request target).
  // False (and nothing added) if either has a '%' not followed by two hex
  // digits.
  bool AddEncoded(std::string_view encoded_key, std::string_view encoded_value);
  // Room for `n` parameters whose encoded keys and values total at most
  // `bytes` (allocated once a parameter needs decoding).
  void Reserve(size_t n, size_t bytes);
  // First value of `name`, or nullopt.
  std::optional<std::string_view> Get(std::string_view name) const;
  size_t Count(std::string_view name) const;
  const std::vector<std::pair<std::string_view, std::string_view>>& all() const { return params_; }

 private:
  // `encoded` decoded: itself when it has no '%' or '+', else a view of
  // decoded_; nullopt if malformed.
  std::optional<std::string_view> Decode(std::string_view encoded);

  std::vector<std::pair<std::string_view, std::string_view>> params_;
  // Decoded keys and values: chunks that never move once allocated, the
  // first sized by Reserve.
  std::vector<std::unique_ptr<char[]>> decoded_;
  char* decoded_next_ = nullptr;  // the free bytes of decoded_.back()
  size_t decoded_free_ = 0;
  size_t reserved_bytes_ = 0;  // Reserve's `bytes`, for the first chunk
};

// Every operation, in the order of the operation table (operation_table.h);
// its name and everything else about it: routes.h.
enum class Operation {
#define CERULEAN_OPERATION_ENUMERATOR(op, ...) op,
  CERULEAN_OPERATIONS(CERULEAN_OPERATION_ENUMERATOR)
#undef CERULEAN_OPERATION_ENUMERATOR
};

// Documents a request needs from storage that the caches did not hold when
// it was prepared (Request::missing_documents).
enum MissingDocument : unsigned {
  kMissingCors = 1u << 0,  // the account's CORS rules (DocumentCache::FindCors)
  kMissingAcl = 1u << 1,   // the stored access policies a SAS's `si` names
};

struct Request {
  explicit Request(HttpRequest& h) : http(h) {}
  HttpRequest& http;
  std::string request_id;
  std::string account;  // the owning (primary) account
  bool secondary = false;
  std::string base;      // {base}: scheme://host[/account]
  std::string raw_path;  // request-target path as received (still encoded)
  bool admin = false;    // a reserved /_ endpoint (raw_path says which)
  ResourcePath path;
  QueryParams query;
  std::string method;   // effective verb (after X-HTTP-Method)
  std::string version;  // effective service version
  Operation op = Operation::kQueryTables;
  Metadata format = Metadata::kMinimal;  // JSON metadata level, unless `atom`
  bool atom = false;                     // answer in AtomPub (versions before 2015-12-11)
  bool atom_body = false;                // the request body is an Atom entry
  bool xml_errors = false;               // answer errors as XML
  AuthGrant grant;                       // what the credentials allow
  std::string peer_address;
  // Requests in flight on the server when this one was read, itself
  // included: all an operation is told of the load (Query Entities renders
  // its next page ahead only when it is alone).
  int in_flight = 1;
  // What the answer holds from ctx.response_budget (response_budget.h):
  // the connection's hold, which a page being rendered grows. May be null.
  ResponseHold* response_hold = nullptr;
  // The injected fault, for the access log (faults.h); empty if none.
  std::string_view fault;
  // The account's CORS rules as cached when the request was prepared; null
  // when it has none (or they are missing).
  std::shared_ptr<const std::vector<CorsRule>> cors;
  // MissingDocument bits: what the caches lacked. The request then goes on
  // on the blocking pool, which reads them first (scheduler.cc); until
  // then a missing ACL leaves `grant` a service SAS that grants nothing.
  unsigned missing_documents = 0;
  // True where the request may wait on storage (the blocking pool, or a
  // server without one): documents the caches lack are read, not marked
  // missing.
  bool may_load_documents = false;
};

// Case-insensitive header value, or empty view.
std::string_view Header(const HttpRequest& req, std::string_view name);

// Response builders. Every response later gets the common headers
// (scheduler.cc, Finish).
HttpResponse MakeResponse(const Request& req, http::status status);
HttpResponse ErrorResponse(const Request& req, const ErrorReply& error);
HttpResponse JsonResponse(const Request& req, http::status status, std::string body);
HttpResponse AtomResponse(const Request& req, http::status status, std::string body);

}  // namespace cerulean::server
