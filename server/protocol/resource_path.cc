#include "server/protocol/resource_path.h"

#include "odata/query.h"
#include "server/operations/operations.h"

namespace cerulean::server {

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
