// Tests of the Table ACL XML codec: round trip, limits, and the listing of
// identifiers without a policy.
#include "server/formats/acl_xml.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace cerulean::server {

TEST_CASE("ACL XML round trip and limits") {
  std::vector<AccessPolicy> policies;
  REQUIRE_FALSE(ParseAclXml(R"(<?xml version="1.0" encoding="utf-8"?>
<SignedIdentifiers><SignedIdentifier><Id>p1</Id><AccessPolicy><Start>2024-01-01T00:00:00Z</Start>
<Expiry>2025-01-01T00:00:00Z</Expiry><Permission>raud</Permission></AccessPolicy></SignedIdentifier>
</SignedIdentifiers>)",
                            &policies));
  REQUIRE(policies.size() == 1);
  CHECK(policies[0].permission == "raud");
  std::string xml = AclToXml(policies);
  CHECK(xml.find("<Start>2024-01-01T00:00:00.0000000Z</Start>") != std::string::npos);
  std::vector<AccessPolicy> again;
  REQUIRE_FALSE(ParseAclXml(xml, &again));
  CHECK(again.size() == 1);
  std::string six = "<SignedIdentifiers>";
  for (int i = 0; i < 6; ++i)
    six += "<SignedIdentifier><Id>i" + std::to_string(i) + "</Id></SignedIdentifier>";
  six += "</SignedIdentifiers>";
  CHECK(ParseAclXml(six, &again)->error == AzureError::kInvalidXmlDocument);
  CHECK(ParseAclXml("<SignedIdentifiers><oops>", &again)->error == AzureError::kInvalidXmlDocument);
  CHECK(
      ParseAclXml(
          "<SignedIdentifiers><SignedIdentifier><Id>x</Id><AccessPolicy><Permission>w</Permission>"
          "</AccessPolicy></SignedIdentifier></SignedIdentifiers>",
          &again)
          ->error == AzureError::kInvalidXmlDocument);
  CHECK(AclToXml({}) == "<?xml version=\"1.0\" encoding=\"utf-8\"?><SignedIdentifiers />");
}

TEST_CASE("ACL XML: an identifier without a policy is listed without <AccessPolicy>") {
  // As Azure answers Get Table ACL after the JS SDK set these four.
  std::vector<AccessPolicy> policies;
  REQUIRE_FALSE(ParseAclXml(
      "<SignedIdentifiers><SignedIdentifier><Id>null</Id></SignedIdentifier>"
      "<SignedIdentifier><Id>empty</Id><AccessPolicy/></SignedIdentifier>"
      "<SignedIdentifier><Id>partial</Id><AccessPolicy><Permission>r</Permission></AccessPolicy>"
      "</SignedIdentifier></SignedIdentifiers>",
      &policies));
  CHECK(AclToXml(policies) ==
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><SignedIdentifiers>"
        "<SignedIdentifier><Id>null</Id></SignedIdentifier>"
        "<SignedIdentifier><Id>empty</Id></SignedIdentifier>"
        "<SignedIdentifier><Id>partial</Id><AccessPolicy><Permission>r</Permission></AccessPolicy>"
        "</SignedIdentifier></SignedIdentifiers>");
}

}  // namespace cerulean::server
