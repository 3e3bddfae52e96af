// Content negotiation: the response format a request asks for with $format
// or Accept, at its service version (payload.md §1.1). Used for requests and
// for the inner requests of a $batch.
// Thread-safety: a pure function.
#pragma once

#include <optional>
#include <string_view>

#include "server/protocol/request.h"

namespace cerulean::server {

// Resolves the response format from $format / Accept at service version
// `version`: sets *atom iff the answer is AtomPub, else *out to the JSON
// metadata level.
std::optional<ErrorReply> NegotiateFormat(std::string_view format_param, std::string_view accept,
                                          std::string_view version, Metadata* out, bool* atom);

}  // namespace cerulean::server
