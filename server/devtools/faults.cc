#include "server/devtools/faults.h"

#include <nlohmann/json.hpp>

#include "server/formats/ascii.h"
#include "server/protocol/routes.h"

namespace cerulean::server {

namespace {

using nlohmann::json;

// splitmix64: a fixed, portable sequence per seed (std::mt19937 is fixed too,
// but the standard distributions are not).
uint64_t NextRandom(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A uniform draw in [0, 1) from 53 random bits.
double NextUnit(uint64_t* state) {
  return static_cast<double>(NextRandom(state) >> 11) * (1.0 / 9007199254740992.0);
}

// The longest delay a rule may ask for: ten minutes.
constexpr uint64_t kMaxDelayMs = 600'000;
// Counts and seeds: the integers every JSON client reads and writes exactly
// (2^53 - 1), so that a rule lists back as it was set.
constexpr uint64_t kMaxJsonInteger = (uint64_t{1} << 53) - 1;

// The access log calls a $batch "Batch"; rules may use either.
std::string CanonicalOperation(std::string op) { return op == "$batch" ? "Batch" : op; }

// The names a rule may match on: every operation of the Table API (the
// reserved operations, answered outside the table, have no verb).
bool KnownOperation(std::string_view op) {
  for (const Route& route : AllRoutes()) {
    if (route.verbs != kNoVerb && route.name == op) return true;
  }
  return false;
}

std::optional<std::string> ParseRule(const json& j, const std::string& default_account,
                                     bool only_account, FaultRule* rule) {
  if (!j.is_object()) return "a rule must be a JSON object";
  static constexpr std::string_view kFields[] = {
      "account", "operation", "table", "partitionKey", "status",      "code", "message",
      "delayMs", "drop",      "count", "skip",         "probability", "seed"};
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (auto f : kFields) known |= key == f;
    if (!known) return "unknown rule field '" + key + "'";
  }
  auto text = [&](const char* name, std::string* out) -> std::optional<std::string> {
    if (!j.contains(name)) return std::nullopt;
    if (!j[name].is_string()) return std::string("'") + name + "' must be a string";
    *out = j[name].get<std::string>();
    return std::nullopt;
  };
  // An integer in [min, max]: a value outside is refused, never truncated.
  auto number = [&](const char* name, uint64_t min, uint64_t max,
                    uint64_t* out) -> std::optional<std::string> {
    if (!j.contains(name)) return std::nullopt;
    const json& v = j[name];
    if (!v.is_number_unsigned() || v.get<uint64_t>() < min || v.get<uint64_t>() > max) {
      return std::string("'") + name + "' must be an integer from " + std::to_string(min) + " to " +
             std::to_string(max);
    }
    *out = v.get<uint64_t>();
    return std::nullopt;
  };
  rule->account = default_account;
  std::string drop, code;
  uint64_t status = 0, delay_ms = 0;
  for (auto err : {text("account", &rule->account), text("operation", &rule->operation),
                   text("table", &rule->table), text("message", &rule->message),
                   text("drop", &drop), text("code", &code), number("status", 400, 599, &status),
                   number("delayMs", 0, kMaxDelayMs, &delay_ms),
                   number("count", 0, kMaxJsonInteger, &rule->count),
                   number("skip", 0, kMaxJsonInteger, &rule->skip),
                   number("seed", 0, kMaxJsonInteger, &rule->seed)}) {
    if (err) return err;
  }
  if (only_account && rule->account != default_account) {
    return "rule for account '" + rule->account + "' set on account '" + default_account + "'";
  }
  rule->operation = CanonicalOperation(rule->operation);
  if (!rule->operation.empty() && rule->operation != "*" && !KnownOperation(rule->operation)) {
    return "unknown operation '" + rule->operation + "'";
  }
  if (rule->operation == "*") rule->operation.clear();
  if (rule->table == "*") rule->table.clear();
  if (j.contains("partitionKey")) {
    if (!j["partitionKey"].is_string()) return "'partitionKey' must be a string";
    rule->partition_key = j["partitionKey"].get<std::string>();
  }
  if (j.contains("probability")) {
    if (!j["probability"].is_number()) return "'probability' must be a number";
    rule->probability = j["probability"].get<double>();
    if (!(rule->probability >= 0 && rule->probability <= 1)) {
      return "'probability' must be between 0 and 1";
    }
  }
  rule->delay = std::chrono::milliseconds(delay_ms);
  if (!drop.empty() && (status != 0 || !code.empty())) {
    return "a rule either answers with an error or drops the connection";
  }
  if (drop == "before") {
    rule->action = FaultAction::kDropBefore;
  } else if (drop == "after") {
    rule->action = FaultAction::kDropAfter;
  } else if (!drop.empty()) {
    return "'drop' must be \"before\" or \"after\"";
  } else if (status != 0 || !code.empty()) {
    if (code.empty()) return "an error needs its 'code' (e.g. \"ServerBusy\")";
    auto error = ErrorFromCode(code, static_cast<int>(status));
    if (!error) {
      return "no Azure Table error has code '" + code + "'" +
             (status != 0 ? " and status " + std::to_string(status) : std::string());
    }
    rule->action = FaultAction::kError;
    rule->error = *error;
  } else if (delay_ms == 0) {
    return "a rule needs an action: 'status' and 'code', 'drop', or 'delayMs'";
  }
  rule->rng = rule->seed;
  return std::nullopt;
}

json RuleJson(const FaultRule& r) {
  json j;
  j["account"] = r.account;
  if (!r.operation.empty()) j["operation"] = r.operation;
  if (!r.table.empty()) j["table"] = r.table;
  if (r.partition_key) j["partitionKey"] = *r.partition_key;
  if (r.action == FaultAction::kError) {
    const ErrorInfo& info = Describe(r.error);
    j["status"] = info.status;
    j["code"] = std::string(info.code);
    if (!r.message.empty()) j["message"] = r.message;
  }
  if (r.action == FaultAction::kDropBefore) j["drop"] = "before";
  if (r.action == FaultAction::kDropAfter) j["drop"] = "after";
  if (r.delay.count() > 0) j["delayMs"] = r.delay.count();
  if (r.count > 0) j["count"] = r.count;
  if (r.skip > 0) j["skip"] = r.skip;
  if (r.probability < 1) {
    j["probability"] = r.probability;
    j["seed"] = r.seed;
  }
  j["matched"] = r.matched;
  j["fired"] = r.fired;
  return j;
}

}  // namespace

std::string_view FaultActionName(FaultAction action) {
  switch (action) {
    case FaultAction::kNone:
      return "delay";
    case FaultAction::kError:
      return "error";
    case FaultAction::kDropBefore:
      return "drop-before";
    case FaultAction::kDropAfter:
      return "drop-after";
  }
  return "unknown";
}

std::optional<std::string> ParseFaultRules(std::string_view text,
                                           const std::string& default_account, bool only_account,
                                           std::vector<FaultRule>* out) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return "the body is not valid JSON";
  if (!doc.is_object() || !doc.contains("rules") || !doc["rules"].is_array()) {
    return "expected {\"rules\": [ ... ]}";
  }
  for (const auto& [key, value] : doc.items()) {
    if (key != "rules") return "unknown field '" + key + "'";
  }
  if (doc["rules"].size() > kMaxFaultRules) {
    return "at most " + std::to_string(kMaxFaultRules) + " rules";
  }
  out->clear();
  size_t i = 0;
  for (const auto& j : doc["rules"]) {
    FaultRule rule;
    if (auto err = ParseRule(j, default_account, only_account, &rule)) {
      return "rule " + std::to_string(i) + ": " + *err;
    }
    out->push_back(std::move(rule));
    ++i;
  }
  return std::nullopt;
}

