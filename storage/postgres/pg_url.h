// PgConnInfo: a PostgreSQL connection string, parsed, with its defaults and
// the order in which its hosts are tried.
// Thread-safety: immutable once parsed.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/status.h"

namespace cerulean::storage {

class PgConnection;

// A connection string parsed by libpq, with Cerulean's defaults for the
// settings it leaves out (connect_timeout, TCP keep-alives, tcp_user_timeout,
// application_name: storage/README.md, "Timeouts"); a setting in the string
// wins. A multi-host string (`postgresql://u@h1:p1,h2:p2/db`) is tried host
// by host, as libpq does, but starting at a chosen host: the one that served
// last, so that a failed host at the head of the list does not cost every new
// connection its connect_timeout.
class PgConnInfo {
 public:
  // kInvalidArgument if libpq cannot parse `url` (a libpq connection string
  // or a postgresql:// URL); kIOError if libpq cannot be loaded.
  static Status Parse(const std::string& url, PgConnInfo* out);

  // Hosts in the string (at least 1: one host or the default).
  size_t hosts() const { return hosts_.empty() ? 1 : hosts_.size(); }
  // The position of host:port (as PQhost/PQport report them) in the list, or
  // hosts() if it is not there.
  size_t IndexOf(std::string_view host, std::string_view port) const;

 private:
  friend class PgConnection;
  struct Host {
    std::string host, hostaddr, port;
  };
  // Keywords and values for PQconnectdbParams, hosts rotated to start at
  // `first`; the views live as long as this object and *storage.
  void Arrays(size_t first, std::vector<std::string>* storage, std::vector<const char*>* keys,
              std::vector<const char*>* values) const;
  std::vector<std::pair<std::string, std::string>> settings_;  // but host, hostaddr, port
  std::vector<Host> hosts_;                                    // empty: libpq's default
};

}  // namespace cerulean::storage
