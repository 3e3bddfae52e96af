// The writing half of the JSON entity codec (entity_json.h): entities and
// tables as JSON objects at each OData metadata level.
#include <cassert>
#include <charconv>
#include <cmath>
#include <memory>
#include <string>

#include "server/formats/base64.h"
#include "server/formats/entity_id.h"
#include "server/formats/entity_json.h"
#include "server/formats/entity_rules.h"
#include "server/formats/escape.h"
#include "storage/codec.h"
#include "storage/edm_text.h"

namespace cerulean::server {

using storage::EdmType;
using storage::Entity;
using storage::Value;

std::string_view JsonContentType(Metadata level) {
  switch (level) {
    case Metadata::kNone:
      return "application/json;odata=nometadata;streaming=true;charset=utf-8";
    case Metadata::kFull:
      return "application/json;odata=fullmetadata;streaming=true;charset=utf-8";
    case Metadata::kMinimal:
      break;
  }
  return "application/json;odata=minimalmetadata;streaming=true;charset=utf-8";
}

namespace {

void AppendKey(std::string* out, bool* first, std::string_view name) {
  if (!*first) out->push_back(',');
  *first = false;
  AppendJsonString(out, name);
  out->push_back(':');
}

// Entities are written through a raw pointer into a buffer with room for an
// upper bound of their JSON, then appended to the body at once: appending
// member by member to the body costs a bounds check and a possible
// reallocation per member.
class EntityWriter {
 public:
  explicit EntityWriter(char* p) : p_(p) {}
  char* end() const { return p_; }

  void Put(std::string_view piece) { p_ = CopyBytes(p_, piece.data(), piece.size()); }
  void Char(char c) { *p_++ = c; }
  void String(std::string_view s) { p_ = WriteJsonString(p_, s); }
  // ,"name": for a name that needs escaping (a $select name, a literal).
  void Key(std::string_view name) {
    Comma();
    String(name);
    Char(':');
  }
  // ,"name": for a name JSON writes as it is: a property name (validated:
  // letters, digits, '_' and non-ASCII UTF-8, ValidatePropertyName) or a
  // literal.
  void PlainKey(std::string_view name) {
    Comma();
    Char('"');
    Put(name);
    Put("\":");
  }
  // ,"name@odata.type":"type"
  void TypeAnnotation(std::string_view name, std::string_view type) {
    Comma();
    Char('"');
    Put(name);
    Put("@odata.type\":\"");
    Put(type);
    Char('"');
  }
  void Value(std::string_view name, const storage::ValueView& v, Metadata level);
  void Head(std::string_view partition_key, std::string_view row_key, int64_t timestamp,
            const JsonContext& ctx, bool element, const std::vector<std::string>* select);

 private:
  void Comma() {
    if (!first_) *p_++ = ',';
    first_ = false;
  }

