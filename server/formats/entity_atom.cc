#include "server/formats/entity_atom.h"

#include <expat.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_set>
#include <utility>

#include "server/formats/base64.h"
#include "server/formats/entity_id.h"
#include "server/formats/entity_rules.h"
#include "server/formats/escape.h"
#include "server/formats/xml_tree.h"
#include "storage/edm_text.h"

namespace cerulean::server {

using storage::EdmType;
using storage::Entity;
using storage::Value;

namespace {

constexpr std::string_view kAtomNs = "http://www.w3.org/2005/Atom";
constexpr std::string_view kDataNs = "http://schemas.microsoft.com/ado/2007/08/dataservices";
constexpr std::string_view kMetadataNs =
    "http://schemas.microsoft.com/ado/2007/08/dataservices/metadata";

// Expat reports a namespaced name as "<uri><kNsSeparator><local>". A space
// can be in neither a local name nor (unescaped) a namespace name.
constexpr char kNsSeparator = ' ';

// A name as expat reports it, split into namespace URI and local name.
struct ExpandedName {
  std::string_view ns;  // empty: no namespace
  std::string_view local;

  explicit ExpandedName(const XML_Char* name) {
    std::string_view s(name);
    size_t sep = s.rfind(kNsSeparator);
    if (sep == std::string_view::npos) {
      local = s;
    } else {
      ns = s.substr(0, sep);
      local = s.substr(sep + 1);
    }
  }
  bool Is(std::string_view want_ns, std::string_view want_local) const {
    return ns == want_ns && local == want_local;
  }
};

// One element of m:properties as written: nothing is typed or checked yet.
struct RawProperty {
  std::string name;
  std::optional<std::string> type;  // m:type
  bool is_null = false;             // m:null="true"
  std::string text;
};

// Collects the properties of entry/content/m:properties with expat. Depth 1
// is the root entry, 2 its content, 3 m:properties, 4 the properties.
class PropertiesReader {
 public:
  explicit PropertiesReader(std::vector<RawProperty>* out) : out_(out) {}

  // Parses `body`; InvalidInput on malformed XML or an unexpected shape.
  std::optional<ErrorReply> Read(std::string_view body) {
    std::unique_ptr<XML_ParserStruct, decltype(&XML_ParserFree)> parser(
        XML_ParserCreateNS(nullptr, kNsSeparator), &XML_ParserFree);
    if (!parser) return ErrorReply(AzureError::kInternalError);
    parser_ = parser.get();
    XML_SetUserData(parser_, this);
    XML_SetElementHandler(parser_, &PropertiesReader::OnStart, &PropertiesReader::OnEnd);
    XML_SetCharacterDataHandler(parser_, &PropertiesReader::OnText);
    // No DTDs: entity expansion is the only thing they would bring.
    XML_SetStartDoctypeDeclHandler(parser_, &PropertiesReader::OnDoctype);
    // Bodies are at most 4 MiB (session.cc), far below INT_MAX.
    XML_Status status = XML_Parse(parser_, body.data(), static_cast<int>(body.size()), XML_TRUE);
    if (status != XML_STATUS_OK || failed_) return ErrorReply(AzureError::kInvalidInput);
    return std::nullopt;
  }

 private:
  static void XMLCALL OnStart(void* data, const XML_Char* name, const XML_Char** attrs) {
    static_cast<PropertiesReader*>(data)->Start(ExpandedName(name), attrs);
  }
  static void XMLCALL OnEnd(void* data, const XML_Char*) {
    static_cast<PropertiesReader*>(data)->End();
  }
  static void XMLCALL OnText(void* data, const XML_Char* s, int len) {
    auto* self = static_cast<PropertiesReader*>(data);
    if (self->depth_ == 4 && self->in_property_)
      self->out_->back().text.append(s, static_cast<size_t>(len));
  }
  static void XMLCALL OnDoctype(void* data, const XML_Char*, const XML_Char*, const XML_Char*,
                                int) {
    static_cast<PropertiesReader*>(data)->Fail();
  }

  void Start(const ExpandedName& name, const XML_Char** attrs) {
    ++depth_;
    switch (depth_) {
      case 1:
        if (!name.Is(kAtomNs, "entry")) Fail();
        break;
      case 2:
        in_content_ = name.Is(kAtomNs, "content");
        break;
      case 3:
        in_properties_ = in_content_ && name.Is(kMetadataNs, "properties");
        break;
      case 4:
        // Elements of other namespaces are not properties: skipped.
        in_property_ = in_properties_ && name.ns == kDataNs;
        if (in_property_) StartProperty(name.local, attrs);
        break;
      default:
        if (in_property_) Fail();  // a complex value: no such Table type
        // Expat keeps open elements on the heap; the cap bounds that too.
        if (depth_ > static_cast<int>(kMaxXmlDepth)) Fail();
    }
  }

