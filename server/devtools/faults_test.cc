#include "server/devtools/faults.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace cerulean::server {
namespace {

std::vector<FaultRule> Parse(const std::string& json, const std::string& account = "acct") {
  std::vector<FaultRule> rules;
  auto err = ParseFaultRules(json, account, true, &rules);
  INFO(err.value_or(""));
  REQUIRE(!err);
  return rules;
}

std::string ParseError(const std::string& json) {
  std::vector<FaultRule> rules;
  return ParseFaultRules(json, "acct", true, &rules).value_or("");
}

FaultTarget Target(std::string_view op, std::string_view table = "t",
                   std::optional<std::string_view> pk = std::nullopt) {
  return FaultTarget{"acct", op, table, pk};
}

TEST_CASE("faults: rules parse into actions") {
  auto rules = Parse(R"({"rules":[
      {"operation":"InsertEntity","table":"t","status":503,"code":"ServerBusy","count":2},
      {"operation":"$batch","code":"OperationTimedOut"},
      {"drop":"after","partitionKey":"p"},
      {"delayMs":250,"drop":"before"},
      {"delayMs":10}]})");
  REQUIRE(rules.size() == 5);
  CHECK(rules[0].action == FaultAction::kError);
  CHECK(rules[0].error == AzureError::kServerBusy);
  CHECK(rules[0].count == 2);
  CHECK(rules[1].operation == "Batch");
  CHECK(rules[1].error == AzureError::kOperationTimedOut);
  CHECK(Describe(rules[1].error).status == 500);
  CHECK(rules[2].action == FaultAction::kDropAfter);
  CHECK(rules[2].partition_key == "p");
  CHECK(rules[3].action == FaultAction::kDropBefore);
  CHECK(rules[3].delay.count() == 250);
  CHECK(rules[4].action == FaultAction::kNone);
  CHECK(rules[0].account == "acct");
}

TEST_CASE("faults: bad rules are refused with a reason") {
  CHECK(ParseError("nope") == "the body is not valid JSON");
  CHECK(ParseError(R"({"rule":[]})") == "expected {\"rules\": [ ... ]}");
  CHECK(ParseError(R"({"rules":[{"operation":"InsertEntity"}]})").find("needs an action") !=
        std::string::npos);
  CHECK(ParseError(R"({"rules":[{"code":"NoSuchCode"}]})").find("NoSuchCode") != std::string::npos);
  CHECK(ParseError(R"({"rules":[{"status":500,"code":"ServerBusy"}]})").find("status 500") !=
        std::string::npos);
  CHECK(ParseError(R"({"rules":[{"operation":"Frobnicate","delayMs":1}]})") != "");
  CHECK(ParseError(R"({"rules":[{"delayMs":1,"colour":"red"}]})") != "");
  CHECK(ParseError(R"({"rules":[{"drop":"during"}]})") != "");
  CHECK(ParseError(R"({"rules":[{"drop":"after","code":"ServerBusy"}]})") != "");
  CHECK(ParseError(R"({"rules":[{"delayMs":1,"probability":1.5}]})") != "");
  CHECK(ParseError(R"({"rules":[{"delayMs":1,"count":-1}]})") != "");
  CHECK(ParseError(R"({"rules":[{"delayMs":1,"account":"other"}]})") != "");
  // A status that is no error status, or does not fit one.
  CHECK(ParseError(R"({"rules":[{"status":4294967799,"code":"ServerBusy"}]})").find("'status'") !=
        std::string::npos);
  CHECK(ParseError(R"({"rules":[{"status":200,"code":"ServerBusy"}]})") != "");
}

TEST_CASE("faults: a set holds at most kMaxFaultRules rules; Memory counts them") {
  auto set = [](size_t n) {
    std::string json = R"({"rules":[)";
    for (size_t i = 0; i < n; ++i) json += std::string(i ? "," : "") + R"({"delayMs":1})";
    return json + "]}";
  };
  CHECK(ParseError(set(kMaxFaultRules + 1)) == "at most 1000 rules");
  FaultInjector injector;
  CHECK(injector.Memory().rules == 0);
  injector.Set(Parse(set(kMaxFaultRules)));
  const FaultInjector::Use use = injector.Memory();
  CHECK(use.rules == kMaxFaultRules);
  CHECK(use.bytes >= kMaxFaultRules * sizeof(FaultRule));
  injector.Clear("acct");
  CHECK(injector.Memory().rules == 0);
  CHECK(injector.Memory().bytes == 0);
}

