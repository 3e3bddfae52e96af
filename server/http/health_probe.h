// `cerulean health`: asks a running server over plain HTTP whether it is
// healthy (GET /_health), so that a container image holding nothing but the
// server can run its health check without a shell or curl.
// Thread-safety: each call uses its own io_context.
#pragma once

#include <chrono>
#include <string>

namespace cerulean::server {

// GETs http://host:port/_health, taking at most `timeout` in all. Returns an
// empty string iff the answer is 200, else what went wrong.
std::string ProbeHealth(const std::string& host, unsigned short port,
                        std::chrono::milliseconds timeout);

}  // namespace cerulean::server