  void StartProperty(std::string_view local, const XML_Char** attrs) {
    RawProperty& p = out_->emplace_back();
    p.name = std::string(local);
    for (size_t i = 0; attrs[i] != nullptr; i += 2) {
      ExpandedName attr(attrs[i]);
      std::string_view value(attrs[i + 1]);
      if (attr.Is(kMetadataNs, "type")) {
        p.type = std::string(value);
      } else if (attr.Is(kMetadataNs, "null")) {
        if (value == "true" || value == "1")
          p.is_null = true;
        else if (value != "false" && value != "0")
          Fail();
      }
    }
  }

  void End() {
    switch (depth_) {
      case 2:
        in_content_ = false;
        break;
      case 3:
        in_properties_ = false;
        break;
      case 4:
        in_property_ = false;
        break;
      default:
        break;
    }
    --depth_;
  }

  void Fail() {
    failed_ = true;
    XML_StopParser(parser_, XML_FALSE);
  }

  std::vector<RawProperty>* out_;
  XML_Parser parser_ = nullptr;
  int depth_ = 0;
  bool in_content_ = false;
  bool in_properties_ = false;
  bool in_property_ = false;
  bool failed_ = false;
};

bool IsXmlSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view TrimXmlSpace(std::string_view s) {
  while (!s.empty() && IsXmlSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsXmlSpace(s.back())) s.remove_suffix(1);
  return s;
}

// XML Schema integer lexical form: optional sign, digits.
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

template <typename T>
std::optional<T> ParseXmlInteger(std::string_view s) {
  bool plus = s.starts_with('+');
  if (plus) s.remove_prefix(1);
  if (s.empty() || (plus && !IsDigit(s.front()))) return std::nullopt;
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// XML Schema double lexical form (INF, -INF, NaN), plus Infinity/-Infinity.
std::optional<double> ParseXmlDouble(std::string_view s) {
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (s == "INF" || s == "+INF" || s == "Infinity") return std::numeric_limits<double>::infinity();
  if (s == "-INF" || s == "-Infinity") return -std::numeric_limits<double>::infinity();
  bool plus = s.starts_with('+');
  if (plus) s.remove_prefix(1);
  if (s.empty() || (plus && !IsDigit(s.front()) && s.front() != '.')) return std::nullopt;
  // Decimal forms only: from_chars would also take "inf", "nan(...)".
  for (char c : s) {
    if (!(IsDigit(c) || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E'))
      return std::nullopt;
  }
  double d = 0;
  auto [p, ec] = storage::FromCharsDouble(s.data(), s.data() + s.size(), d);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return d;
}

// Types the text of `p` as `type` (payload.md §6.1). Moves p.text.
std::optional<ErrorReply> ConvertAtomValue(RawProperty& p, EdmType type, Value* out) {
  const ErrorReply invalid(AzureError::kInvalidInput);
  std::string_view t = TrimXmlSpace(p.text);
  switch (type) {
    case EdmType::kString:
      *out = Value::String(std::move(p.text));
      break;
    case EdmType::kBoolean:
      if (t == "true" || t == "1")
        *out = Value::Boolean(true);
      else if (t == "false" || t == "0")
        *out = Value::Boolean(false);
      else
        return invalid;
      break;
    case EdmType::kInt32: {
      auto v = ParseXmlInteger<int32_t>(t);
      if (!v) return invalid;
      *out = Value::Int32(*v);
      break;
    }
    case EdmType::kInt64: {
      auto v = ParseXmlInteger<int64_t>(t);
      if (!v) return invalid;
      *out = Value::Int64(*v);
      break;
    }
    case EdmType::kDouble: {
      auto v = ParseXmlDouble(t);
      if (!v) return invalid;
      *out = Value::Double(*v);
      break;
    }
    case EdmType::kDateTime: {
      auto ticks = storage::ParseDateTime(t);
      if (!ticks) return invalid;
      if (auto err = ValidateDateTimeRange(p.name, *ticks)) return err;
      *out = Value::DateTimeTicks(*ticks);
      break;
    }
    case EdmType::kGuid: {
      auto g = storage::ParseGuid(t);
      if (!g) return invalid;
      *out = Value::FromGuid(*g);
      break;
    }
    case EdmType::kBinary: {
      // base64Binary may be wrapped over several lines.
      std::string compact;
      compact.reserve(t.size());
      for (char c : t) {
        if (!IsXmlSpace(c)) compact.push_back(c);
      }
      auto bytes = Base64Decode(compact);
      if (!bytes) return invalid;
      *out = Value::FromBinary(std::move(*bytes));
      break;
    }
  }
  return ValidateValueSize(*out);
}

std::optional<ErrorReply> ReadProperties(std::string_view body, std::vector<RawProperty>* out) {
  PropertiesReader reader(out);
  if (auto err = reader.Read(body)) return err;
  std::unordered_set<std::string_view> seen;
  for (const RawProperty& p : *out) {
    if (!seen.insert(p.name).second) return ErrorReply(AzureError::kDuplicatePropertiesSpecified);
  }
  return std::nullopt;
}

constexpr std::string_view kXmlDeclaration =
    "<?xml version=\"1.0\" encoding=\"utf-8\" standalone=\"yes\"?>\r\n";
constexpr std::string_view kNamespaceDeclarations =
    " xmlns=\"http://www.w3.org/2005/Atom\""
    " xmlns:d=\"http://schemas.microsoft.com/ado/2007/08/dataservices\""
    " xmlns:m=\"http://schemas.microsoft.com/ado/2007/08/dataservices/metadata\"";

// xml:base and the namespaces of a top-level entry or feed.
void AppendDocumentAttributes(std::string* out, const AtomContext& ctx) {
  *out += " xml:base=\"";
  AppendXmlText(out, ctx.base, true);
  *out += "/\"";
  *out += kNamespaceDeclarations;
}

// id, title, updated, author, edit link and category of an entry at `path`
// (relative to the base), then the opening of its properties.
void AppendEntryHead(std::string* out, const AtomContext& ctx, std::string_view path) {
  *out += "<id>";
  AppendXmlText(out, ctx.base);
  out->push_back('/');
  AppendXmlText(out, path);
  *out += "</id><title type=\"text\"></title><updated>";
  *out += ctx.updated;
  *out += "</updated><author><name /></author><link rel=\"edit\" title=\"";
  AppendXmlText(out, ctx.table, true);
  *out += "\" href=\"";
  AppendXmlText(out, path, true);
  *out += "\" /><category term=\"";
  AppendXmlText(out, ctx.account, true);
  out->push_back('.');
  AppendXmlText(out, ctx.table, true);
  *out +=
      "\" scheme=\"http://schemas.microsoft.com/ado/2007/08/dataservices/scheme\" />"
      "<content type=\"application/xml\"><m:properties>";
}

constexpr std::string_view kEntryTail = "</m:properties></content></entry>";

// <d:name m:type="..">text</d:name>; `type` empty for Edm.String. Names are
// identifiers (validated on the way in) and need no escaping.
void AppendPropertyOpen(std::string* out, std::string_view name, std::string_view type) {
  *out += "<d:";
  *out += name;
  if (!type.empty()) {
    *out += " m:type=\"";
    *out += type;
    out->push_back('"');
  }
  out->push_back('>');
}

void AppendPropertyClose(std::string* out, std::string_view name) {
  *out += "</d:";
  *out += name;
  out->push_back('>');
}

void AppendStringProperty(std::string* out, std::string_view name, std::string_view value) {
  AppendPropertyOpen(out, name, {});
  AppendXmlText(out, value);
  AppendPropertyClose(out, name);
}

void AppendAtomValue(std::string* out, std::string_view name, const Value& v) {
  if (v.type() == EdmType::kString) {
    AppendStringProperty(out, name, v.string());
    return;
  }
  AppendPropertyOpen(out, name, storage::EdmTypeName(v.type()));
  switch (v.type()) {
    case EdmType::kString:
      break;
    case EdmType::kBoolean:
      *out += v.boolean() ? "true" : "false";
      break;
    case EdmType::kInt32:
      *out += std::to_string(v.int32());
      break;
    case EdmType::kInt64:
      *out += std::to_string(v.int64());
      break;
    case EdmType::kDouble: {
      double d = v.dbl();
      if (std::isfinite(d))
        *out += storage::FormatDouble(d);
      else
        *out += std::isnan(d) ? "NaN" : (d > 0 ? "INF" : "-INF");
      break;
    }
    case EdmType::kDateTime:
      *out += storage::FormatDateTime(v.ticks());
      break;
    case EdmType::kGuid:
      *out += storage::FormatGuid(v.guid());
      break;
    case EdmType::kBinary:
      *out += Base64Encode(v.binary());
      break;
  }
  AppendPropertyClose(out, name);
}

void AppendNullProperty(std::string* out, std::string_view name) {
  *out += "<d:";
  *out += name;
  *out += " m:null=\"true\" />";
}

}  // namespace

std::optional<ErrorReply> ParseAtomEntityBody(std::string_view body, bool keys_from_body,
                                              Entity* entity) {
  std::vector<RawProperty> props;
  if (auto err = ReadProperties(body, &props)) return err;
  entity->properties.clear();
  EntityBodyRules rules(keys_from_body);
  for (RawProperty& p : props) {
    BodyProperty kind;
    std::optional<EdmType> type;
    // XML carries every value as text: a string as far as the key rules go.
    if (auto err = rules.Classify(p.name, p.type, p.is_null, true, &kind, &type)) return err;
    switch (kind) {
      case BodyProperty::kIgnored:
        break;
      case BodyProperty::kPartitionKey:
        entity->partition_key = std::move(p.text);
        break;
      case BodyProperty::kRowKey:
        entity->row_key = std::move(p.text);
        break;
      case BodyProperty::kValue: {
        Value v;
        if (auto err = ConvertAtomValue(p, type.value_or(EdmType::kString), &v)) return err;
        entity->properties.push_back({std::move(p.name), std::move(v)});
        break;
      }
    }
  }
  return rules.Finish(*entity);
}

std::optional<ErrorReply> ParseAtomTableBody(std::string_view body, std::string* table_name) {
  std::vector<RawProperty> props;
  if (auto err = ReadProperties(body, &props)) return err;
  for (RawProperty& p : props) {
    if (p.name != "TableName") continue;
    if (p.is_null) return ErrorReply(AzureError::kPropertiesNeedValue);
    if (p.type && *p.type != "Edm.String") return ErrorReply(AzureError::kInvalidInput);
    *table_name = std::move(p.text);
    return std::nullopt;
  }
  return ErrorReply(AzureError::kPropertiesNeedValue);
}

AtomContext MakeAtomContext(std::string_view base, std::string_view account,
                            std::string_view table) {
  constexpr int64_t kTicksPerSecond = 10'000'000;
  int64_t now = storage::NowTicks();
  return AtomContext{base, account, table, storage::FormatDateTime(now - now % kTicksPerSecond)};
}

void AppendEntityAtom(std::string* out, const Entity& e, const AtomContext& ctx, bool element,
                      const std::vector<std::string>* select) {
  if (element) *out += kXmlDeclaration;
  *out += "<entry";
  if (element) AppendDocumentAttributes(out, ctx);
  *out += " m:etag=\"";
  AppendXmlText(out, ETagFor(e.timestamp), true);
  *out += "\">";
  AppendEntryHead(out, ctx, EntityPath(ctx.table, e.partition_key, e.row_key));
  if (IsSelected(select, "PartitionKey"))
    AppendStringProperty(out, "PartitionKey", e.partition_key);
  if (IsSelected(select, "RowKey")) AppendStringProperty(out, "RowKey", e.row_key);
  if (IsSelected(select, "Timestamp"))
    AppendAtomValue(out, "Timestamp", Value::DateTimeTicks(e.timestamp));
  if (select == nullptr) {
    for (const auto& p : e.properties) AppendAtomValue(out, p.name, p.value);
  } else {
    for (const auto& name : *select) {
      if (name == "PartitionKey" || name == "RowKey" || name == "Timestamp") continue;
      const Value* v = e.Find(name);
      if (v != nullptr)
        AppendAtomValue(out, name, *v);
      else
        AppendNullProperty(out, name);
    }
  }
  *out += kEntryTail;
}

void AppendTableAtom(std::string* out, std::string_view name, const AtomContext& ctx,
                     bool element) {
  if (element) *out += kXmlDeclaration;
  *out += "<entry";
  if (element) AppendDocumentAttributes(out, ctx);
  out->push_back('>');
  std::string path = "Tables('";
  path += name;
  path += "')";
  AppendEntryHead(out, ctx, path);
  AppendStringProperty(out, "TableName", name);
  *out += kEntryTail;
}

void AppendAtomFeedStart(std::string* out, const AtomContext& ctx, bool empty) {
  *out += kXmlDeclaration;
  *out += "<feed";
  AppendDocumentAttributes(out, ctx);
  *out += "><title type=\"text\">";
  AppendXmlText(out, ctx.table);
  *out += "</title><id>";
  AppendXmlText(out, ctx.base);
  out->push_back('/');
  AppendXmlText(out, ctx.table);
  *out += "</id><updated>";
  *out += ctx.updated;
  *out += "</updated><link rel=\"self\" title=\"";
  AppendXmlText(out, ctx.table, true);
  *out += "\" href=\"";
  AppendXmlText(out, ctx.table, true);
  *out += "\" />";
  if (empty) *out += "<author><name /></author>";
}

void AppendAtomFeedEnd(std::string* out) { *out += "</feed>"; }

}  // namespace cerulean::server
