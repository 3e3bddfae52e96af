// Random GUIDs: request ids (x-ms-request-id) and multipart boundaries.
// Thread-safety: safe to call concurrently (a generator per thread).
#pragma once

#include <string>

namespace cerulean::server {

// A random (version 4, RFC 4122 variant) GUID in lower-case hex,
// "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx".
std::string NewGuid();

// The id of a new request: a NewGuid.
inline std::string NewRequestId() { return NewGuid(); }

}  // namespace cerulean::server
