#include "server/protocol/query_options.h"

#include <charconv>
#include <unordered_set>

#include "server/formats/ascii.h"
#include "server/formats/base64.h"

namespace cerulean::server {

std::string EncodeContinuation(std::string_view key) {
  std::string b64 = Base64Encode(key);
  for (char& c : b64) {
    if (c == '=') c = '-';
  }
  return "1!" + std::to_string(b64.size()) + "!" + b64;
}

std::optional<std::string> DecodeContinuation(std::string_view token) {
  if (!token.starts_with("1!")) return std::nullopt;
  token.remove_prefix(2);
  size_t bang = token.find('!');
  if (bang == std::string_view::npos) return std::nullopt;
  size_t len = 0;
  auto [p, ec] = std::from_chars(token.data(), token.data() + bang, len);
  if (ec != std::errc() || p != token.data() + bang) return std::nullopt;
  std::string b64(token.substr(bang + 1));
  if (b64.size() != len) return std::nullopt;
  for (char& c : b64) {
    if (c == '-') c = '=';
  }
  return Base64Decode(b64);
}

std::optional<ErrorReply> ParseQueryOptions(const ServerContext& ctx, const Request& req,
                                            QueryOptions* out) {
  const ErrorReply invalid(AzureError::kInvalidInput);
  // One pass: counting each repeat with QueryParams::Count would be
  // quadratic in the number of parameters.
  bool seen_filter = false, seen_select = false, seen_top = false;
  for (const auto& [name, value] : req.query.all()) {
    if (!name.starts_with("$")) continue;
    bool* seen = name == "$filter"   ? &seen_filter
                 : name == "$select" ? &seen_select
                 : name == "$top"    ? &seen_top
                                     : nullptr;
    if (seen != nullptr) {
      if (*seen) return invalid;
      *seen = true;
      continue;
    }
    if (name == "$format") continue;
    if (!ctx.options.loose) return invalid;  // $orderby, $skip, $expand, ...
  }
  if (auto f = req.query.Get("$filter"); f && !Trim(*f).empty()) {
    // Query Tables filters tables (TableName), the others entities.
    auto parsed =
        odata::ParseFilter(*f, req.op == Operation::kQueryTables ? odata::FilterScope::kTables
                                                                 : odata::FilterScope::kEntities);
    if (!parsed.ok()) return ErrorReply(AzureError::kInvalidInput, parsed.status().message());
    out->filter = std::make_shared<const odata::Filter>(std::move(parsed).value());
  }
  if (auto t = req.query.Get("$top")) {
    int64_t top = 0;
    auto [p, ec] = std::from_chars(t->data(), t->data() + t->size(), top);
    if (ec != std::errc() || p != t->data() + t->size() || top < 0 || top > 1000) return invalid;
    out->top = static_cast<size_t>(top);
    out->has_top = true;
  }
  // An empty $select selects everything, as an absent one: Azure Storage
  // Explorer sends "$select=" with every entity query.
  if (auto s = req.query.Get("$select"); s && !Trim(*s).empty()) {
    std::vector<std::string> names;
    std::unordered_set<std::string_view> seen;
    bool star = false;
    size_t start = 0;
    while (start <= s->size()) {
      size_t comma = s->find(',', start);
      if (comma == std::string_view::npos) comma = s->size();
      std::string_view name = Trim(s->substr(start, comma - start));
      start = comma + 1;
      if (name.empty()) return invalid;
      if (name == "*") {
        star = true;
        continue;
      }
      // Hashed, and the limit checked as names come: linear in the list.
      if (!seen.insert(name).second) continue;
      if (seen.size() > kMaxSelectNames) return invalid;
      names.emplace_back(name);
    }
    if (!star) out->select = std::move(names);
  }
  auto token = [&](std::string_view name,
                   std::optional<std::string>* dest) -> std::optional<ErrorReply> {
    auto v = req.query.Get(name);
    if (!v) return std::nullopt;
    if (v->empty()) return invalid;
    auto key = DecodeContinuation(*v);
    if (!key) return invalid;
    *dest = std::move(*key);
    return std::nullopt;
  };
  if (auto err = token("NextPartitionKey", &out->next_partition_key)) return err;
  if (auto err = token("NextRowKey", &out->next_row_key)) return err;
  if (auto err = token("NextTableName", &out->next_table_name)) return err;
  return std::nullopt;
}

}  // namespace cerulean::server