TEST_CASE("faults: every numeric field is range-checked, never truncated") {
  // 4294967799 is 503 modulo 2^32.
  CHECK(ParseError(R"({"rules":[{"status":4294967799,"code":"ServerBusy"}]})") ==
        "rule 0: 'status' must be an integer from 400 to 599");
  CHECK(ParseError(R"({"rules":[{"status":18446744073709551615,"code":"ServerBusy"}]})") != "");
  CHECK(ParseError(R"({"rules":[{"status":200,"code":"ServerBusy"}]})") != "");
  CHECK(ParseError(R"({"rules":[{"status":503.0,"code":"ServerBusy"}]})") != "");
  CHECK(ParseError(R"({"rules":[{"status":-503,"code":"ServerBusy"}]})") != "");
  CHECK(ParseError(R"({"rules":[{"delayMs":600001}]})") ==
        "rule 0: 'delayMs' must be an integer from 0 to 600000");
  CHECK(ParseError(R"({"rules":[{"delayMs":1e3}]})") != "");
  CHECK(ParseError(R"({"rules":[{"delayMs":18446744073709551616}]})") != "");
  for (const char* field : {"count", "skip", "seed"}) {
    CAPTURE(field);
    std::string rule = std::string(R"({"rules":[{"delayMs":1,")") + field;
    CHECK(ParseError(rule + R"(":9007199254740992}]})") ==
          std::string("rule 0: '") + field + "' must be an integer from 0 to 9007199254740991");
    CHECK(ParseError(rule + R"(":-1}]})") != "");
    CHECK(ParseError(rule + R"(":1.5}]})") != "");
    CHECK(ParseError(rule + R"(":"2"}]})") != "");
    CHECK(ParseError(rule + R"(":9007199254740991}]})") == "");
  }
  CHECK(ParseError(R"({"rules":[{"delayMs":1,"probability":-0.1}]})") != "");
  CHECK(ParseError(R"({"rules":[{"delayMs":1,"probability":"0.5"}]})") != "");
  // The bounds themselves are valid.
  CHECK(ParseError(R"({"rules":[{"status":503,"code":"ServerBusy","delayMs":600000,"count":0,)"
                   R"("skip":0,"probability":0,"seed":0}]})") == "");
}

TEST_CASE("faults: matching on account, operation, table (any case) and PartitionKey") {
  auto rules = Parse(R"({"rules":[{"operation":"GetEntity","table":"Orders","partitionKey":"p",
                                   "code":"InternalError"}]})");
  const FaultRule& r = rules[0];
  CHECK(FaultMatches(r, Target("GetEntity", "orders", "p")));
  CHECK_FALSE(FaultMatches(r, Target("GetEntity", "orders", "q")));
  CHECK_FALSE(FaultMatches(r, Target("GetEntity", "orders")));  // no key known
  CHECK_FALSE(FaultMatches(r, Target("QueryEntities", "orders", "p")));
  CHECK_FALSE(FaultMatches(r, Target("GetEntity", "other", "p")));
  CHECK_FALSE(FaultMatches(r, FaultTarget{"acct2", "GetEntity", "orders", "p"}));
  auto any = Parse(R"({"rules":[{"operation":"*","code":"InternalError"}]})");
  CHECK(FaultMatches(any[0], Target("CreateTable", "")));
}

TEST_CASE("faults: count, skip, order and clearing") {
  FaultInjector faults;
  CHECK_FALSE(faults.Armed());
  faults.Set(Parse(R"({"rules":[
      {"operation":"InsertEntity","code":"ServerBusy","count":2,"skip":1},
      {"operation":"InsertEntity","drop":"after","count":1}]})"));
  CHECK(faults.Armed());
  CHECK_FALSE(faults.Decide(Target("GetEntity")));
  // The first match is skipped by rule 0, so rule 1 fires on it.
  auto f = faults.Decide(Target("InsertEntity"));
  REQUIRE(f);
  CHECK(f->action == FaultAction::kDropAfter);
  for (int i = 0; i < 2; ++i) {
    f = faults.Decide(Target("InsertEntity"));
    REQUIRE(f);
    CHECK(f->action == FaultAction::kError);
    CHECK(f->error == AzureError::kServerBusy);
  }
  CHECK_FALSE(faults.Decide(Target("InsertEntity")));
  std::string list = faults.ListJson("acct");
  CHECK(list.find(R"("fired":2)") != std::string::npos);
  CHECK(list.find(R"("matched":3)") != std::string::npos);
  CHECK(faults.RenderMetrics().find(
            R"(cerulean_faults_injected_total{operation="InsertEntity",action="error"} 2)") !=
        std::string::npos);
  faults.Clear("acct");
  CHECK_FALSE(faults.Armed());
  CHECK(faults.ListJson("acct") == R"({"rules":[]})");
}

TEST_CASE("faults: a probability with a seed gives the same decisions every run") {
  auto run = [](uint64_t seed) {
    FaultInjector faults;
    faults.Set(Parse(R"({"rules":[{"code":"ServerBusy","probability":0.3,"seed":)" +
                     std::to_string(seed) + "}]}"));
    std::string decisions;
    for (int i = 0; i < 1000; ++i) decisions += faults.Decide(Target("QueryEntities")) ? '1' : '0';
    return decisions;
  };
  std::string a = run(42);
  CHECK(a == run(42));
  CHECK(a != run(43));
  size_t fired = std::count(a.begin(), a.end(), '1');
  CHECK(fired > 230);  // 300 expected; the sequence is fixed, so this cannot flake
  CHECK(fired < 370);
}

TEST_CASE("faults: setting one account's rules leaves the others'") {
  FaultInjector faults;
  faults.Set(Parse(R"({"rules":[{"code":"ServerBusy"}]})", "a"));
  faults.Set(Parse(R"({"rules":[{"code":"ServerBusy"}]})", "b"));
  faults.Set({}, "a");
  CHECK(faults.Armed());
  CHECK_FALSE(faults.Decide(FaultTarget{"a", "GetEntity", "t", std::nullopt}));
  CHECK(faults.Decide(FaultTarget{"b", "GetEntity", "t", std::nullopt}));
}

}  // namespace
}  // namespace cerulean::server