bool FaultMatches(const FaultRule& rule, const FaultTarget& target) {
  if (rule.account != target.account) return false;
  if (!rule.operation.empty() && rule.operation != target.operation) return false;
  if (!rule.table.empty() && !IEquals(rule.table, target.table)) return false;
  if (rule.partition_key &&
      (!target.partition_key || *rule.partition_key != *target.partition_key)) {
    return false;
  }
  return true;
}

void FaultInjector::Set(std::vector<FaultRule> rules, const std::string& clear_account) {
  std::lock_guard lock(mu_);
  if (!clear_account.empty()) rules_.erase(clear_account);
  std::map<std::string, std::vector<FaultRule>> by_account;
  for (auto& r : rules) by_account[r.account].push_back(std::move(r));
  for (auto& [account, list] : by_account) rules_[account] = std::move(list);
  armed_.store(!rules_.empty(), std::memory_order_relaxed);
}

void FaultInjector::Clear(const std::string& account) {
  std::lock_guard lock(mu_);
  rules_.erase(account);
  armed_.store(!rules_.empty(), std::memory_order_relaxed);
}

std::string FaultInjector::ListJson(const std::string& account) const {
  json out;
  out["rules"] = json::array();
  std::lock_guard lock(mu_);
  auto it = rules_.find(account);
  if (it != rules_.end()) {
    for (const auto& r : it->second) out["rules"].push_back(RuleJson(r));
  }
  return out.dump();
}

