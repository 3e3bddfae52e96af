#include "server/formats/entity_atom.h"

#include <doctest/doctest.h>

#include <cmath>

#include "server/formats/entity_json.h"
#include "server/formats/escape.h"
#include "server/http/router.h"
#include "storage/edm_text.h"

namespace cerulean::server {

using storage::EdmType;
using storage::Entity;
using storage::Value;

namespace {

constexpr std::string_view kHead =
    R"(<?xml version="1.0" encoding="utf-8" standalone="yes"?>)"
    R"(<entry xmlns="http://www.w3.org/2005/Atom" xmlns:d="http://schemas.microsoft.com/ado/2007/08/dataservices" )"
    R"(xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><title /><updated>2013-09-18T23:46:19Z</updated>)"
    R"(<author><name /></author><id /><content type="application/xml"><m:properties>)";
constexpr std::string_view kTail = "</m:properties></content></entry>";

// An insert body whose m:properties are `props`.
std::string Entry(std::string_view props) {
  return std::string(kHead) + std::string(props) + std::string(kTail);
}
std::string Keyed(std::string_view props) {
  return Entry("<d:PartitionKey>p</d:PartitionKey><d:RowKey>r</d:RowKey>" + std::string(props));
}

Entity MustParse(std::string_view body, bool keys = true) {
  Entity e;
  auto err = ParseAtomEntityBody(body, keys, &e);
  INFO(body);
  if (err) INFO(err->Message());
  REQUIRE_FALSE(err.has_value());
  return e;
}

AzureError ParseError(std::string_view body, bool keys = true) {
  Entity e;
  auto err = ParseAtomEntityBody(body, keys, &e);
  INFO(body);
  REQUIRE(err.has_value());
  return err->error;
}

AtomContext TestContext(std::string_view table = "orders") {
  return AtomContext{"http://127.0.0.1:10002/devstoreaccount1", "devstoreaccount1", table,
                     "2013-03-27T11:02:04Z"};
}

}  // namespace

TEST_CASE("Atom properties are typed by m:type; no m:type is a string") {
  Entity e = MustParse(Keyed(
      R"(<d:Note>hello</d:Note><d:Qty m:type="Edm.Int32">3</d:Qty><d:Count m:type="Edm.Int64">-9223372036854775808</d:Count>)"
      R"(<d:Amount m:type="Edm.Double">12.5</d:Amount><d:Paid m:type="Edm.Boolean">true</d:Paid>)"
      R"(<d:No m:type="Edm.Boolean">0</d:No><d:Due m:type="Edm.DateTime">2024-12-01T00:00:00.1234567Z</d:Due>)"
      R"(<d:Ref m:type="Edm.Guid">C9DA6455-213D-42C9-9A79-3E9149A57833</d:Ref><d:Blob m:type="Edm.Binary">AQID</d:Blob>)"
      R"(<d:Missing m:type="Edm.Binary" m:null="true" /><d:Nan m:type="Edm.Double">NaN</d:Nan>)"
      R"(<d:Inf m:type="Edm.Double">INF</d:Inf><d:NegInf m:type="Edm.Double">-Infinity</d:NegInf>)"
      R"(<d:Digits>42</d:Digits><d:Empty /><d:Typed m:type="Edm.String">x</d:Typed>)"
      R"(<d:Timestamp m:type="Edm.DateTime">2000-01-01T00:00:00Z</d:Timestamp>)"));
  CHECK(e.partition_key == "p");
  CHECK(e.row_key == "r");
  CHECK(e.Find("Note")->string() == "hello");
  CHECK(e.Find("Qty")->int32() == 3);
  CHECK(e.Find("Count")->int64() == INT64_MIN);
  CHECK(e.Find("Amount")->dbl() == 12.5);
  CHECK(e.Find("Paid")->boolean());
  CHECK_FALSE(e.Find("No")->boolean());
  CHECK(storage::FormatDateTime(e.Find("Due")->ticks()) == "2024-12-01T00:00:00.1234567Z");
  CHECK(storage::FormatGuid(e.Find("Ref")->guid()) == "c9da6455-213d-42c9-9a79-3e9149a57833");
  CHECK(e.Find("Blob")->binary() == std::string("\x01\x02\x03"));
  CHECK(e.Find("Missing") == nullptr);
  CHECK(std::isnan(e.Find("Nan")->dbl()));
  CHECK(e.Find("Inf")->dbl() == INFINITY);
  CHECK(e.Find("NegInf")->dbl() == -INFINITY);
  CHECK(e.Find("Digits")->type() == EdmType::kString);
  CHECK(e.Find("Empty")->string().empty());
  CHECK(e.Find("Typed")->string() == "x");
  CHECK(e.Find("Timestamp") == nullptr);
}

TEST_CASE("Atom bodies are read by namespace URI, not prefix") {
  Entity e = MustParse(
      R"(<a:entry xmlns:a="http://www.w3.org/2005/Atom" xmlns="http://schemas.microsoft.com/ado/2007/08/dataservices" )"
      R"(xmlns:meta="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><a:content type="application/xml">)"
      R"(<meta:properties><PartitionKey>p</PartitionKey><RowKey>r</RowKey><Qty meta:type="Edm.Int32">7</Qty>)"
      R"(<x:Other xmlns:x="urn:elsewhere">ignored</x:Other></meta:properties></a:content></a:entry>)");
  CHECK(e.Find("Qty")->int32() == 7);
  CHECK(e.properties.size() == 1);
  // A d: prefix bound to another URI is not the data namespace.
  Entity none = MustParse(
      R"(<entry xmlns="http://www.w3.org/2005/Atom" xmlns:d="urn:not-data" )"
      R"(xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><content><m:properties>)"
      R"(<d:A>1</d:A></m:properties></content></entry>)",
      false);
  CHECK(none.properties.empty());
}

