// The multipart/mixed codec of entity group transactions (`$batch`,
// spec/batch.md §2 and §4): parses a batch request body into its embedded
// HTTP requests and serializes the 202 multipart response body. Pure
// functions over strings: no sockets, no storage, no JSON.
// Thread-safety: all functions are safe to call concurrently
// (SerializeBatchResponse draws its GUIDs from a thread-local generator).
#pragma once

#include <list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/status.h"

namespace cerulean::server {

// One header of a batch part: name as written, value trimmed.
using BatchHeader = std::pair<std::string_view, std::string_view>;

// One HTTP request embedded in a batch. Its views point into the body given
// to ParseBatch or into the ParsedBatch that holds this part: both must
// outlive it.
struct BatchPart {
  std::string_view method;  // "POST", "PUT", "MERGE", "PATCH", "DELETE", "GET" as written
  std::string_view url;     // request target as written (absolute or relative; `$` maybe %24)
  // Inner request headers in order, names as written, values trimmed (folded
  // lines joined by one space). Kept verbatim, including ones the caller must
  // ignore (Host, Content-Length).
  std::span<const BatchHeader> headers;
  // Bytes between the inner blank line and the next delimiter, trimmed of
  // surrounding whitespace and line breaks.
  std::string_view body;
  // From the MIME part headers or, failing that, the inner headers; never
  // empty and free of control characters when set.
  std::optional<std::string_view> content_id;

  // The value of the first header named `name` (ASCII case-insensitive), or
  // nullopt.
  std::optional<std::string_view> Header(std::string_view name) const;
};

// A parsed batch. Move-only: its parts' header spans point into its own
// storage, which a move keeps in place and a copy would not.
struct ParsedBatch {
  ParsedBatch() = default;
  ParsedBatch(ParsedBatch&&) = default;
  ParsedBatch& operator=(ParsedBatch&&) = default;
  ParsedBatch(const ParsedBatch&) = delete;
  ParsedBatch& operator=(const ParsedBatch&) = delete;

  // false iff the batch is a single request placed directly in the batch
  // (the read-only single retrieve of batch.md §2.4); `parts` then holds
  // exactly one GET.
  bool changeset = true;
  // Change set operations in order. May be empty (empty change set) or hold
  // more than 100 parts: the caller checks limits, methods and URLs.
  std::vector<BatchPart> parts;
  // Storage behind the parts' views: all inner headers, and the values of
  // folded header lines (joined, so not in the body).
  std::vector<BatchHeader> header_storage;
  std::list<std::string> joined_values;
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
// The result's views point into `body`, which must outlive it.
storage::Result<ParsedBatch> ParseBatch(std::string_view content_type, std::string_view body);

// One sub-response of a batch response.
struct BatchSubResponse {
  int status = 204;                            // three digits: 201, 204, 409, ...
  std::optional<std::string_view> content_id;  // echoed first after the status line
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

// Writes a batch response body one sub-response at a time, straight into
// the body (SerializeBatchResponse is built on it). Per sub-response:
// BeginPart, AddHeader for each header, then Body() to append its body (or
// nothing), and the next BeginPart or Finish.
class BatchResponseWriter {
 public:
  // `changeset` as for SerializeBatchResponse; `reserve`: expected body size.
  BatchResponseWriter(bool changeset, size_t reserve);

  // Starts a sub-response: its part headers, status line and Content-ID.
  // A status outside [100, 999] is written as 500.
  void BeginPart(int status, std::optional<std::string_view> content_id);
  // Writes one header of the current sub-response. CR and LF in `name` and
  // `value` are written as spaces.
  void AddHeader(std::string_view name, std::string_view value);
  // Writes `lines` verbatim: complete "Name: value\r\n" header lines that
  // the caller wrote itself (fixed text), so that nothing needs checking.
  void AddFixedHeaders(std::string_view lines);
  // Ends the current sub-response's headers; its body is what the caller
  // appends to the returned string before the next BeginPart or Finish.
  std::string* Body();
  // Closes the response and returns its body; sets *content_type as
  // SerializeBatchResponse does. REQUIRES: content_type != nullptr.
  std::string Finish(std::string* content_type);

 private:
  void EndPart();

  bool changeset_;
  std::string batch_boundary_;
  std::string part_delimiter_;  // "--<boundary of the parts>\r\n"
  std::string out_;
  bool in_headers_ = false;  // a part's headers are open (Body() not yet called)
  bool in_part_ = false;
};

// The standard reason phrase of `status` ("Created", "No Content",
// "Conflict", "Request Entity Too Large", ...), or "Unknown" for an
// unregistered code. The view is static.
std::string_view ReasonPhrase(int status);

}  // namespace cerulean::server
