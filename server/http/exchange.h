// One request between its owner (the session, which read its head) and the
// router (router.h), from the head to the answer: the request's message
// and the facts of its arrival, the router's prepared Request, and the
// three things the router may ask of the owner — read the body (NeedBody),
// take the answer now (Answer), or give the executor and receiver of an
// answer computed later (AnswerLater).
// Thread-safety: the owner and the router use an exchange on the owner's
// I/O thread, one call after another; only the Continuation that
// AnswerLater returns may run elsewhere.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include "server/http/scheduler.h"
#include "server/protocol/request.h"
#include "server/runtime/response_budget.h"

namespace cerulean::server {

// What the owner tells the router about a request whose head it read.
struct Arrival {
  const std::string& peer_address;
  // Requests in flight on this server, this one included (Request::in_flight).
  int in_flight = 1;
  // The head announced a body that has not been read.
  bool body_pending = false;
  // The connection's hold on the response budget (Request::response_hold);
  // may be null.
  ResponseHold* response_hold = nullptr;
};

// The owner's side of one request. The owner keeps the exchange, and the
// HttpRequest it refers to, alive and in place until the answer is out.
class Exchange {
 public:
  // REQUIRES: `http` holds the request's head; `arrival`'s references
  // outlive the exchange.
  Exchange(HttpRequest& http, const Arrival& arrival) : http_(http), arrival_(arrival) {}
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  HttpRequest& http() { return http_; }
  const Arrival& arrival() const { return arrival_; }

  // The router asks for the body, at most `limit` bytes (0: kMaxBodyBytes).
  // The owner reads it into http() and then calls ServeBody, or, if it
  // cannot take the body in, ServeError (router.h). Called at most once.
  virtual void NeedBody(size_t limit) = 0;
  // The answer, finished, on the owner's thread. The router touches the
  // exchange no more after this call.
  virtual void Answer(HttpResponse res) = 0;
  // Where an answer computed later goes: the owner's executor and what
  // hands the response to the owner there. Called at most once per
  // request, and only then (it costs an allocation).
  virtual Continuation AnswerLater() = 0;

  // The router's state for this request: prepared from the head by
  // ServeRequest, kept while the body is read, released once answered.
  std::optional<Request> req;
  std::chrono::steady_clock::time_point started;

 protected:
  ~Exchange() = default;

 private:
  HttpRequest& http_;
  const Arrival arrival_;
};

}  // namespace cerulean::server
