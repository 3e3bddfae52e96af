// The query options of Query Tables and Query Entities ($filter, $select,
// $top, continuation tokens), parsed and validated once.
// Thread-safety: pure functions.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "odata/query.h"
#include "server/protocol/request.h"

namespace cerulean::server {

// The most distinct property names a $select may list (query.md §4).
inline constexpr size_t kMaxSelectNames = 255;

struct QueryOptions {
  std::shared_ptr<const odata::Filter> filter;     // null: no filter
  std::optional<std::vector<std::string>> select;  // nullopt: all properties
  // 0 to 1000. $top=0 asks for an empty page: Query Entities answers one
  // with no entity and no continuation (Query Tables refuses it).
  size_t top = 1000;
  bool has_top = false;
  std::optional<std::string> next_partition_key;
  std::optional<std::string> next_row_key;
  std::optional<std::string> next_table_name;
};

// Parses the options of `req` (query.md §1, §4, §5, §6).
std::optional<ErrorReply> ParseQueryOptions(const ServerContext& ctx, const Request& req,
                                            QueryOptions* out);

// Continuation tokens: "1!<len>!<base64 of the key, '=' as '-'>".
std::string EncodeContinuation(std::string_view key);
std::optional<std::string> DecodeContinuation(std::string_view token);

}  // namespace cerulean::server
