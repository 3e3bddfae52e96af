#include "storage/postgres/pg_url.h"

#include <algorithm>
#include <utility>

#include "storage/postgres/libpq_api.h"

namespace cerulean::storage {

namespace {

// Settings a connection string may leave out, and Cerulean's values for them
// (storage/README.md, "Timeouts"): each host gets connect_timeout seconds
// (libpq's least) to accept and answer the start-up; keep-alives find an idle
// pooled connection whose peer vanished within ~8 s; tcp_user_timeout drops a
// connection whose sent data stays unacknowledged as long as a round trip may
// take.
constexpr std::pair<const char*, const char*> kDefaultSettings[] = {
    {"connect_timeout", "2"},         {"keepalives", "1"},       {"keepalives_idle", "5"},
    {"keepalives_interval", "1"},     {"keepalives_count", "3"}, {"tcp_user_timeout", "5000"},
    {"application_name", "cerulean"},
};

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  size_t from = 0;
  for (size_t comma; (comma = s.find(',', from)) != std::string::npos; from = comma + 1) {
    out.push_back(s.substr(from, comma - from));
  }
  out.push_back(s.substr(from));
  return out;
}
}  // namespace

Status PgConnInfo::Parse(const std::string& url, PgConnInfo* out) {
  if (!Pq().error.empty()) return Status::IOError(Pq().error);
  char* error = nullptr;
  PQconninfoOption* options = Pq().PQconninfoParse(url.c_str(), &error);
  if (options == nullptr) {
    std::string why = error != nullptr ? PqMessage(error) : "out of memory";
    if (error != nullptr) Pq().PQfreemem(error);
    return Status::InvalidArgument("database URL: " + why);
  }
  PgConnInfo info;
  std::string host, hostaddr, port;
  for (const PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (o->val == nullptr) continue;
    const std::string_view key = o->keyword;
    if (key == "host") {
      host = o->val;
    } else if (key == "hostaddr") {
      hostaddr = o->val;
    } else if (key == "port") {
      port = o->val;
    } else {
      info.settings_.emplace_back(o->keyword, o->val);
    }
  }
  Pq().PQconninfoFree(options);
  for (const auto& setting : kDefaultSettings) {
    const std::string_view key = setting.first;
    const bool given = std::any_of(info.settings_.begin(), info.settings_.end(),
                                   [key](const auto& kv) { return kv.first == key; });
    if (!given) info.settings_.emplace_back(setting.first, setting.second);
  }
  const std::vector<std::string> hosts = SplitCommas(host), addrs = SplitCommas(hostaddr),
                                 ports = SplitCommas(port);
  const size_t n = std::max(hosts.size(), addrs.size());
  const bool listed = n > 1 && (hosts.empty() || hosts.size() == n) &&
                      (addrs.empty() || addrs.size() == n) &&
                      (ports.size() <= 1 || ports.size() == n);
  if (listed) {
    for (size_t i = 0; i < n; ++i) {
      info.hosts_.push_back({hosts.empty() ? "" : hosts[i], addrs.empty() ? "" : addrs[i],
                             ports.empty() ? "" : ports[ports.size() == 1 ? 0 : i]});
    }
  } else {
    // One host (nothing to rotate), or lists libpq itself will judge.
    if (!host.empty()) info.settings_.emplace_back("host", host);
    if (!hostaddr.empty()) info.settings_.emplace_back("hostaddr", hostaddr);
    if (!port.empty()) info.settings_.emplace_back("port", port);
  }
  *out = std::move(info);
  return Status::Ok();
}

size_t PgConnInfo::IndexOf(std::string_view host, std::string_view port) const {
  if (hosts_.empty()) return 0;
  for (size_t i = 0; i < hosts_.size(); ++i) {
    const Host& h = hosts_[i];
    const bool same_host = h.host.empty() ? h.hostaddr == host : h.host == host;
    if (same_host && (h.port.empty() || h.port == port)) return i;
  }
  return hosts();
}

void PgConnInfo::Arrays(size_t first, std::vector<std::string>* storage,
                        std::vector<const char*>* keys, std::vector<const char*>* values) const {
  storage->clear();
  keys->clear();
  values->clear();
  if (!hosts_.empty()) {
    std::string host, hostaddr, port;
    bool any_host = false, any_addr = false, any_port = false;
    for (size_t k = 0; k < hosts_.size(); ++k) {
      const Host& h = hosts_[(first + k) % hosts_.size()];
      const char* sep = k == 0 ? "" : ",";
      host += sep + h.host;
      hostaddr += sep + h.hostaddr;
      port += sep + h.port;
      any_host |= !h.host.empty();
      any_addr |= !h.hostaddr.empty();
      any_port |= !h.port.empty();
    }
    // Views into *storage: reserve so that they stay put.
    storage->reserve(3);
    if (any_host) {
      storage->push_back(std::move(host));
      keys->push_back("host");
      values->push_back(storage->back().c_str());
    }
    if (any_addr) {
      storage->push_back(std::move(hostaddr));
      keys->push_back("hostaddr");
      values->push_back(storage->back().c_str());
    }
    if (any_port) {
      storage->push_back(std::move(port));
      keys->push_back("port");
      values->push_back(storage->back().c_str());
    }
  }
  for (const auto& [key, value] : settings_) {
    keys->push_back(key.c_str());
    values->push_back(value.c_str());
  }
  keys->push_back(nullptr);
  values->push_back(nullptr);
}

}  // namespace cerulean::storage
