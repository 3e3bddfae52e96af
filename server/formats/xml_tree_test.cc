// Tests of ReadXmlTree and of the two XML bodies read with it (Set Table ACL,
// Set Service Properties) under hostile input.
#include "server/formats/xml_tree.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "server/formats/acl_xml.h"
#include "server/formats/entity_atom.h"
#include "server/protocol/service_properties.h"

namespace cerulean::server {

namespace {

namespace pt = boost::property_tree;

std::string Nested(std::string_view root, size_t depth) {
  std::string xml = "<" + std::string(root) + ">";
  for (size_t i = 0; i < depth; ++i) xml += "<a>";
  for (size_t i = 0; i < depth; ++i) xml += "</a>";
  return xml + "</" + std::string(root) + ">";
}

}  // namespace

TEST_CASE("ReadXmlTree: the shape of property_tree's read_xml") {
  pt::ptree tree;
  REQUIRE(ReadXmlTree(R"(<?xml version="1.0" encoding="utf-8"?>
<!-- top --><R x="1" y="&lt;2"><A>t&amp;1<![CDATA[<c>]]></A><!-- in --><B/><A>two</A></R>)",
                      &tree));
  const pt::ptree& r = tree.get_child("R");
  CHECK(r.get<std::string>("<xmlattr>.x") == "1");
  CHECK(r.get<std::string>("<xmlattr>.y") == "<2");
  CHECK(r.get<std::string>("A") == "t&1<c>");
  CHECK(r.count("A") == 2);
  CHECK(r.count("B") == 1);
  CHECK(r.count("<xmlcomment>") == 1);
  CHECK(r.get<std::string>("<xmlcomment>") == " in ");
}

TEST_CASE("ReadXmlTree: refuses what is not well-formed, DTDs and oversized trees") {
  pt::ptree tree;
  for (const char* bad : {"", "<a>", "<a></b>", "<a/><b/>", "<a>&undefined;</a>", "text",
                          "<!DOCTYPE a [<!ENTITY e \"x\">]><a>&e;</a>", "<a x='1' x='2'/>"}) {
    CAPTURE(bad);
    CHECK_FALSE(ReadXmlTree(bad, &tree));
    CHECK(tree.empty());
  }
  CHECK(ReadXmlTree(Nested("r", kMaxXmlDepth - 1), &tree));
  CHECK_FALSE(ReadXmlTree(Nested("r", kMaxXmlDepth), &tree));
  std::string wide = "<r>";
  for (size_t i = 0; i < kMaxXmlElements; ++i) wide += "<a/>";
  CHECK_FALSE(ReadXmlTree(wide + "</r>", &tree));
}

TEST_CASE("ACL and service properties: deep nesting is InvalidXmlDocument, not a crash") {
  // A million levels overflowed the stack of the recursive parser used before.
  const std::string acl = Nested("SignedIdentifiers", 1000000);
  std::vector<AccessPolicy> policies;
  auto err = ParseAclXml(acl, &policies);
  REQUIRE(err);
  CHECK(err->error == AzureError::kInvalidXmlDocument);

  ServiceProperties props;
  err = ApplyServicePropertiesXml(Nested("StorageServiceProperties", 1000000), &props);
  REQUIRE(err);
  CHECK(err->error == AzureError::kInvalidXmlDocument);
  err = ApplyServicePropertiesXml("<!DOCTYPE x><StorageServiceProperties/>", &props);
  REQUIRE(err);
  CHECK(err->error == AzureError::kInvalidXmlDocument);
}

TEST_CASE("service properties: round trip, and a sixth CORS rule refused") {
  const std::string rule =
      "<CorsRule><AllowedOrigins>http://a.example</AllowedOrigins><AllowedMethods>GET"
      "</AllowedMethods><MaxAgeInSeconds>5</MaxAgeInSeconds><ExposedHeaders>x-ms-*"
      "</ExposedHeaders><AllowedHeaders>x-a</AllowedHeaders></CorsRule>";
  std::string five;
  for (int i = 0; i < 5; ++i) five += rule;
  ServiceProperties props;
  REQUIRE_FALSE(ApplyServicePropertiesXml(
      "<StorageServiceProperties><Logging><Version>1.0</Version><Read>true</Read>"
      "<RetentionPolicy><Enabled>true</Enabled><Days>3</Days></RetentionPolicy></Logging><Cors>" +
          five + "</Cors></StorageServiceProperties>",
      &props));
  CHECK(props.cors.size() == 5);
  CHECK(props.logging.read);
  CHECK(props.logging.retention.days == 3);
  ServiceProperties again;
  REQUIRE_FALSE(ApplyServicePropertiesXml(ServicePropertiesToXml(props), &again));
  CHECK(ServicePropertiesToXml(again) == ServicePropertiesToXml(props));

  auto err = ApplyServicePropertiesXml(
      "<StorageServiceProperties><Cors>" + five + rule + "</Cors></StorageServiceProperties>",
      &props);
  REQUIRE(err);
  CHECK(err->error == AzureError::kInvalidXmlNodeValue);
  CHECK(props.cors.size() == 5);
}

TEST_CASE("Atom entry: deep nesting anywhere is InvalidInput") {
  const std::string head =
      R"(<entry xmlns="http://www.w3.org/2005/Atom" )"
      R"(xmlns:d="http://schemas.microsoft.com/ado/2007/08/dataservices" )"
      R"(xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata">)"
      R"(<content type="application/xml"><m:properties>)"
      "<d:PartitionKey>p</d:PartitionKey><d:RowKey>r</d:RowKey>";
  const std::string tail = "</m:properties></content></entry>";
  std::string deep;
  for (int i = 0; i < 200000; ++i) deep += "<x>";
  for (int i = 0; i < 200000; ++i) deep += "</x>";
  for (const std::string& body :
       {head + "<d:A>" + deep + "</d:A>" + tail,
        head + "<o xmlns=\"urn:o\">" + deep + "</o>" + tail,
        R"(<entry xmlns="http://www.w3.org/2005/Atom">)" + deep + "</entry>"}) {
    storage::Entity e;
    auto err = ParseAtomEntityBody(body, true, &e);
    REQUIRE(err);
    CHECK(err->error == AzureError::kInvalidInput);
  }
  // Extension elements a few levels deep are still skipped.
  storage::Entity e;
  CHECK_FALSE(
      ParseAtomEntityBody(head + "<o xmlns=\"urn:o\"><x><y>1</y></x></o>" + tail, true, &e));
  CHECK(e.partition_key == "p");
}

}  // namespace cerulean::server
