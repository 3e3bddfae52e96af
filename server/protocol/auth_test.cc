#include "server/protocol/auth.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "server/formats/base64.h"

namespace cerulean::server {

namespace {
std::string DevKey() { return *Base64Decode(kDevAccountKey); }
}  // namespace

TEST_CASE("Shared Key signs the spec's worked examples") {
  std::string sts =
      SharedKeyStringToSign("POST", "", "application/json", "Tue, 05 Nov 2024 10:00:00 GMT",
                            "/devstoreaccount1/devstoreaccount1/orders");
  CHECK(Sign(DevKey(), sts) == "7szrXpFeYc5SoVxqzIoDk70uiTocVl9909czCibpuyY=");
  std::string acl = SharedKeyStringToSign("GET", "", "", "Tue, 05 Nov 2024 10:00:00 GMT",
                                          "/devstoreaccount1/devstoreaccount1/orders?comp=acl");
  CHECK(Sign(DevKey(), acl) == "5EdKFOW32lclCEYoBr0uwtvrGFe9E+WGUadz52ZaH98=");
}

TEST_CASE("Shared Key Lite signs the spec's worked example") {
  std::string sts = SharedKeyLiteStringToSign("Tue, 05 Nov 2024 10:00:00 GMT",
                                              "/devstoreaccount1/devstoreaccount1/Tables");
  CHECK(Sign(DevKey(), sts) == "LLXqDnowft0uJUcR+ARAIQit1uld6JQysj76Mc+07Ww=");
}

TEST_CASE("SAS string-to-sign examples verify") {
  CHECK(Sign(DevKey(),
             "raud\n\n2030-01-01T00:00:00Z\n/table/devstoreaccount1/"
             "orders\n\n\nhttps,http\n2019-02-02\n\n\n\n") ==
        "0zEjZVPwQg6tZ148rUbGlC8NSdyB2lBmFHXSJKd0gH4=");
  CHECK(Sign(DevKey(),
             "devstoreaccount1\nrwdlacu\nt\nsco\n\n2030-01-01T00:00:00Z\n\nhttps,http\n2019-02-"
             "02\n") == "dKEa4zPUq/dWdOLrCYusn1Jnz45OJCCdBPi+hMWeijk=");
}

TEST_CASE("AZURITE_ACCOUNTS spec") {
  Accounts accounts;
  REQUIRE(accounts.AddDefault());
  std::string error;
  CHECK(accounts.AddFromSpec("acct1:a2V5MQ==:a2V5Mg==;acct2:a2V5Mw==", &error));
  REQUIRE(accounts.Find("acct1") != nullptr);
  CHECK(accounts.Find("acct1")->keys.size() == 2);
  CHECK(accounts.Find("acct1")->keys[1] == "key2");
  CHECK(accounts.Find("acct2")->keys[0] == "key3");
  CHECK(accounts.Find(kDevAccount) != nullptr);
  CHECK_FALSE(accounts.AddFromSpec("nokey", &error));
  CHECK_FALSE(accounts.AddFromSpec("bad:!!notbase64", &error));
}

TEST_CASE("SAS key range") {
  AuthGrant g;
  CHECK(g.InRange("a", "b"));
  g.spk = "b";
  g.srk = "5";
  g.epk = "d";
  CHECK_FALSE(g.InRange("a", "z"));
  CHECK_FALSE(g.InRange("b", "4"));
  CHECK(g.InRange("b", "5"));
  CHECK(g.InRange("c", ""));
  CHECK(g.InRange("d", "zzz"));
  CHECK_FALSE(g.InRange("e", ""));
  g.erk = "m";
  CHECK_FALSE(g.InRange("d", "n"));
}

TEST_CASE("SAS key range as one interval: Range().Contains agrees with InRange") {
  const std::vector<std::string> values = {"", "a", "b", "bb", "c", "d", "z"};
  std::vector<AuthGrant> grants(6);
  grants[1].spk = "b";
  grants[2].spk = "b";
  grants[2].srk = "c";
  grants[3].epk = "c";
  grants[4].epk = "c";
  grants[4].erk = "b";
  grants[5] = grants[2];
  grants[5].epk = "d";
  grants[5].erk = "a";
  for (const AuthGrant& g : grants) {
    for (const std::string& pk : values) {
      for (const std::string& rk : values) {
        CAPTURE(g.Range().ToString());
        CAPTURE(pk + "/" + rk);
        CHECK(g.Range().Contains(pk, rk) == g.InRange(pk, rk));
      }
    }
  }
}

TEST_CASE("what a grant reaches: tables, and the reserved endpoints") {
  AuthGrant g;
  CHECK(g.ReachesTable("anything"));
  CHECK(GrantsAdmin(g));
  g.kind = AuthGrant::Kind::kSharedKeyLite;
  CHECK(g.ReachesTable("anything"));
  CHECK_FALSE(GrantsAdmin(g));
  g.kind = AuthGrant::Kind::kServiceSas;
  g.table = "orders";
  CHECK(g.ReachesTable("Orders"));
  CHECK_FALSE(g.ReachesTable("others"));
  CHECK_FALSE(GrantsAdmin(g));
  g.kind = AuthGrant::Kind::kAccountSas;
  g.resource_types = "sc";
  CHECK_FALSE(g.ReachesTable("orders"));
  g.resource_types = "sco";
  CHECK(g.ReachesTable("orders"));
  CHECK_FALSE(GrantsAdmin(g));
  g.kind = AuthGrant::Kind::kBearer;
  CHECK_FALSE(GrantsAdmin(g));
}

}  // namespace cerulean::server