  char* p_;
  bool first_ = true;
};

// The most bytes EntityWriter::Value writes for a property: its name twice
// (member and annotation), the value escaped, and at most ~40 bytes of
// fixed-size value, ~30 of annotation and punctuation.
constexpr size_t kPropertyOverhead = 100;
size_t PropertyBound(size_t name_bytes, size_t value_bytes) {
  return 2 * name_bytes + JsonStringBound(value_bytes) + kPropertyOverhead;
}

void EntityWriter::Value(std::string_view name, const storage::ValueView& v, Metadata level) {
  bool annotate = level != Metadata::kNone;
  switch (v.type) {
    case EdmType::kString:
      PlainKey(name);
      String(v.bytes);
      break;
    case EdmType::kBinary:
      if (annotate) TypeAnnotation(name, "Edm.Binary");
      PlainKey(name);
      Char('"');
      p_ = WriteBase64(p_, v.bytes);
      Char('"');
      break;
    case EdmType::kBoolean:
      PlainKey(name);
      Put(v.boolean ? "true" : "false");
      break;
    case EdmType::kInt32:
      PlainKey(name);
      p_ = std::to_chars(p_, p_ + 24, v.integer).ptr;
      break;
    case EdmType::kInt64:
      if (annotate) TypeAnnotation(name, "Edm.Int64");
      PlainKey(name);
      Char('"');
      p_ = std::to_chars(p_, p_ + 24, v.integer).ptr;
      Char('"');
      break;
    case EdmType::kDouble:
      if (std::isfinite(v.dbl)) {
        PlainKey(name);
        p_ += storage::FormatDoubleTo(p_, v.dbl);
      } else {
        if (annotate) TypeAnnotation(name, "Edm.Double");
        PlainKey(name);
        Put(std::isnan(v.dbl) ? "\"NaN\"" : (v.dbl > 0 ? "\"Infinity\"" : "\"-Infinity\""));
      }
      break;
    case EdmType::kDateTime:
      if (annotate) TypeAnnotation(name, "Edm.DateTime");
      PlainKey(name);
      Char('"');
      p_ += storage::FormatDateTimeTo(p_, v.integer, ":");
      Char('"');
      break;
    case EdmType::kGuid:
      if (annotate) TypeAnnotation(name, "Edm.Guid");
      PlainKey(name);
      Char('"');
      storage::FormatGuidTo(p_, v.guid);
      p_ += storage::kGuidText;
      Char('"');
      break;
  }
}

// The most bytes EntityWriter::Head writes.
size_t HeadBound(std::string_view partition_key, std::string_view row_key, const JsonContext& ctx,
                 bool element) {
  // Member names, the ETag and the Timestamp: fixed size.
  size_t n = 256 + JsonStringBound(partition_key.size()) + JsonStringBound(row_key.size());
  if (element) n += JsonStringBound(ctx.base.size() + ctx.table.size() + 32);
  if (ctx.level == Metadata::kFull) {
    // odata.type, odata.id and odata.editLink; the path's quotes doubled.
    size_t path = ctx.table.size() + 2 * (partition_key.size() + row_key.size()) + 32;
    n += JsonStringBound(ctx.account.size() + 1 + ctx.table.size()) +
         JsonStringBound(ctx.base.size() + 1 + path) + JsonStringBound(path) + 128;
  }
  return n;
}

// The members before the custom properties: metadata, keys, Timestamp.
void EntityWriter::Head(std::string_view partition_key, std::string_view row_key, int64_t timestamp,
                        const JsonContext& ctx, bool element,
                        const std::vector<std::string>* select) {
  if (element && ctx.level != Metadata::kNone) {
    PlainKey("odata.metadata");
    thread_local std::string url;  // this thread's buffer: every entity read writes one
    url.assign(ctx.base).append("/$metadata#").append(ctx.table).append("/@Element");
    String(url);
  }
  std::string path;
  if (ctx.level == Metadata::kFull) {
    path = EntityPath(ctx.table, partition_key, row_key);
    PlainKey("odata.type");
    String(std::string(ctx.account) + "." + std::string(ctx.table));
    PlainKey("odata.id");
    String(std::string(ctx.base) + "/" + path);
  }
  // The Timestamp formatted once, for the ETag and the Timestamp member:
  // "yyyy-MM-ddTHH:mm:ss[.fffffff]Z", its colons at 13 and 16.
  char ts[storage::kMaxDateTimeText];
  const std::string_view ts_text(ts, storage::FormatDateTimeTo(ts, timestamp, ":"));
  if (ctx.level != Metadata::kNone) {
    PlainKey("odata.etag");
    Put("\"W/\\\"datetime'");  // quotes escaped for JSON
    Put(ts_text.substr(0, 13));
    Put("%3A");
    Put(ts_text.substr(14, 2));
    Put("%3A");
    Put(ts_text.substr(17));
    Put("'\\\"\"");
  }
  if (ctx.level == Metadata::kFull) {
    PlainKey("odata.editLink");
    String(path);
  }
  if (IsSelected(select, "PartitionKey")) {
    PlainKey("PartitionKey");
    String(partition_key);
  }
  if (IsSelected(select, "RowKey")) {
    PlainKey("RowKey");
    String(row_key);
  }
  if (IsSelected(select, "Timestamp")) {
    if (ctx.level == Metadata::kFull) TypeAnnotation("Timestamp", "Edm.DateTime");
    PlainKey("Timestamp");
    Char('"');
    Put(ts_text);
    Char('"');
  }
}

// Calls write(buffer) with room for `bound` bytes and appends what it wrote
// (up to the returned end) to *out. Entities of up to 64 KiB of JSON are
// written in a buffer each thread keeps.
template <typename Write>
void AppendBounded(std::string* out, size_t bound, Write write) {
  constexpr size_t kKeptBytes = 64 * 1024;
  thread_local std::unique_ptr<char[]> kept;
  std::unique_ptr<char[]> large;
  char* buf;
  if (bound <= kKeptBytes) {
    if (!kept) kept = std::make_unique_for_overwrite<char[]>(kKeptBytes);
    buf = kept.get();
  } else {
    large = std::make_unique_for_overwrite<char[]>(bound);
    buf = large.get();
  }
  char* end = write(buf);
  assert(end <= buf + bound);  // else the bound is wrong: tested in entity_json_test.cc
  out->append(buf, static_cast<size_t>(end - buf));
}

}  // namespace

size_t EntityJsonBound(const Entity& e, const JsonContext& ctx, bool element,
                       const std::vector<std::string>* select) {
  size_t bound = 2 + HeadBound(e.partition_key, e.row_key, ctx, element);
  auto value_bytes = [](const Value& v) {
    return v.type() == EdmType::kString || v.type() == EdmType::kBinary ? v.view().bytes.size() : 0;
  };
  if (select == nullptr) {
    for (const auto& p : e.properties) bound += PropertyBound(p.name.size(), value_bytes(p.value));
  } else {
    for (const auto& name : *select) {
      const Value* v = e.Find(name);
      bound += v != nullptr ? PropertyBound(name.size(), value_bytes(*v))
                            : JsonStringBound(name.size()) + 8;
    }
  }
  return bound;
}

size_t EntityRowJsonBound(const storage::EntityRow& row, size_t property_count,
                          const JsonContext& ctx, bool element) {
  // Names and values are at most the encoding's bytes.
  return 2 + HeadBound(row.partition_key, row.row_key, ctx, element) +
         PropertyBound(0, row.properties.size()) + property_count * kPropertyOverhead;
}

void AppendEntityJson(std::string* out, const Entity& e, const JsonContext& ctx, bool element,
                      const std::vector<std::string>* select) {
  size_t bound = EntityJsonBound(e, ctx, element, select);
  AppendBounded(out, bound, [&](char* buf) {
    EntityWriter w(buf);
    w.Char('{');
    w.Head(e.partition_key, e.row_key, e.timestamp, ctx, element, select);
    if (select == nullptr) {
      for (const auto& p : e.properties) w.Value(p.name, p.value.view(), ctx.level);
    } else {
      for (const auto& name : *select) {
        if (name == "PartitionKey" || name == "RowKey" || name == "Timestamp") continue;
        const Value* v = e.Find(name);
        if (v != nullptr) {
          w.Value(name, v->view(), ctx.level);
        } else {
          w.Key(name);
          w.Put("null");
        }
      }
    }
    w.Char('}');
    return w.end();
  });
}

storage::Status AppendEntityRowJson(std::string* out, const storage::EntityRow& row,
                                    const JsonContext& ctx, bool element) {
  storage::PropertyReader reader;
  storage::Status s = reader.Open(row.properties);
  if (!s.ok()) return s;
  size_t bound = EntityRowJsonBound(row, reader.count(), ctx, element);
  size_t before = out->size();
  AppendBounded(out, bound, [&](char* buf) {
    EntityWriter w(buf);
    w.Char('{');
    w.Head(row.partition_key, row.row_key, row.timestamp, ctx, element, nullptr);
    std::string_view name;
    storage::ValueView value;
    while (reader.Next(&name, &value)) w.Value(name, value, ctx.level);
    w.Char('}');
    return w.end();
  });
  if (!reader.status().ok()) out->resize(before);
  return reader.status();
}

void AppendTableJson(std::string* out, std::string_view name, const JsonContext& ctx,
                     bool element) {
  bool first = true;
  out->push_back('{');
  if (element && ctx.level != Metadata::kNone) {
    AppendKey(out, &first, "odata.metadata");
    AppendJsonString(out, std::string(ctx.base) + "/$metadata#Tables/@Element");
  }
  if (ctx.level == Metadata::kFull) {
    std::string path = "Tables('" + std::string(name) + "')";
    AppendKey(out, &first, "odata.type");
    AppendJsonString(out, std::string(ctx.account) + ".Tables");
    AppendKey(out, &first, "odata.id");
    AppendJsonString(out, std::string(ctx.base) + "/" + path);
    AppendKey(out, &first, "odata.editLink");
    AppendJsonString(out, path);
  }
  AppendKey(out, &first, "TableName");
  AppendJsonString(out, name);
  out->push_back('}');
}

}  // namespace cerulean::server
