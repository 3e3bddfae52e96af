// HTTP/1.1 bytes of a response, written by hand: the status line and the
// fields as they are, no chunking (the session always sets Content-Length).
// Thread-safety: none needed (a pure function).
#pragma once

#include <cstddef>
#include <string>

#include "server/protocol/request.h"

namespace cerulean::server {

// Bodies up to this size are copied behind the head (one buffer); larger
// ones are written from the response itself (a gathered write), not copied.
inline constexpr size_t kCopiedBodyBytes = 16 * 1024;

// Writes `res` (already prepared: Content-Length set) as HTTP/1.1 bytes
// into `out`, the body too if it is no longer than kCopiedBodyBytes, so that
// the response goes out in one write. Written by hand because Beast's
// generic serializer costs more per response than a point read behind it.
void SerializeResponse(const HttpResponse& res, std::string* out);

}  // namespace cerulean::server
