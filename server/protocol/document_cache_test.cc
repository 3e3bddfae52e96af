// Tests of the document cache: what it answers without the store, when a
// change of this node or the passing of max_age makes it read again, what
// it serves while the store cannot be read, and its bounds.
#include "server/protocol/document_cache.h"

#include <doctest/doctest.h>

#include <cctype>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "storage/sqlite/sqlite_store.h"
#include "storage/store_wrapper.h"

namespace cerulean::server {
namespace {

using storage::Status;

// An empty in-memory SqliteStore, for the calls DocumentStore leaves to it
// (a base class, so that it is opened before the wrapper takes it).
struct EmptyStore {
  EmptyStore() {
    storage::SqliteStoreOptions options;
    options.in_memory = true;
    options.background_reaping = false;
    auto opened = storage::SqliteStore::Open(options);
    REQUIRE(opened.ok());
    empty = std::move(opened).value();
  }
  std::unique_ptr<storage::SqliteStore> empty;
};

// Documents in maps; every read counted; reads fail while `down`.
class DocumentStore final : private EmptyStore, public storage::StoreWrapper {
 public:
  DocumentStore() : StoreWrapper(empty.get()) {}

  std::map<std::string, std::string> props;  // by account
  std::map<std::string, std::string> acls;   // by lower-case table; absent: no table
  bool down = false;
  int reads = 0;
  // Runs in the middle of each read (after it began, before it returns).
  std::function<void()> during_read;

