#include "server/runtime/body_budget.h"

#include <utility>

namespace cerulean::server {

bool BodyBudget::Take(size_t bytes) {
  size_t used = in_use_.load();
  do {
    if (used + bytes > capacity_) return false;
  } while (!in_use_.compare_exchange_weak(used, used + bytes));
  return true;
}

size_t BodyBudget::TryAcquire(size_t bytes) {
  bytes = Clamp(bytes);
  // Nobody jumps the queue.
  if (waiting_.load() != 0 || !Take(bytes)) return 0;
  return bytes;
}

std::uint64_t BodyBudget::Enqueue(size_t bytes, std::function<void(size_t)> granted) {
  std::vector<Waiter> ready;
  std::uint64_t ticket;
  {
    std::lock_guard lock(mu_);
    ticket = next_ticket_++;
    ++waits_;
    waiters_.push_back(Waiter{ticket, Clamp(bytes), std::move(granted)});
    waiting_.store(waiters_.size());
    // Bytes given back since the caller's TryAcquire failed woke no one.
    ready = GrantLocked();
  }
  Notify(ready);
  return ticket;
}

bool BodyBudget::Cancel(std::uint64_t ticket) {
  std::vector<Waiter> ready;
  {
    std::lock_guard lock(mu_);
    auto it = waiters_.begin();
    while (it != waiters_.end() && it->ticket != ticket) ++it;
    if (it == waiters_.end()) return false;
    waiters_.erase(it);
    waiting_.store(waiters_.size());
    // The one at the front may have held back others that fit.
    ready = GrantLocked();
  }
  Notify(ready);
  return true;
}

void BodyBudget::Release(size_t bytes) {
  in_use_.fetch_sub(bytes);
  // Either this sees the waiter, or the waiter's Enqueue sees these bytes.
  if (waiting_.load() == 0) return;
  std::vector<Waiter> ready;
  {
    std::lock_guard lock(mu_);
    ready = GrantLocked();
  }
  Notify(ready);
}

std::vector<BodyBudget::Waiter> BodyBudget::GrantLocked() {
  std::vector<Waiter> ready;
  while (!waiters_.empty() && Take(waiters_.front().bytes)) {
    ready.push_back(std::move(waiters_.front()));
    waiters_.pop_front();
    waiting_.store(waiters_.size());
  }
  return ready;
}

void BodyBudget::Notify(std::vector<Waiter>& granted) {
  for (Waiter& w : granted) w.granted(w.bytes);
}

size_t BodyBudget::in_use() const { return in_use_.load(); }

std::string BodyBudget::RenderMetrics() const {
  size_t in_use, waiting;
  std::uint64_t waits;
  {
    std::lock_guard lock(mu_);
    in_use = in_use_.load();
    waiting = waiters_.size();
    waits = waits_;
  }
  std::string out =
      "# HELP cerulean_request_body_bytes Request body bytes reserved by requests being read "
      "or answered.\n# TYPE cerulean_request_body_bytes gauge\ncerulean_request_body_bytes " +
      std::to_string(in_use) +
      "\n# HELP cerulean_request_body_budget_bytes The most request bodies may hold at once.\n"
      "# TYPE cerulean_request_body_budget_bytes gauge\ncerulean_request_body_budget_bytes " +
      std::to_string(capacity_) +
      "\n# HELP cerulean_request_body_waiting Requests whose body waits for the budget.\n"
      "# TYPE cerulean_request_body_waiting gauge\ncerulean_request_body_waiting " +
      std::to_string(waiting) +
      "\n# HELP cerulean_request_body_waits_total Requests whose body had to wait for the "
      "budget.\n# TYPE cerulean_request_body_waits_total counter\n"
      "cerulean_request_body_waits_total " +
      std::to_string(waits) + "\n";
  return out;
}

}  // namespace cerulean::server
