// PostgresStore's prober: the thread that probes the database every
// probe_interval (creating the schema first if the store started without it)
// and keeps the Healthy() verdict, logging each change of it. See
// postgres_store.h (PostgresStoreOptions::probe_interval).
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "storage/platform.h"
#include "storage/postgres/postgres_internal.h"
#include "storage/postgres/postgres_store.h"

namespace cerulean::storage {

bool PostgresStore::Healthy() { return healthy_.load(std::memory_order_acquire); }

void PostgresStore::ProbeLoop() {
  NameThisThread("cerulean-pgprobe");
  std::unique_ptr<PgConnection> conn;
  std::unique_lock<std::mutex> lock(probe_mu_);
  while (!probe_stopping_) {
    probe_cv_.wait_for(lock, options_.probe_interval, [this] { return probe_stopping_; });
    if (probe_stopping_) return;
    lock.unlock();
    std::string host;
    Status s;
    if (!ready_.load(std::memory_order_acquire)) {
      // Started without the database: the schema first.
      s = Init(&host);
      if (s.ok()) ready_.store(true, std::memory_order_release);
    }
    if (s.ok()) {
      s = ProbeOnce(&conn);
      if (s.ok()) host = conn->HostPort();
    }
    Verdict(s, host);
    lock.lock();
  }
}

Status PostgresStore::ProbeOnce(std::unique_ptr<PgConnection>* conn) {
  Status s;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (*conn == nullptr || (*conn)->Broken()) {
      conn->reset();
      s = pool_.OpenUnpooled("", options_.probe_timeout, conn);
      if (!s.ok()) return s;
    }
    const size_t host = (*conn)->host_index();
    s = (*conn)->Command("SELECT 1");
    if (s.ok()) return s;
    // A connection found dropped (a restarted server, a terminated backend)
    // is opened again at once; one that got no answer is not: the database
    // does not answer, and the next connections start at the next host.
    if ((*conn)->timed_out()) {
      pool_.NoteSilentHost(host);
      return s;
    }
  }
  return s;
}

void PostgresStore::Verdict(const Status& probe, const std::string& host) {
  const bool was = healthy_.load(std::memory_order_acquire);
  const bool first = !verdict_given_;
  verdict_given_ = true;
  if (probe.ok()) {
    if (!was) {
      pool_.SetReachable(true);
      healthy_.store(true, std::memory_order_release);
      if (first) {
        Log("database at " + host + " serves");
      } else {
        char took[32];
        std::snprintf(
            took, sizeof(took), "%.1f",
            std::chrono::duration<double>(std::chrono::steady_clock::now() - unreachable_since_)
                .count());
        Log(std::string(ever_reached_ ? "database reachable again at " : "database reachable at ") +
            host + " after " + took + " s");
      }
    } else if (host != serving_host_) {
      // Another host answers (the prober's connection broke and found the
      // new primary before a probe failed): connections to the old one go.
      pool_.Invalidate();
      Log("database now served by " + host + " (was " + serving_host_ + ")");
    }
    ever_reached_ = true;
    serving_host_ = host;
    return;
  }
  if (was || first) {
    healthy_.store(false, std::memory_order_release);
    pool_.SetReachable(false);
    pool_.Invalidate();
    unreachable_since_ = std::chrono::steady_clock::now();
    std::string why = probe.message();
    constexpr std::string_view kPrefix = "database unavailable: ";
    if (std::string_view(why).starts_with(kPrefix)) why.erase(0, kPrefix.size());
    Log("database unreachable: " + why);
  }
}

void PostgresStore::Log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

}  // namespace cerulean::storage
