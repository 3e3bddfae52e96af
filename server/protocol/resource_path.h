// The resource part of a request URL, after the account segment, parsed
// into a typed ResourcePath ("/Tables('t')", "/t(PartitionKey='a',RowKey='b')").
// Used for requests and for the inner requests of a $batch.
// Thread-safety: a pure function.
#pragma once

#include <optional>
#include <string_view>

#include "server/protocol/request.h"

namespace cerulean::server {

// Parses the resource part of a decoded path (after the account segment),
// e.g. "/orders(PartitionKey='a',RowKey='b')".
std::optional<ErrorReply> ParseResourcePath(std::string_view decoded, ResourcePath* out);

}  // namespace cerulean::server
