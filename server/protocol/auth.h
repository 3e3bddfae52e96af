// Accounts and request authentication: Shared Key, Shared Key Lite, account
// SAS and table (service) SAS, and the authorization of an operation under
// the credentials presented.
// Thread-safety: Accounts is immutable after construction; functions are pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/formats/acl_xml.h"
#include "server/formats/azure_error.h"
#include "storage/key_range.h"

namespace cerulean::server {

// The development account and its well-known key.
inline constexpr std::string_view kDevAccount = "devstoreaccount1";
inline constexpr std::string_view kDevAccountKey =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

struct Account {
  std::string name;
  std::vector<std::string> keys;  // decoded key bytes
};

class Accounts {
 public:
  // devstoreaccount1 plus the accounts of an AZURITE_ACCOUNTS-style spec
  // ("name:key1[:key2];name2:key1"). Returns false on a malformed spec.
  bool AddDefault();
  bool AddFromSpec(std::string_view spec, std::string* error);
  const Account* Find(std::string_view name) const;
  const std::vector<Account>& all() const { return accounts_; }

 private:
  std::vector<Account> accounts_;
};

// What the presented credentials allow.
struct AuthGrant {
  enum class Kind {
    kSharedKey,
    kSharedKeyLite,
    kAccountSas,
    kServiceSas,
    kBearer
  } kind = Kind::kSharedKey;
  std::string permissions;     // sp (SAS)
  std::string resource_types;  // srt (account SAS)
  std::string table;           // tn (service SAS), lower case
  // The service SAS key range, each bound set iff its field was given
  // (srk only with spk, erk only with epk).
  std::optional<std::string> spk, srk, epk, erk;
  // True iff (pk, rk) is inside the SAS key range (always for non-SAS).
  bool InRange(const std::string& pk, const std::string& rk) const;
  bool HasRange() const { return spk || epk; }
  // The SAS key range as one interval of the (PartitionKey, RowKey) order:
  // Range().Contains(pk, rk) == InRange(pk, rk).
  storage::KeyRange Range() const;
  // True iff the credentials reach the entities of `table`: any but a
  // service SAS for another table, or an account SAS without entities
  // (srt without 'o'). Whether such a table exists is not the caller's to
  // learn.
  bool ReachesTable(std::string_view table) const;
};

// True iff `grant` may use the reserved admin endpoints (/_reset, /_faults,
// /_snapshots, and /_metrics beyond its public part): full Shared Key only.
// Shared Key Lite does not sign the verb, so a captured Lite-signed GET
// would replay as a PUT or DELETE; SAS and bearer tokens grant the Table API
// only.
bool GrantsAdmin(const AuthGrant& grant);

struct Request;
struct ServerContext;
enum class Operation;

// Verifies the request's credentials and fills req->grant. The stored
// access policies a service SAS names with `si` come from ctx.documents;
// when it lacks them they are read from the store if req->may_load_documents,
// else they are marked missing (req->missing_documents) and the grant is a
// service SAS that grants nothing.
std::optional<ErrorReply> Authenticate(const ServerContext& ctx, Request* req);

// Checks that req->grant permits `op` on `table` (empty for service-level
// operations).
std::optional<ErrorReply> Authorize(const Request& req, Operation op, std::string_view table);

// For a reserved endpoint whose path names no account (/_metrics): verifies
// the Authorization header as Authenticate does, for the account the header
// names (canonical resource /{account}{path}), then GrantsAdmin. Sets
// *account on success. REQUIRES: the request carries an Authorization
// header.
std::optional<ErrorReply> AuthenticateSigner(const ServerContext& ctx, const Request& req,
                                             std::string* account);

// String-to-sign helpers (exposed for tests).
std::string SharedKeyStringToSign(std::string_view verb, std::string_view content_md5,
                                  std::string_view content_type, std::string_view date,
                                  std::string_view canonical_resource);
std::string SharedKeyLiteStringToSign(std::string_view date, std::string_view canonical_resource);
// Base64 HMAC-SHA256 of `string_to_sign` under decoded `key`.
std::string Sign(std::string_view key, std::string_view string_to_sign);

}  // namespace cerulean::server
