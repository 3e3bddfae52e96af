#include "server/protocol/resource_path.h"

#include "odata/query.h"
#include "storage/value.h"

namespace cerulean::server {

namespace {

// Whether URL key `v` holds a character Azure refuses in a key of the URL
// ('#', '?', control characters); sets *slash when it holds '/' or '\\'.
bool HasForbiddenUrlKeyChar(std::string_view v, bool* slash) {
  bool bad = false;
  for (size_t i = 0; i < v.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(v[i]);
    if (c == '/' || c == '\\') *slash = true;
    if (c == '#' || c == '?' || c < 0x20 || c == 0x7F) bad = true;
    if (c == 0xC2 && i + 1 < v.size()) {
      unsigned char n = static_cast<unsigned char>(v[i + 1]);
      if (n >= 0x80 && n <= 0x9F) bad = true;
    }
  }
  return bad;
}

// Validates the keys of an entity's URL (operations.md §4.1).
std::optional<ErrorReply> ValidateUrlKeys(const ResourcePath& path) {
  for (const std::string* key : {&path.partition_key, &path.row_key}) {
    bool slash = false;
    bool bad = HasForbiddenUrlKeyChar(*key, &slash);
    if (slash) return ErrorReply(AzureError::kInvalidInput, "Bad Request - Error in query syntax.");
    if (bad || storage::Utf16Length(*key) > 1024) return ErrorReply(AzureError::kOutOfRangeInput);
  }
  return std::nullopt;
}

}  // namespace

std::optional<ErrorReply> ParseResourcePath(std::string_view s, ResourcePath* out) {
  const ErrorReply invalid_uri(AzureError::kInvalidUri);
  if (s.empty() || s == "/") {
    out->kind = ResourceKind::kService;
    return std::nullopt;
  }
  if (s.front() == '/') s.remove_prefix(1);
  // One trailing slash is accepted, as Azure does (`POST /account/Tables/`).
  if (s.size() > 1 && s.back() == '/') s.remove_suffix(1);
  size_t paren = s.find('(');
  std::string_view name = s.substr(0, paren);
  if (name.empty() || name.find('/') != std::string_view::npos) return invalid_uri;
  if (paren == std::string_view::npos) {
    if (name == "$batch") {
      out->kind = ResourceKind::kBatch;
    } else if (name == "Tables") {
      out->kind = ResourceKind::kTables;
    } else {
      out->kind = ResourceKind::kEntities;
      out->table = std::string(name);
    }
    return std::nullopt;
  }
  if (s.back() != ')')
    return ErrorReply(AzureError::kInvalidInput, "Bad Request - Error in query syntax.");
  std::string_view inner = s.substr(paren + 1, s.size() - paren - 2);
  if (name == "Tables") {
    if (inner.empty()) {
      out->kind = ResourceKind::kTables;
      return std::nullopt;
    }
    if (inner.size() < 2 || inner.front() != '\'' || inner.back() != '\'') return invalid_uri;
    out->kind = ResourceKind::kTable;
    out->table = std::string(inner.substr(1, inner.size() - 2));
    return std::nullopt;
  }
  out->table = std::string(name);
  if (inner.empty()) {
    out->kind = ResourceKind::kEntities;
    return std::nullopt;
  }
  auto keys = odata::ParseKeyPath(inner);
  if (!keys.ok())
    return ErrorReply(AzureError::kInvalidInput, "Bad Request - Error in query syntax.");
  out->kind = ResourceKind::kEntity;
  out->partition_key = std::move(keys->partition_key);
  out->row_key = std::move(keys->row_key);
  return ValidateUrlKeys(*out);
}

}  // namespace cerulean::server
