// The multipart/mixed codec of entity group transactions (`$batch`,
// spec/batch.md §2 and §4): parses a batch request body into its embedded
// HTTP requests and serializes the 202 multipart response body. Pure
// functions over strings: no sockets, no storage, no JSON.
// Thread-safety: all functions are safe to call concurrently
// (SerializeBatchResponse draws its GUIDs from a thread-local generator).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/status.h"

namespace cerulean::server {

// One HTTP request embedded in a batch. Owns its bytes.
struct BatchPart {
  std::string method;  // "POST", "PUT", "MERGE", "PATCH", "DELETE", "GET" as written
  std::string url;     // request target as written (absolute or relative; `$` maybe %24)
  // Inner request headers in order, names as written, values trimmed. Kept
  // verbatim, including ones the caller must ignore (Host, Content-Length).
  std::vector<std::pair<std::string, std::string>> headers;
  // Bytes between the inner blank line and the next delimiter, trimmed of
  // surrounding whitespace and line breaks.
  std::string body;
  // From the MIME part headers or, failing that, the inner headers; never
  // empty and free of control characters when set.
  std::optional<std::string> content_id;

  // The value of the first header named `name` (ASCII case-insensitive), or
  // nullopt. The view lives as long as this part's `headers` are unchanged.
  std::optional<std::string_view> Header(std::string_view name) const;
};

struct ParsedBatch {
  // false iff the batch is a single request placed directly in the batch
  // (the read-only single retrieve of batch.md §2.4); `parts` then holds
  // exactly one GET.
  bool changeset = true;
  // Change set operations in order. May be empty (empty change set) or hold
  // more than 100 parts: the caller checks limits, methods and URLs.
  std::vector<BatchPart> parts;
};

// Parses a batch request body given the outer Content-Type header value
// (`multipart/mixed; boundary=...`, boundary maybe quoted). Tolerates the
// client variations of batch.md §2.2 (any header-name case, bare LF line
// endings, blank-line preambles, an extra line break before the inner body,
// a final `--boundary` line instead of the close delimiter, Content-ID in
// either header block). Returns InvalidArgument, with the byte offset in
// `body` where known, for: a media type other than multipart/mixed, a missing
// or malformed boundary, a body that does not start with the boundary (blank
// lines excepted), a part without a following delimiter, a change set part
// that is not application/http, an unsupported Content-Transfer-Encoding, a
// malformed header or inner request line, more than one change set, a change
// set mixed with direct requests, a direct request that is not a GET or more
// than one of them, and a batch with no parts at all.
// Work and memory are linear in body.size() (times the boundary length).
storage::Result<ParsedBatch> ParseBatch(std::string_view content_type, std::string_view body);

// One sub-response of a batch response.
struct BatchSubResponse {
  int status = 204;                       // three digits: 201, 204, 409, ...
  std::optional<std::string> content_id;  // echoed first after the status line
  // In order, written as given. Names are string literals (static storage):
  // a sub-response per entity, and most names are too long for std::string's
  // inline buffer.
  std::vector<std::pair<std::string_view, std::string>> headers;
  std::string body;  // empty for none
};

// Serializes the 202 response body (batch.md §4, CRLF line endings) and sets
// *content_type to "multipart/mixed; boundary=batchresponse_<guid>", the
// boundary used in the body. If `changeset`, the sub-responses are wrapped in
// one changesetresponse_<guid> part (writes); otherwise each sub-response is
// written directly as a batch part (read-only batch: exactly one).
// CR and LF in header names, values and Content-IDs are written as spaces so
// that no caller-supplied text can forge a line.
// REQUIRES: content_type != nullptr; each status in [100, 999] (others are
// written as 500).
std::string SerializeBatchResponse(const std::vector<BatchSubResponse>& subs, bool changeset,
                                   std::string* content_type);

// The standard reason phrase of `status` ("Created", "No Content",
// "Conflict", "Request Entity Too Large", ...), or "Unknown" for an
// unregistered code. The view is static.
std::string_view ReasonPhrase(int status);

}  // namespace cerulean::server
