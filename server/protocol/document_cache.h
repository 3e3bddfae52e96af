// The documents that routing, authentication and response finishing need
// from storage, cached so that no I/O thread reads them: each account's
// CORS rules (its service properties; preflights, and the CORS headers and
// Vary of every response) and each table's stored access policies (a
// service SAS with `si`).
//
// Lookups (FindCors, FindAcl) never wait. A request whose lookup misses is
// continued on the blocking pool (scheduler.cc), which reads the document
// (LoadCors, LoadAcl) and caches it. Staleness:
//  - a write of this node (Set Table ACL, Delete Table, Set Service
//    Properties, /_reset, a snapshot restore) invalidates the entries it
//    changes at once, so one node is always exact;
//  - with Options::max_age set (main.cc sets it for the PostgreSQL store,
//    whose database other nodes write too) an entry is used for at most
//    that long after it was read, then read again; a Get Table ACL or Get
//    Service Properties served by this node refreshes it too;
//  - when the store cannot be read, the entry read last (if any) stays in
//    use and is tried again max_age later: preflights and SAS of accounts
//    already seen keep working while the database is away.
// Bounds: one CORS entry per configured account (the accounts are fixed at
// start-up; an account the cache was not built with is never cached), and
// at most Options::max_tables_per_account ACL entries per account, each of
// at most five policies (ParseAclXml). `/_metrics` shows both counts.
// Thread-safety: every method may be called concurrently from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/protocol/auth.h"
#include "server/protocol/service_properties.h"
#include "storage/status.h"

namespace cerulean::storage {
class Store;
}  // namespace cerulean::storage

namespace cerulean::server {

class DocumentCache {
 public:
  using Policies = std::vector<AccessPolicy>;

  struct Options {
    // How long an entry is used after it was read; zero: until this node
    // invalidates it.
    std::chrono::milliseconds max_age{0};
    // ACL entries kept per account; a new one beyond replaces an arbitrary
    // one.
    size_t max_tables_per_account = 1024;
    // The monotonic clock in milliseconds (tests replace it); null: the
    // coarse monotonic clock.
    std::int64_t (*now_ms)() = nullptr;
  };

  // One CORS entry per account of `accounts` (as it is now).
  explicit DocumentCache(const Accounts& accounts, Options options);
  ~DocumentCache();
  DocumentCache(const DocumentCache&) = delete;
  DocumentCache& operator=(const DocumentCache&) = delete;

  // True iff the CORS rules of `account` are cached and fresh; *rules is
  // then null when the account has none. Never waits (no lock when the
  // account has no rules).
  bool FindCors(std::string_view account, std::shared_ptr<const CorsRules>* rules) const;
  // True iff the stored access policies of `table` (any letter case) in
  // `account` are cached and fresh; *policies is then null when it has
  // none. Never waits on storage.
  bool FindAcl(std::string_view account, std::string_view table,
               std::shared_ptr<const Policies>* policies) const;

  // Reads the service properties of `account` from `store` (waits on it)
  // into *props and caches their CORS rules.
  storage::Status ReadServiceProperties(storage::Store& store, const std::string& account,
                                        ServiceProperties* props);
  // The CORS rules of `account`, read from `store` (waits on it) and
  // cached; if the store cannot be read, the rules read last (or none).
  std::shared_ptr<const CorsRules> LoadCors(storage::Store& store, const std::string& account);
  // Reads the stored access policies of `table` from `store` (waits on
  // it) and caches them: the policies (null: none), kTableNotFound (cached
  // as none) or the store's error.
  storage::Result<std::shared_ptr<const Policies>> ReadAcl(storage::Store& store,
                                                           const std::string& account,
                                                           const std::string& table);
  // ReadAcl, except that if the store cannot be read the policies read
  // last are returned when there are any.
  storage::Result<std::shared_ptr<const Policies>> LoadAcl(storage::Store& store,
                                                           const std::string& account,
                                                           const std::string& table);

  // Drops what this node has just changed in the store. REQUIRES: called
  // after the change is committed, so that a read that began before it
  // cannot put the old value back.
  void InvalidateCors(std::string_view account);
  void InvalidateAcl(std::string_view account, std::string_view table);
  void InvalidateAccount(std::string_view account);

  // Entries held, as Prometheus gauges (/_metrics).
  std::string RenderMetrics() const;

 private:
  struct Slot;
  Slot* FindSlot(std::string_view account) const;
  std::int64_t Now() const;
  // The time an entry read now stops being used.
  std::int64_t ExpiryFromNow() const;
  void PutCors(Slot& slot, std::uint64_t generation, std::shared_ptr<const CorsRules> rules);
  void PutAcl(Slot& slot, std::uint64_t generation, std::string table_key,
              std::shared_ptr<const Policies> policies);

  const Options options_;
  std::vector<std::unique_ptr<Slot>> slots_;
};

// The same lookups and loads through a cache that may be absent (null:
// nothing is cached, every load reads the store).
inline bool FindCors(const DocumentCache* cache, std::string_view account,
                     std::shared_ptr<const CorsRules>* rules) {
  return cache != nullptr && cache->FindCors(account, rules);
}
inline bool FindAcl(const DocumentCache* cache, std::string_view account, std::string_view table,
                    std::shared_ptr<const DocumentCache::Policies>* policies) {
  return cache != nullptr && cache->FindAcl(account, table, policies);
}
std::shared_ptr<const CorsRules> LoadCors(DocumentCache* cache, storage::Store& store,
                                          const std::string& account);
storage::Result<std::shared_ptr<const DocumentCache::Policies>> LoadAcl(DocumentCache* cache,
                                                                        storage::Store& store,
                                                                        const std::string& account,
                                                                        const std::string& table);

}  // namespace cerulean::server
