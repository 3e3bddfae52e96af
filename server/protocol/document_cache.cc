#include "server/protocol/document_cache.h"

#include <atomic>
#include <ctime>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "server/formats/acl_xml.h"
#include "server/formats/ascii.h"
#include "storage/platform.h"
#include "storage/store.h"

namespace cerulean::server {

namespace {

constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

// What FindCors can tell without the lock.
enum CorsState : int { kUnknown, kNoRules, kRules };

// The service properties of `account` in `store` (defaults when none are
// stored).
storage::Status ReadProperties(storage::Store& store, const std::string& account,
                               ServiceProperties* props) {
  auto stored = store.GetServiceProperties(account);
  if (!stored.ok()) return stored.status();
  *props = ServiceProperties();
  // Stored by Set Service Properties, which validated it.
  if (!stored->empty()) static_cast<void>(ApplyServicePropertiesXml(*stored, props));
  return storage::Status::Ok();
}

std::shared_ptr<const CorsRules> RulesOf(ServiceProperties& props) {
  if (props.cors.empty()) return nullptr;
  return std::make_shared<const CorsRules>(std::move(props.cors));
}

// The stored access policies of `table`: null when it has none;
// kTableNotFound, or the store's error.
storage::Result<std::shared_ptr<const DocumentCache::Policies>> ReadPolicies(
    storage::Store& store, const std::string& account, const std::string& table) {
  auto acl = store.GetTableAcl(account, table);
  if (!acl.ok()) return acl.status();
  DocumentCache::Policies policies;
  // Stored by Set Table ACL, which validated it.
  if (!acl->empty() && ParseAclXml(*acl, &policies)) policies.clear();
  if (policies.empty()) return std::shared_ptr<const DocumentCache::Policies>();
  return std::make_shared<const DocumentCache::Policies>(std::move(policies));
}

}  // namespace

struct DocumentCache::Slot {
  explicit Slot(std::string name) : account(std::move(name)) {}
  const std::string account;
  // Read without the lock by FindCors.
  std::atomic<int> cors_state{kUnknown};
  std::atomic<std::int64_t> cors_expires{0};
  std::mutex mu;
  // Grows at each invalidation: a read that began before it is not cached.
  std::uint64_t cors_generation = 0;      // guarded by mu
  bool cors_known = false;                // guarded by mu: `cors` holds what was read last
  std::shared_ptr<const CorsRules> cors;  // guarded by mu
  struct Acl {
    std::shared_ptr<const Policies> policies;
    std::int64_t expires = 0;
  };
  std::uint64_t acl_generation = 0;           // guarded by mu
  std::unordered_map<std::string, Acl> acls;  // guarded by mu; by lower-case table name
};

DocumentCache::DocumentCache(const Accounts& accounts, Options options) : options_(options) {
  for (const Account& a : accounts.all()) slots_.push_back(std::make_unique<Slot>(a.name));
}

DocumentCache::~DocumentCache() = default;

DocumentCache::Slot* DocumentCache::FindSlot(std::string_view account) const {
  for (const auto& slot : slots_) {
    if (slot->account == account) return slot.get();
  }
  return nullptr;
}

std::int64_t DocumentCache::Now() const {
  return options_.now_ms != nullptr ? options_.now_ms() : storage::CoarseMonotonicMs();
}

std::int64_t DocumentCache::ExpiryFromNow() const {
  return options_.max_age.count() > 0 ? Now() + options_.max_age.count() : kNever;
}

bool DocumentCache::FindCors(std::string_view account,
                             std::shared_ptr<const CorsRules>* rules) const {
  Slot* slot = FindSlot(account);
  if (slot == nullptr) return false;
  const int state = slot->cors_state.load(std::memory_order_acquire);
  if (state == kUnknown) return false;
  if (options_.max_age.count() > 0 && Now() >= slot->cors_expires.load(std::memory_order_relaxed)) {
    return false;
  }
  if (state == kNoRules) {
    rules->reset();
    return true;
  }
  std::lock_guard lock(slot->mu);
  if (!slot->cors_known) return false;
  *rules = slot->cors;
  return true;
}

void DocumentCache::PutCors(Slot& slot, std::uint64_t generation,
                            std::shared_ptr<const CorsRules> rules) {
  std::lock_guard lock(slot.mu);
  if (slot.cors_generation != generation) return;
  const bool any = rules != nullptr;
  slot.cors = std::move(rules);
  slot.cors_known = true;
  slot.cors_expires.store(ExpiryFromNow(), std::memory_order_relaxed);
  slot.cors_state.store(any ? kRules : kNoRules, std::memory_order_release);
}

storage::Status DocumentCache::ReadServiceProperties(storage::Store& store,
                                                     const std::string& account,
                                                     ServiceProperties* props) {
  Slot* slot = FindSlot(account);
  std::uint64_t generation = 0;
  if (slot != nullptr) {
    std::lock_guard lock(slot->mu);
    generation = slot->cors_generation;
  }
  storage::Status s = ReadProperties(store, account, props);
  if (!s.ok() || slot == nullptr) return s;
  PutCors(*slot, generation,
          props->cors.empty() ? nullptr : std::make_shared<const CorsRules>(props->cors));
  return s;
}

std::shared_ptr<const CorsRules> DocumentCache::LoadCors(storage::Store& store,
                                                         const std::string& account) {
  ServiceProperties props;
  if (ReadServiceProperties(store, account, &props).ok()) return RulesOf(props);
  Slot* slot = FindSlot(account);
  if (slot == nullptr) return nullptr;
  std::lock_guard lock(slot->mu);
  if (!slot->cors_known) return nullptr;
  // Used again for max_age: requests need not each wait for the store.
  slot->cors_expires.store(ExpiryFromNow(), std::memory_order_relaxed);
  return slot->cors;
}

bool DocumentCache::FindAcl(std::string_view account, std::string_view table,
                            std::shared_ptr<const Policies>* policies) const {
  Slot* slot = FindSlot(account);
  if (slot == nullptr) return false;
  const std::string key = ToLower(table);
  std::lock_guard lock(slot->mu);
  auto it = slot->acls.find(key);
  if (it == slot->acls.end()) return false;
  if (options_.max_age.count() > 0 && Now() >= it->second.expires) return false;
  *policies = it->second.policies;
  return true;
}

void DocumentCache::PutAcl(Slot& slot, std::uint64_t generation, std::string table_key,
                           std::shared_ptr<const Policies> policies) {
  std::lock_guard lock(slot.mu);
  if (slot.acl_generation != generation) return;
  auto it = slot.acls.find(table_key);
  if (it == slot.acls.end() && slot.acls.size() >= options_.max_tables_per_account) {
    slot.acls.erase(slot.acls.begin());
  }
  slot.acls[std::move(table_key)] = Slot::Acl{std::move(policies), ExpiryFromNow()};
}

storage::Result<std::shared_ptr<const DocumentCache::Policies>> DocumentCache::ReadAcl(
    storage::Store& store, const std::string& account, const std::string& table) {
  Slot* slot = FindSlot(account);
  std::uint64_t generation = 0;
  if (slot != nullptr) {
    std::lock_guard lock(slot->mu);
    generation = slot->acl_generation;
  }
  auto read = ReadPolicies(store, account, table);
  if (slot != nullptr && options_.max_tables_per_account > 0) {
    if (read.ok()) {
      PutAcl(*slot, generation, ToLower(table), *read);
    } else if (read.status().code() == storage::StatusCode::kTableNotFound) {
      PutAcl(*slot, generation, ToLower(table), nullptr);
    }
  }
  return read;
}

storage::Result<std::shared_ptr<const DocumentCache::Policies>> DocumentCache::LoadAcl(
    storage::Store& store, const std::string& account, const std::string& table) {
  auto read = ReadAcl(store, account, table);
  if (read.ok() || read.status().code() == storage::StatusCode::kTableNotFound) return read;
  Slot* slot = FindSlot(account);
  if (slot == nullptr) return read;
  std::lock_guard lock(slot->mu);
  auto it = slot->acls.find(ToLower(table));
  if (it == slot->acls.end()) return read;
  it->second.expires = ExpiryFromNow();
  return it->second.policies;
}

void DocumentCache::InvalidateCors(std::string_view account) {
  Slot* slot = FindSlot(account);
  if (slot == nullptr) return;
  std::lock_guard lock(slot->mu);
  ++slot->cors_generation;
  slot->cors_known = false;
  slot->cors.reset();
  slot->cors_state.store(kUnknown, std::memory_order_release);
}

void DocumentCache::InvalidateAcl(std::string_view account, std::string_view table) {
  Slot* slot = FindSlot(account);
  if (slot == nullptr) return;
  std::lock_guard lock(slot->mu);
  ++slot->acl_generation;
  slot->acls.erase(ToLower(table));
}

void DocumentCache::InvalidateAccount(std::string_view account) {
  InvalidateCors(account);
  Slot* slot = FindSlot(account);
  if (slot == nullptr) return;
  std::lock_guard lock(slot->mu);
  ++slot->acl_generation;
  slot->acls.clear();
}

std::string DocumentCache::RenderMetrics() const {
  size_t cors = 0, acls = 0;
  for (const auto& slot : slots_) {
    std::lock_guard lock(slot->mu);
    cors += slot->cors_known;
    acls += slot->acls.size();
  }
  std::string out =
      "# HELP cerulean_document_cache_entries Documents cached for routing and authentication "
      "(CORS rules per account, stored access policies per table).\n"
      "# TYPE cerulean_document_cache_entries gauge\n";
  out += "cerulean_document_cache_entries{document=\"cors\"} " + std::to_string(cors) + "\n";
  out += "cerulean_document_cache_entries{document=\"acl\"} " + std::to_string(acls) + "\n";
  return out;
}

std::shared_ptr<const CorsRules> LoadCors(DocumentCache* cache, storage::Store& store,
                                          const std::string& account) {
  if (cache != nullptr) return cache->LoadCors(store, account);
  ServiceProperties props;
  if (!ReadProperties(store, account, &props).ok()) return nullptr;
  return RulesOf(props);
}

storage::Result<std::shared_ptr<const DocumentCache::Policies>> LoadAcl(DocumentCache* cache,
                                                                        storage::Store& store,
                                                                        const std::string& account,
                                                                        const std::string& table) {
  if (cache != nullptr) return cache->LoadAcl(store, account, table);
  return ReadPolicies(store, account, table);
}

}  // namespace cerulean::server
