// Fault injection for test suites: rules, set per account (PUT /_faults/
// {account} or --faults FILE), that make matching requests fail with an
// Azure error, wait, or lose their connection before or after they ran.
// Off unless rules are set: the request path then pays one relaxed atomic
// load (Armed()).
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/formats/azure_error.h"
#include "server/protocol/request.h"

namespace cerulean::server {

// What a fired rule does. An optional delay comes first, then the action.
enum class FaultAction {
  kNone,        // only the delay: the request then runs normally
  kError,       // answer with an Azure error instead of running
  kDropBefore,  // close the connection (RST) without running the request
  kDropAfter,   // run the request (a write is durable), then close without answering
};
std::string_view FaultActionName(FaultAction action);

// One rule. Empty matchers match anything. A rule fires on the matching
// requests it draws (probability, from its own generator seeded with
// `seed`, one draw per match after the first `skip` matches) until it has
// fired `count` times (0: without end).
struct FaultRule {
  std::string account;    // the account whose requests it matches
  std::string operation;  // an access-log operation name ("InsertEntity", "Batch"), or ""
  std::string table;      // compared case-insensitively, or ""
  std::optional<std::string> partition_key;
  FaultAction action = FaultAction::kNone;
  AzureError error = AzureError::kInternalError;  // kError
  std::string message;                            // kError; empty: Azure's default
  std::chrono::milliseconds delay{0};
  uint64_t count = 0;
  uint64_t skip = 0;
  double probability = 1.0;
  uint64_t seed = 0;
  // State.
  uint64_t matched = 0;
  uint64_t fired = 0;
  uint64_t rng = 0;  // splitmix64 state, from seed
};

// The most rules one set may hold (a PUT /_faults/{account} body, or the
// --faults file): each account's rules are replaced by a set, so an account
// holds at most this many, and the accounts are the configured ones.
inline constexpr size_t kMaxFaultRules = 1000;

// Parses {"rules": [...]} (README, "Testing with Cerulean"). A rule without
// "account" belongs to `default_account`; with `only_account` set, a rule
// naming another account is an error. Returns an error message, or nullopt.
std::optional<std::string> ParseFaultRules(std::string_view json,
                                           const std::string& default_account, bool only_account,
                                           std::vector<FaultRule>* out);

// A fired rule's instructions for one request.
struct Fault {
  FaultAction action = FaultAction::kNone;
  std::chrono::milliseconds delay{0};
  AzureError error = AzureError::kInternalError;
  std::string message;
};

// The request facts a rule matches on.
struct FaultTarget {
  std::string_view account;
  std::string_view operation;
  std::string_view table;
  std::optional<std::string_view> partition_key;  // nullopt: none known
};

// True iff `rule` matches `target` (counts and probability aside).
bool FaultMatches(const FaultRule& rule, const FaultTarget& target);

class FaultInjector {
 public:
  // True iff any account has rules. The only cost on the request path when
  // fault injection is off.
  bool Armed() const { return armed_.load(std::memory_order_relaxed); }

  // Replaces the rules of each account named in `rules` (their counts
  // start again); with `clear_account` set, that account's rules are
  // replaced even when `rules` holds none of them.
  void Set(std::vector<FaultRule> rules, const std::string& clear_account = {});
  void Clear(const std::string& account);
  // {"rules":[...]} with each rule's matched and fired counts.
  std::string ListJson(const std::string& account) const;

  // The first rule of target.account that matches and fires, counted; else
  // nullopt.
  std::optional<Fault> Decide(const FaultTarget& target);

  // Prometheus text: faults injected by operation and action.
  std::string RenderMetrics() const;
  // The memory the rules and counts hold (/_metrics "fault_rules"): entries
  // are rules. Bounded by kMaxFaultRules per configured account, and the
  // counts by the operations times the actions.
  struct Use {
    uint64_t bytes = 0;
    uint64_t rules = 0;
  };
  Use Memory() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::vector<FaultRule>> rules_;  // guarded by mu_; by account
  // (operation, action) -> faults injected; guarded by mu_.
  std::map<std::pair<std::string, std::string>, uint64_t> injected_;
  std::atomic<bool> armed_{false};
};

// A response the session must not send: it resets the connection instead
// (FaultAction::kDropBefore, kDropAfter). The status code 0 marks it.
inline void MarkConnectionDrop(HttpResponse& res) { res.result(http::status::unknown); }
inline bool IsConnectionDrop(const HttpResponse& res) { return res.result_int() == 0; }

// True iff `ctx` has fault rules set anywhere.
inline bool FaultsArmed(const ServerContext& ctx) {
  return ctx.faults != nullptr && ctx.faults->Armed();
}

}  // namespace cerulean::server
