// A body's room in the server-wide body budget (body_budget.h): taken as
// the body arrives, doubling, waited for (at most the request timeout, then
// 503 ServerBusy) when the budget is spent, given back with the body.
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include "server/http/session.h"
#include "server/runtime/body_budget.h"

namespace cerulean::server {

namespace beast = boost::beast;
namespace net = boost::asio;

template <class Derived>
size_t HttpSession<Derived>::BodyNeed() {
  // What has arrived, what is buffered and one more read (Beast's largest).
  const size_t need = parser_->get().body().size() + buffer_.size() + kLargeReadBufferBytes;
  return std::min(need, body_limit_);
}

template <class Derived>
bool HttpSession<Derived>::BodyHasRoom() {
  const BodyBudget* budget = ctx_.body_budget;
  // A body larger than the budget holds all of it (body_budget.h).
  return budget == nullptr || BodyNeed() <= body_reserved_ || body_reserved_ >= budget->capacity();
}

template <class Derived>
void HttpSession<Derived>::ReserveBody() {
  BodyBudget* budget = ctx_.body_budget;
  if (BodyHasRoom()) return BodyReserved();
  // Doubling: a body takes room a few times, and holds at most twice what
  // it needs.
  const size_t target =
      std::min(std::max(BodyNeed(), body_reserved_ == 0 ? kFirstBodyBytes : 2 * body_reserved_),
               body_limit_);
  const size_t wanted = target - body_reserved_;
  if (size_t taken = budget->TryAcquire(wanted)) {
    body_reserved_ += taken;
    return BodyReserved();
  }
  // Not read meanwhile: the client is held back by TCP (or waits for 100
  // Continue), for at most the request timeout.
  budget_wait_started_ = std::chrono::steady_clock::now();
  std::weak_ptr<Derived> weak = derived().shared_from_this();
  budget_ticket_ =
      budget->Enqueue(wanted, [weak, budget, ex = derived().stream().get_executor()](size_t taken) {
        net::post(ex, [weak, budget, taken] {
          auto self = weak.lock();
          if (!self) return budget->Release(taken);
          self->Guard("budget", [&] { self->OnBudget(taken); });
        });
      });
  budget_timer_.emplace(derived().stream().get_executor());
  budget_timer_->expires_after(group_->limits().request_timeout);
  budget_timer_->async_wait([self = derived().shared_from_this()](beast::error_code ec) {
    if (ec) return;
    self->Guard("budget", [&] { self->OnBudgetTimeout(); });
  });
}

template <class Derived>
void HttpSession<Derived>::OnBudget(size_t taken) {
  budget_ticket_ = 0;
  body_reserved_ += taken;
  if (budget_timer_) budget_timer_->cancel();
  // The time spent waiting is not the client's: its minimum rate resumes.
  body_clock_ += std::chrono::steady_clock::now() - budget_wait_started_;
  ReserveBody();
}

template <class Derived>
void HttpSession<Derived>::OnBudgetTimeout() {
  // Granted meanwhile: the grant is on its way.
  if (budget_ticket_ == 0 || !ctx_.body_budget->Cancel(budget_ticket_)) return;
  budget_ticket_ = 0;
  ServeError(ctx_, *exchange_, ErrorReply(AzureError::kServerBusy));
}

template <class Derived>
void HttpSession<Derived>::BodyReserved() {
  // The body's string never grows past its room (the parser reserves
  // nothing itself).
  if (ctx_.body_budget != nullptr) parser_->get().body().reserve(body_reserved_);
  if (body_begun_) return ContinueBody();
  body_begun_ = true;
  StartBody();
}

template <class Derived>
void HttpSession<Derived>::ReleaseBody() {
  if (parser_) std::string().swap(parser_->get().body());
  if (body_reserved_ > 0) {
    ctx_.body_budget->Release(body_reserved_);
    body_reserved_ = 0;
  }
}

template size_t HttpSession<PlainSession>::BodyNeed();
template bool HttpSession<PlainSession>::BodyHasRoom();
template void HttpSession<PlainSession>::ReserveBody();
template void HttpSession<PlainSession>::OnBudget(size_t);
template void HttpSession<PlainSession>::OnBudgetTimeout();
template void HttpSession<PlainSession>::BodyReserved();
template void HttpSession<PlainSession>::ReleaseBody();
template size_t HttpSession<TlsSession>::BodyNeed();
template bool HttpSession<TlsSession>::BodyHasRoom();
template void HttpSession<TlsSession>::ReserveBody();
template void HttpSession<TlsSession>::OnBudget(size_t);
template void HttpSession<TlsSession>::OnBudgetTimeout();
template void HttpSession<TlsSession>::BodyReserved();
template void HttpSession<TlsSession>::ReleaseBody();

}  // namespace cerulean::server