  storage::Result<std::string> GetServiceProperties(const std::string& account) override {
    ++reads;
    if (during_read) during_read();
    if (down) return Status::Busy("down");
    auto it = props.find(account);
    return it == props.end() ? std::string() : it->second;
  }
  storage::Result<std::string> GetTableAcl(const std::string&, const std::string& table) override {
    ++reads;
    if (during_read) during_read();
    if (down) return Status::Busy("down");
    std::string lower = table;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto it = acls.find(lower);
    if (it == acls.end()) return Status::TableNotFound(table);
    return it->second;
  }
};

std::int64_t g_now_ms = 0;
std::int64_t Clock() { return g_now_ms; }

Accounts DevAccount() {
  Accounts accounts;
  REQUIRE(accounts.AddDefault());
  return accounts;
}

const std::string kAccount(kDevAccount);

std::string CorsXml(std::string_view origin) {
  return "<StorageServiceProperties><Cors><CorsRule><AllowedOrigins>" + std::string(origin) +
         "</AllowedOrigins><AllowedMethods>GET</AllowedMethods><MaxAgeInSeconds>1"
         "</MaxAgeInSeconds></CorsRule></Cors></StorageServiceProperties>";
}

std::string AclXml(std::string_view id) {
  return "<SignedIdentifiers><SignedIdentifier><Id>" + std::string(id) +
         "</Id><AccessPolicy><Permission>r</Permission></AccessPolicy></SignedIdentifier>"
         "</SignedIdentifiers>";
}

// The first allowed origin of the cached rules, "" for none, nullopt for a
// miss.
std::optional<std::string> CachedOrigin(const DocumentCache& cache) {
  std::shared_ptr<const CorsRules> rules;
  if (!cache.FindCors(kAccount, &rules)) return std::nullopt;
  return rules ? rules->at(0).allowed_origins.at(0) : "";
}

}  // namespace

TEST_CASE("CORS rules: read once, served from the cache, read again after a change here") {
  DocumentStore store;
  DocumentCache cache(DevAccount(), {});
  CHECK(CachedOrigin(cache) == std::nullopt);
  // An account with no rules is cached too (every answer's Vary needs it).
  CHECK(cache.LoadCors(store, kAccount) == nullptr);
  CHECK(CachedOrigin(cache) == "");
  store.props[kAccount] = CorsXml("https://a.example");
  // Without max_age a change of another process is not seen...
  CHECK(CachedOrigin(cache) == "");
  // ...one of this node is, at once.
  cache.InvalidateCors(kAccount);
  CHECK(CachedOrigin(cache) == std::nullopt);
  CHECK(cache.LoadCors(store, kAccount)->at(0).allowed_origins.at(0) == "https://a.example");
  const int reads = store.reads;
  for (int i = 0; i < 10; ++i) CHECK(CachedOrigin(cache) == "https://a.example");
  CHECK(store.reads == reads);
  // An account the cache was not built with is never cached.
  std::shared_ptr<const CorsRules> rules;
  CHECK_FALSE(cache.FindCors("other", &rules));
  CHECK(cache.LoadCors(store, "other") == nullptr);
  CHECK_FALSE(cache.FindCors("other", &rules));
}

TEST_CASE("a read that began before an invalidation does not put the old value back") {
  DocumentStore store;
  DocumentCache cache(DevAccount(), {});
  store.props[kAccount] = CorsXml("https://old.example");
  store.during_read = [&] {
    // The write lands, and is invalidated, while the read is under way.
    store.during_read = nullptr;
    cache.InvalidateCors(kAccount);
  };
  CHECK(cache.LoadCors(store, kAccount)->at(0).allowed_origins.at(0) == "https://old.example");
  CHECK(CachedOrigin(cache) == std::nullopt);
  store.props[kAccount] = CorsXml("https://new.example");
  CHECK(cache.LoadCors(store, kAccount)->at(0).allowed_origins.at(0) == "https://new.example");
  CHECK(CachedOrigin(cache) == "https://new.example");
}

TEST_CASE("with max_age, entries are read again; while the store is down the last one stays") {
  DocumentStore store;
  g_now_ms = 1000;
  DocumentCache cache(DevAccount(), {.max_age = std::chrono::milliseconds(5000), .now_ms = &Clock});
  store.props[kAccount] = CorsXml("https://a.example");
  store.acls["t"] = AclXml("p1");
  REQUIRE(cache.LoadCors(store, kAccount) != nullptr);
  REQUIRE(cache.LoadAcl(store, kAccount, "T").ok());
  std::shared_ptr<const DocumentCache::Policies> policies;
  g_now_ms += 4999;
  CHECK(CachedOrigin(cache) == "https://a.example");
  CHECK(cache.FindAcl(kAccount, "t", &policies));
  // Another node changed both.
  store.props[kAccount] = CorsXml("https://b.example");
  store.acls["t"] = AclXml("p2");
  g_now_ms += 1;
  CHECK(CachedOrigin(cache) == std::nullopt);
  CHECK_FALSE(cache.FindAcl(kAccount, "t", &policies));
  CHECK(cache.LoadCors(store, kAccount)->at(0).allowed_origins.at(0) == "https://b.example");
  CHECK(cache.LoadAcl(store, kAccount, "t").value()->at(0).id == "p2");

  // The database goes away: what was read last is used, for another max_age.
  store.down = true;
  g_now_ms += 5000;
  CHECK(CachedOrigin(cache) == std::nullopt);
  CHECK(cache.LoadCors(store, kAccount)->at(0).allowed_origins.at(0) == "https://b.example");
  CHECK(CachedOrigin(cache) == "https://b.example");
  CHECK(cache.LoadAcl(store, kAccount, "t").value()->at(0).id == "p2");
  CHECK(cache.FindAcl(kAccount, "t", &policies));
  // Nothing to fall back on: the store's error.
  CHECK(cache.LoadAcl(store, kAccount, "never").status().code() == storage::StatusCode::kBusy);
  // The node's own change is never papered over by an old value.
  cache.InvalidateAccount(kAccount);
  CHECK(cache.LoadCors(store, kAccount) == nullptr);
  CHECK_FALSE(cache.LoadAcl(store, kAccount, "t").ok());
}

TEST_CASE("stored policies: a missing table is cached as none; entries per account are bounded") {
  DocumentStore store;
  DocumentCache cache(DevAccount(), {.max_tables_per_account = 2});
  std::shared_ptr<const DocumentCache::Policies> policies;
  CHECK(cache.ReadAcl(store, kAccount, "gone").status().code() ==
        storage::StatusCode::kTableNotFound);
  CHECK(cache.FindAcl(kAccount, "GONE", &policies));
  CHECK(policies == nullptr);
  store.acls["a"] = AclXml("pa");
  store.acls["b"] = AclXml("pb");
  REQUIRE(cache.ReadAcl(store, kAccount, "a").ok());
  REQUIRE(cache.ReadAcl(store, kAccount, "b").ok());
  int cached = 0;
  for (const char* t : {"gone", "a", "b"}) cached += cache.FindAcl(kAccount, t, &policies);
  CHECK(cached == 2);
  CHECK(cache.RenderMetrics().find("cerulean_document_cache_entries{document=\"acl\"} 2\n") !=
        std::string::npos);
  // A change of this node drops the table's entry.
  REQUIRE(cache.FindAcl(kAccount, "b", &policies));
  cache.InvalidateAcl(kAccount, "B");
  CHECK_FALSE(cache.FindAcl(kAccount, "b", &policies));
}

}  // namespace cerulean::server