TEST_CASE("Atom text: whitespace, escapes and wrapped base64") {
  Entity e = MustParse(
      Keyed("<d:S>  a&amp;b&lt;c&gt;&#xD;\n\"'  </d:S><d:I m:type=\"Edm.Int32\"> +5\n</d:I>"
            "<d:C><![CDATA[<raw>&]]></d:C><d:B m:type=\"Edm.Binary\">AQID\n  BAU=</d:B>"
            "<d:U>\xC3\xA9\xE2\x82\xAC</d:U>"));
  CHECK(e.Find("S")->string() == "  a&b<c>\r\n\"'  ");
  CHECK(e.Find("I")->int32() == 5);
  CHECK(e.Find("C")->string() == "<raw>&");
  CHECK(e.Find("B")->binary() == std::string("\x01\x02\x03\x04\x05"));
  CHECK(e.Find("U")->string() == "\xC3\xA9\xE2\x82\xAC");
}

TEST_CASE("Atom keys: from the body on insert only") {
  Entity e = MustParse(Keyed("<d:A>1</d:A>"), false);
  CHECK(e.partition_key.empty());
  CHECK(e.properties.size() == 1);
  CHECK(ParseError(Entry("<d:PartitionKey>p</d:PartitionKey>")) ==
        AzureError::kPropertiesNeedValue);
  CHECK(ParseError(Entry(R"(<d:PartitionKey m:null="true" /><d:RowKey>r</d:RowKey>)")) ==
        AzureError::kPropertiesNeedValue);
  CHECK(ParseError(Entry(
            R"(<d:PartitionKey m:type="Edm.Int32">1</d:PartitionKey><d:RowKey>r</d:RowKey>)")) ==
        AzureError::kInvalidInput);
  CHECK(ParseError(Entry("<d:PartitionKey>p/q</d:PartitionKey><d:RowKey>r</d:RowKey>")) ==
        AzureError::kOutOfRangeInput);
  CHECK(ParseError(Entry("<d:PartitionKey>" + std::string(1025, 'k') +
                         "</d:PartitionKey><d:RowKey>r</d:RowKey>")) ==
        AzureError::kPropertyValueTooLarge);
  // No properties at all: an entry without content.
  CHECK(ParseError(R"(<entry xmlns="http://www.w3.org/2005/Atom"/>)") ==
        AzureError::kPropertiesNeedValue);
  CHECK(MustParse(R"(<entry xmlns="http://www.w3.org/2005/Atom"/>)", false).properties.empty());
}

TEST_CASE("Atom body errors match the JSON codec's") {
  CHECK(ParseError("") == AzureError::kInvalidInput);
  CHECK(ParseError("not xml") == AzureError::kInvalidInput);
  CHECK(ParseError(Keyed("<d:A>1</d:A>").substr(0, 300)) == AzureError::kInvalidInput);
  CHECK(ParseError(R"({"PartitionKey":"p","RowKey":"r"})") == AzureError::kInvalidInput);
  CHECK(ParseError(R"(<feed xmlns="http://www.w3.org/2005/Atom"/>)") == AzureError::kInvalidInput);
  CHECK(ParseError("<entry/>") == AzureError::kInvalidInput);
  CHECK(ParseError(
            R"(<!DOCTYPE entry [<!ENTITY x "y">]><entry xmlns="http://www.w3.org/2005/Atom"/>)") ==
        AzureError::kInvalidInput);
  CHECK(ParseError(Keyed("<d:A><d:B>1</d:B></d:A>")) == AzureError::kInvalidInput);
  CHECK(ParseError(Keyed(R"(<d:A m:null="maybe">1</d:A>)")) == AzureError::kInvalidInput);
  CHECK(ParseError(Keyed("<d:A>1</d:A><d:A>2</d:A>")) == AzureError::kDuplicatePropertiesSpecified);
  CHECK(ParseError(Keyed(R"(<d:A m:type="Edm.Single">1</d:A>)")) == AzureError::kInvalidInput);
  CHECK(ParseError(Keyed(R"(<d:A m:type="Edm.Int32">2147483648</d:A>)")) ==
        AzureError::kInvalidInput);
  CHECK(ParseError(Keyed(R"(<d:A m:type="Edm.Int32">1.5</d:A>)")) == AzureError::kInvalidInput);
  CHECK(ParseError(Keyed(R"(<d:A m:type="Edm.Int64">+-5</d:A>)")) == AzureError::kInvalidInput);
  CHECK(ParseError(Keyed(R"(<d:A m:type="Edm.Double">inf</d:A>)")) == AzureError::kInvalidInput);
  CHECK(ParseError(Keyed(R"(<d:A m:type="Edm.Double"></d:A>)")) == AzureError::kInvalidInput);
  CHECK(ParseError(Keyed(R"(<d:A m:type="Edm.Boolean">yes</d:A>)")) == AzureError::kInvalidInput);
  CHECK(ParseError(Keyed(R"(<d:A m:type="Edm.Guid">xyz</d:A>)")) == AzureError::kInvalidInput);
  CHECK(ParseError(Keyed(R"(<d:A m:type="Edm.Binary">a-_b</d:A>)")) == AzureError::kInvalidInput);
  CHECK(ParseError(Keyed(R"(<d:A m:type="Edm.DateTime">0001-01-01T00:00:00Z</d:A>)")) ==
        AzureError::kOutOfRangeInput);
  CHECK(ParseError(Keyed(R"(<d:A m:type="Edm.DateTime">yesterday</d:A>)")) ==
        AzureError::kInvalidInput);
  CHECK(ParseError(Keyed("<d:a-b>1</d:a-b>")) == AzureError::kPropertyNameInvalid);
  CHECK(ParseError(Keyed("<d:" + std::string(256, 'n') + ">1</d:" + std::string(256, 'n') + ">")) ==
        AzureError::kPropertyNameTooLong);
}

TEST_CASE("Atom size limits") {
  MustParse(Keyed("<d:S>" + std::string(32768, 'a') + "</d:S>"));
  CHECK(ParseError(Keyed("<d:S>" + std::string(32769, 'a') + "</d:S>")) ==
        AzureError::kPropertyValueTooLarge);
  std::string many;
  for (int i = 0; i < 252; ++i)
    many += "<d:P" + std::to_string(i) + " m:type=\"Edm.Int32\">1</d:P" + std::to_string(i) + ">";
  MustParse(Keyed(many));
  CHECK(ParseError(Keyed(many + "<d:Extra>1</d:Extra>")) == AzureError::kTooManyProperties);
}

TEST_CASE("Create Table Atom body") {
  std::string name;
  CHECK_FALSE(ParseAtomTableBody(Entry("<d:TableName>orders</d:TableName>"), &name));
  CHECK(name == "orders");
  CHECK(ParseAtomTableBody(Entry(""), &name)->error == AzureError::kPropertiesNeedValue);
  CHECK(ParseAtomTableBody(Entry(R"(<d:TableName m:null="true" />)"), &name)->error ==
        AzureError::kPropertiesNeedValue);
  CHECK(ParseAtomTableBody(Entry(R"(<d:TableName m:type="Edm.Int32">1</d:TableName>)"), &name)
            ->error == AzureError::kInvalidInput);
  CHECK(ParseAtomTableBody("<TableName>x</TableName>", &name)->error == AzureError::kInvalidInput);
}

TEST_CASE("Atom entry rendering") {
  Entity e;
  e.partition_key = "p'1";
  e.row_key = "r&";
  e.timestamp = *storage::ParseDateTime("2013-03-27T11:02:04.297705Z");
  e.properties = {{"S", Value::String("a&b<c>\"d\r")}, {"I", Value::Int32(3)}};
  std::string out;
  AppendEntityAtom(&out, e, TestContext(), true, nullptr);
  CHECK(
      out ==
      "<?xml version=\"1.0\" encoding=\"utf-8\" standalone=\"yes\"?>\r\n"
      R"(<entry xml:base="http://127.0.0.1:10002/devstoreaccount1/" xmlns="http://www.w3.org/2005/Atom" )"
      R"(xmlns:d="http://schemas.microsoft.com/ado/2007/08/dataservices" )"
      R"(xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata" )"
      R"(m:etag="W/&quot;datetime'2013-03-27T11%3A02%3A04.297705Z'&quot;">)"
      R"(<id>http://127.0.0.1:10002/devstoreaccount1/orders(PartitionKey='p''1',RowKey='r%26')</id>)"
      R"(<title type="text"></title><updated>2013-03-27T11:02:04Z</updated><author><name /></author>)"
      R"x(<link rel="edit" title="orders" href="orders(PartitionKey='p''1',RowKey='r%26')" />)x"
      R"(<category term="devstoreaccount1.orders" scheme="http://schemas.microsoft.com/ado/2007/08/dataservices/scheme" />)"
      R"(<content type="application/xml"><m:properties><d:PartitionKey>p'1</d:PartitionKey><d:RowKey>r&amp;</d:RowKey>)"
      R"(<d:Timestamp m:type="Edm.DateTime">2013-03-27T11:02:04.297705Z</d:Timestamp>)"
      R"(<d:S>a&amp;b&lt;c&gt;"d&#xD;</d:S><d:I m:type="Edm.Int32">3</d:I></m:properties></content></entry>)");
}

TEST_CASE("Atom output parses back to the same entity, for every type") {
  Entity e;
  e.partition_key = "pk \xC3\xA9";
  e.row_key = "rk<>";
  e.timestamp = *storage::ParseDateTime("2024-01-02T03:04:05.0000001Z");
  e.properties = {
      {"S", Value::String(" \t\r\n<&>\"' \xF0\x9F\x98\x80 ")},
      {"Empty", Value::String("")},
      {"B", Value::Boolean(false)},
      {"I", Value::Int32(INT32_MIN)},
      {"L", Value::Int64(INT64_MAX)},
      {"D", Value::Double(-0.1)},
      {"Big", Value::Double(1e300)},
      {"Nan", Value::Double(NAN)},
      {"Inf", Value::Double(-INFINITY)},
      {"T", Value::DateTimeTicks(*storage::ParseDateTime("1601-01-01T00:00:00Z"))},
      {"G", Value::FromGuid(*storage::ParseGuid("c9da6455-213d-42c9-9a79-3e9149a57833"))},
      {"Bin", Value::FromBinary(std::string("\x00\xFF\x10", 3))},
  };
  std::string out;
  AppendEntityAtom(&out, e, TestContext(), true, nullptr);
  Entity back = MustParse(out);
  back.timestamp = e.timestamp;
  CHECK(back == e);
}

TEST_CASE("Atom $select writes absent properties as m:null") {
  Entity e;
  e.partition_key = "p";
  e.row_key = "r";
  e.properties = {{"A", Value::Int64(5)}};
  std::vector<std::string> select{"A", "Missing", "RowKey"};
  std::string out;
  AppendEntityAtom(&out, e, TestContext(), false, &select);
  CHECK(out.starts_with("<entry m:etag="));
  CHECK(out.find("xml:base") == std::string::npos);
  CHECK(out.find("<m:properties><d:RowKey>r</d:RowKey><d:A m:type=\"Edm.Int64\">5</d:A>"
                 "<d:Missing m:null=\"true\" /></m:properties>") != std::string::npos);
  CHECK(out.find("PartitionKey>") == std::string::npos);
  CHECK(out.find("Timestamp") == std::string::npos);
}

TEST_CASE("Atom feeds and tables") {
  AtomContext tables = TestContext("Tables");
  std::string out;
  AppendAtomFeedStart(&out, tables, true);
  AppendAtomFeedEnd(&out);
  CHECK(
      out ==
      "<?xml version=\"1.0\" encoding=\"utf-8\" standalone=\"yes\"?>\r\n"
      R"(<feed xml:base="http://127.0.0.1:10002/devstoreaccount1/" xmlns="http://www.w3.org/2005/Atom" )"
      R"(xmlns:d="http://schemas.microsoft.com/ado/2007/08/dataservices" )"
      R"(xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata">)"
      R"(<title type="text">Tables</title><id>http://127.0.0.1:10002/devstoreaccount1/Tables</id>)"
      R"(<updated>2013-03-27T11:02:04Z</updated><link rel="self" title="Tables" href="Tables" />)"
      R"(<author><name /></author></feed>)");
  out.clear();
  AppendAtomFeedStart(&out, tables, false);
  AppendTableAtom(&out, "orders", tables, false);
  AppendAtomFeedEnd(&out);
  CHECK(out.find("<author><name /></author><entry>") == std::string::npos);
  CHECK(out.find(R"(<link rel="self" title="Tables" href="Tables" /><entry>)"
                 R"(<id>http://127.0.0.1:10002/devstoreaccount1/Tables('orders')</id>)") !=
        std::string::npos);
  CHECK(out.find(R"x(<link rel="edit" title="Tables" href="Tables('orders')" />)x"
                 R"(<category term="devstoreaccount1.Tables" )") != std::string::npos);
  CHECK(out.find("<m:properties><d:TableName>orders</d:TableName></m:properties>") !=
        std::string::npos);
  // A Create Table entry is a body the table parser reads back.
  out.clear();
  AppendTableAtom(&out, "orders", tables, true);
  std::string name;
  CHECK_FALSE(ParseAtomTableBody(out, &name));
  CHECK(name == "orders");
}

TEST_CASE("MakeAtomContext: updated is now in whole seconds") {
  AtomContext ctx = MakeAtomContext("http://h/a", "a", "t");
  CHECK(ctx.updated.size() == 20);
  CHECK(ctx.updated.back() == 'Z');
  CHECK(storage::ParseDateTime(ctx.updated).has_value());
}

TEST_CASE("XML text escaping keeps documents well-formed") {
  std::string out;
  // C0 control, stray byte, U+FFFE, an encoded surrogate: each bad byte
  // becomes one U+FFFD.
  AppendXmlText(&out, std::string("a\x01\tb\nc\xFF\xEF\xBF\xBE\xED\xA0\x80", 13));
  const std::string r = "\xEF\xBF\xBD";
  CHECK(out == "a" + r + "\tb\nc" + r + r + r + r + r + r + r);
  out.clear();
  AppendXmlText(&out, "\"<'&>\t\n\r", true);
  CHECK(out == "&quot;&lt;'&amp;&gt;&#x9;&#xA;&#xD;");
}

TEST_CASE("format negotiation: Atom before 2015-12-11") {
  Metadata m;
  bool atom = false;
  CHECK_FALSE(NegotiateFormat("", "", "2011-08-18", &m, &atom));
  CHECK(atom);
  CHECK_FALSE(NegotiateFormat("", "application/atom+xml,application/xml", "2013-08-15", &m, &atom));
  CHECK(atom);
  CHECK_FALSE(NegotiateFormat("", "application/xml", "2015-04-05", &m, &atom));
  CHECK(atom);
  CHECK_FALSE(NegotiateFormat("atom", "application/json", "2015-04-05", &m, &atom));
  CHECK(atom);
  CHECK_FALSE(NegotiateFormat("", "*/*", "2012-02-12", &m, &atom));
  CHECK(atom);
  CHECK_FALSE(NegotiateFormat("", "application/json", "2013-08-15", &m, &atom));
  CHECK_FALSE(atom);
  CHECK(NegotiateFormat("", "application/json", "2012-02-12", &m, &atom)->error ==
        AzureError::kJsonFormatNotSupported);
  CHECK(NegotiateFormat("", "application/atom+xml", "2015-12-11", &m, &atom)->error ==
        AzureError::kAtomFormatNotSupported);
  CHECK(NegotiateFormat("", "", "2015-12-11", &m, &atom)->error ==
        AzureError::kAtomFormatNotSupported);
  CHECK_FALSE(NegotiateFormat("", "*/*", "2015-12-11", &m, &atom));
  CHECK_FALSE(atom);
  CHECK(m == Metadata::kMinimal);
}

}  // namespace cerulean::server
