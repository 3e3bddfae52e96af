// How the protocol names an entity: its key path, the address in
// odata.id, editLink and Location ("t(PartitionKey='a',RowKey='b')"), and
// the ETag of one version of it, derived from its Timestamp.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cerulean::server {

// W/"datetime'2021-10-15T16%3A13%3A24.0914302Z'"
std::string ETagFor(int64_t ticks);
// Appends ETagFor(ticks) to *out.
void AppendETag(std::string* out, int64_t ticks);
// The ticks of a canonical ETag produced by ETagFor, or nullopt. The weak prefix may be
// written `w/`, as HTTP stacks such as .NET's accept it.
std::optional<int64_t> ParseETag(std::string_view etag);

// Key path "t(PartitionKey='a',RowKey='b')" as Azure writes it: quotes in
// keys doubled, and every byte but letters, digits and -_.!~*'() written
// %XX (a space %20, '"' %22, UTF-8 bytes each).
std::string EntityPath(std::string_view table, std::string_view pk, std::string_view rk);
// Appends EntityPath(table, pk, rk) to *out.
void AppendEntityPath(std::string* out, std::string_view table, std::string_view pk,
                      std::string_view rk);

}  // namespace cerulean::server
