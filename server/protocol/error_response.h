// The one renderer of error answers: an ErrorReply in the negotiated format
// (status, x-ms-error-code, Content-Type, odata.error JSON or XML body), for
// a request and for a $batch sub-response alike.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/formats/azure_error.h"
#include "server/formats/entity_json.h"

namespace cerulean::server {

// Where an error is answered.
enum class ErrorScope {
  kRequest,    // the HTTP response itself: x-ms-error-code; the router adds
               // the common headers
  kOperation,  // a $batch sub-response for one operation: its own common
               // headers, no x-ms-error-code
  kChangeSet,  // a $batch sub-response refusing a change set that holds no
               // operation (DataServiceVersion 1.0)
};

// How an error is answered: where, and in the format negotiated for it.
struct ErrorForm {
  ErrorScope scope = ErrorScope::kRequest;
  bool xml = false;                        // an XML body, else JSON
  Metadata metadata = Metadata::kMinimal;  // the JSON body's Content-Type
  bool head = false;                       // a HEAD request: no body
  // The request's Prefer header; "return-content" or "return-no-content" is
  // echoed as Preference-Applied.
  std::string_view prefer;
  // A change set operation's index, prefixed to the message ("1:...").
  std::optional<size_t> index;
  std::string_view request_id;
};

// An error answer before framing: status, headers in wire order, body.
// Header names are literals.
struct ErrorAnswer {
  int status = 500;
  std::vector<std::pair<std::string_view, std::string>> headers;
  std::string body;
};

// The one renderer of error answers, for requests and $batch sub-responses.
ErrorAnswer RenderError(const ErrorReply& error, const ErrorForm& form);

}  // namespace cerulean::server
