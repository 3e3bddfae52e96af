#include "server/protocol/oauth.h"

#include <doctest/doctest.h>

#include <string>

#include "server/formats/base64.h"

namespace cerulean::server {

namespace {

constexpr int64_t kNow = 1'800'000'000;

std::string Base64Url(std::string_view s) {
  std::string b = Base64Encode(s);
  while (!b.empty() && b.back() == '=') b.pop_back();
  for (char& c : b) {
    if (c == '+') {
      c = '-';
    } else if (c == '/') {
      c = '_';
    }
  }
  return b;
}

// A token with the given payload JSON and a dummy signature.
std::string Token(std::string_view payload) {
  return Base64Url(R"({"alg":"RS256","typ":"JWT"})") + "." + Base64Url(payload) + ".c2ln";
}

std::string Claims(
    std::string aud = R"("https://storage.azure.com")",
    std::string iss = R"("https://sts.windows.net/72f988bf-86f1-41af-91ab-2d7cd011db47/")",
    int64_t nbf = kNow - 60, int64_t exp = kNow + 3600) {
  return R"({"aud":)" + aud + R"(,"iss":)" + iss + R"(,"iat":)" + std::to_string(nbf) +
         R"(,"nbf":)" + std::to_string(nbf) + R"(,"exp":)" + std::to_string(exp) + "}";
}

// The detail line of a refusal ("" when accepted).
std::string Detail(const std::string& token, std::string_view account = "devstoreaccount1") {
  auto err = CheckBearerToken(token, account, kNow);
  if (!err) return "";
  CHECK(err->error == AzureError::kInvalidAuthenticationInfoToken);
  std::string_view m = err->Message();
  return std::string(m.substr(m.find('\n') + 1));
}

}  // namespace

TEST_CASE("audiences: Azure Storage and this account's table endpoint") {
  CHECK(IsAcceptedAudience("https://storage.azure.com", "a"));
  CHECK(IsAcceptedAudience("https://storage.azure.com/", "a"));
  CHECK(IsAcceptedAudience("e406a681-f3d4-42a8-90b6-c2b029497af1", "a"));
  CHECK(IsAcceptedAudience("https://devstoreaccount1.table.core.windows.net", "devstoreaccount1"));
  CHECK(IsAcceptedAudience("https://devstoreaccount1.table.core.windows.net/", "devstoreaccount1"));
  CHECK(IsAcceptedAudience("https://acct.table.core.chinacloudapi.cn", "acct"));
  CHECK(IsAcceptedAudience("https://acct.table.core.usgovcloudapi.net/", "acct"));
  CHECK(IsAcceptedAudience("https://acct.table.core.cloudapi.de", "acct"));
  CHECK_FALSE(IsAcceptedAudience("https://other.table.core.windows.net", "devstoreaccount1"));
  CHECK_FALSE(
      IsAcceptedAudience("https://devstoreaccount1.blob.core.windows.net", "devstoreaccount1"));
  CHECK_FALSE(IsAcceptedAudience("https://storage.azure.com.evil", "a"));
  CHECK_FALSE(IsAcceptedAudience("https://management.azure.com", "a"));
  CHECK_FALSE(IsAcceptedAudience("", "a"));
}

TEST_CASE("issuers: Entra ID v1 and v2, sovereign clouds") {
  CHECK(IsAcceptedIssuer("https://sts.windows.net/72f988bf-86f1-41af-91ab-2d7cd011db47/"));
  CHECK(IsAcceptedIssuer("https://sts.chinacloudapi.cn/t/"));
  CHECK(IsAcceptedIssuer(
      "https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0"));
  CHECK(IsAcceptedIssuer("https://login.microsoftonline.us/t/v2.0"));
  CHECK_FALSE(IsAcceptedIssuer("https://sts.windows.net/"));  // no tenant
  CHECK_FALSE(IsAcceptedIssuer("https://accounts.google.com"));
  CHECK_FALSE(IsAcceptedIssuer("http://sts.windows.net/t/"));
}

TEST_CASE("CheckBearerToken accepts a well-formed unexpired token") {
  CHECK(Detail(Token(Claims())) == "");
  CHECK(Detail(Token(Claims(R"(["x","https://devstoreaccount1.table.core.windows.net"])"))) == "");
  // Within the clock skew on both ends.
  CHECK(Detail(Token(Claims(R"("https://storage.azure.com")", R"("https://sts.windows.net/t/")",
                            kNow + 60, kNow - 60))) == "");
}

TEST_CASE("CheckBearerToken refusals name the failed check") {
  CHECK(Detail("abc") == "The bearer token is not a JWT (expected header.payload.signature).");
  CHECK(Detail("a.b.c.d") == "The bearer token is not a JWT (expected header.payload.signature).");
  CHECK(Detail("!!.??.sig") == "The bearer token is not a well-formed JWT.");
  CHECK(Detail(Token("[1,2]")) == "The bearer token is not a well-formed JWT.");
  CHECK(Detail(Token(R"({"aud":"https://storage.azure.com"})")) ==
        "Lifetime validation failed. The token has no valid nbf and exp claims.");
  CHECK(Detail(Token(Claims(R"("https://storage.azure.com")", R"("https://sts.windows.net/t/")",
                            kNow - 7200, kNow - 3600))) ==
        "Lifetime validation failed. The token is expired.");
  CHECK(Detail(Token(Claims(R"("https://storage.azure.com")", R"("https://sts.windows.net/t/")",
                            kNow + 3600, kNow + 7200))) ==
        "Lifetime validation failed. The token is not yet valid.");
  CHECK(Detail(Token(Claims(R"("https://storage.azure.com")", R"("https://example.com/")"))) ==
        "Issuer validation failed. Issuer did not match.");
  CHECK(Detail(Token(Claims(R"("https://vault.azure.net")"))) ==
        "Audience validation failed. Audience did not match.");
  CHECK(Detail(Token(Claims(R"("https://devstoreaccount1.table.core.windows.net")")), "other") ==
        "Audience validation failed. Audience did not match.");
}

TEST_CASE("CheckBearerToken: deeply nested claims are refused without recursion") {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  CHECK(Detail(Token(R"({"aud":)" + deep + "}")) != "");
  CHECK(Detail(Token(deep)) == "The bearer token is not a well-formed JWT.");
}

}  // namespace cerulean::server