std::optional<Fault> FaultInjector::Decide(const FaultTarget& target) {
  std::lock_guard lock(mu_);
  auto it = rules_.find(std::string(target.account));
  if (it == rules_.end()) return std::nullopt;
  for (FaultRule& rule : it->second) {
    if (!FaultMatches(rule, target)) continue;
    if (rule.count > 0 && rule.fired >= rule.count) continue;
    ++rule.matched;
    if (rule.matched <= rule.skip) continue;
    if (rule.probability < 1 && !(NextUnit(&rule.rng) < rule.probability)) continue;
    ++rule.fired;
    ++injected_[{std::string(target.operation), std::string(FaultActionName(rule.action))}];
    return Fault{rule.action, rule.delay, rule.error, rule.message};
  }
  return std::nullopt;
}

FaultInjector::Use FaultInjector::Memory() const {
  // Heap bytes of a string: its buffer when longer than the inline one.
  auto heap = [](const std::string& text) {
    return text.capacity() > std::string().capacity() ? text.capacity() + 1 : 0;
  };
  // A node of std::map: the value and three pointers and a colour.
  constexpr size_t kNode = 4 * sizeof(void*);
  Use use;
  std::lock_guard lock(mu_);
  for (const auto& [account, rules] : rules_) {
    use.bytes += kNode + sizeof(account) + heap(account) + sizeof(rules) +
                 rules.capacity() * sizeof(FaultRule);
    for (const FaultRule& r : rules) {
      use.bytes += heap(r.account) + heap(r.operation) + heap(r.table) + heap(r.message) +
                   (r.partition_key ? heap(*r.partition_key) : 0);
    }
    use.rules += rules.size();
  }
  for (const auto& [key, n] : injected_) {
    use.bytes += kNode + sizeof(key) + heap(key.first) + heap(key.second) + sizeof(n);
  }
  return use;
}

std::string FaultInjector::RenderMetrics() const {
  std::string out =
      "# HELP cerulean_faults_injected_total Faults injected (/_faults), by operation and "
      "action.\n# TYPE cerulean_faults_injected_total counter\n";
  std::lock_guard lock(mu_);
  for (const auto& [key, n] : injected_) {
    out += "cerulean_faults_injected_total{operation=\"" + key.first + "\",action=\"" + key.second +
           "\"} " + std::to_string(n) + "\n";
  }
  return out;
}

}  // namespace cerulean::server
