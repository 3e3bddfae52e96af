// Where a prepared request (routed, authenticated, negotiated: router.cc)
// runs, decided in one place from its route (routes.h): its handler runs on
// the calling I/O thread or on the blocking pool, its write is committed
// through Store::ApplyAsync, injected faults (faults.h) are carried out;
// then every answer gets the common headers, metrics and the access log.
// Thread-safety: every function may run concurrently on any thread.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <exception>
#include <functional>

#include "server/operations/operations.h"
#include "server/protocol/request.h"
#include "server/protocol/routes.h"

namespace cerulean::server {

// An operation's handler (operations/operations.h).
using Handler = OperationResult (*)(const ServerContext& ctx, Request& req);

// The handler of `op`, or nullptr for the operations answered outside the
// route table (Preflight and the reserved /_ endpoints: no verb reaches them).
Handler HandlerOf(Operation op);

// Receives the response of a request answered later (AnswerLater).
using Completion = std::function<void(HttpResponse)>;

// Where a request answered later continues: the executor of the I/O thread
// that read it, and what receives its response.
struct Continuation {
  boost::asio::any_io_executor executor;
  Completion done;
};

// Runs `step`, turning an exception into 500 InternalError.
template <typename Step>
HttpResponse Guarded(const Request& req, Step&& step) {
  try {
    return step();
  } catch (const std::exception&) {
    return ErrorResponse(req, ErrorReply(AzureError::kInternalError));
  }
}

// The longest entity write or batch body parsed on an I/O thread: a typical
// entity or small batch, whose parsing costs less than a hand-off to the
// pool. A longer one is parsed on the pool.
inline constexpr size_t kInlineParseBytes = 128 * 1024;

// Where prepared `req` runs: its route's Runs (AdminRuns for a reserved /_
// endpoint; kInline for a preflight), except that on a store whose reads
// wait on the network (Store::ReadsWaitOnNetwork) every operation runs on
// the pool, and so does a kCommit request whose body is longer than
// kInlineParseBytes (writes commit through ApplyAsync from there).
Runs WhereRuns(const ServerContext& ctx, const Request& req);

// True iff prepared `req` is answered on the calling thread (AnswerNow):
// there is no blocking pool, or its route runs inline (Runs::kInline); no
// document it needs was missing from the caches (Request::missing_documents);
// and no fault rule may apply to it (`faults`: rules are set and `req` is
// not a reserved /_ endpoint).
bool AnswersNow(const ServerContext& ctx, const Request& req, bool faults);

// Runs prepared `req` to its answer on the calling thread, waiting for
// storage. Never throws.
HttpResponse AnswerNow(const ServerContext& ctx, Request& req);

// Answers prepared `req` without blocking the calling (I/O) thread on
// storage, as its route says (WhereRuns): inline operations and short query
// pages on this thread; entity writes and batches prepared here and
// committed through Store::ApplyAsync, their answer built on then.executor;
// the rest on ctx.blocking_pool (on this thread if `on_pool`: it is a pool
// thread already). A fault is decided first (`faults` as for AnswersNow).
// then.done runs exactly once, on any of those threads, after Finish;
// req.http must stay alive and unchanged until then. REQUIRES: no document
// is missing (req.missing_documents == 0: the router reads them first).
// Never throws.
void AnswerLater(const ServerContext& ctx, Request&& req,
                 std::chrono::steady_clock::time_point started, Continuation then, bool faults,
                 bool on_pool);

// Finishes `res`, the answer to `req` whose account's CORS rules were
// missing from the cache, once they were read on the blocking pool; then
// hands it to then.done as AnswerLater does.
void FinishLater(const ServerContext& ctx, Request&& req,
                 std::chrono::steady_clock::time_point started, Continuation then,
                 HttpResponse res);

// Everything after the answer: the common headers, metrics, access log.
void Finish(const ServerContext& ctx, const Request& req, HttpResponse& res,
            std::chrono::steady_clock::time_point started);

}  // namespace cerulean::server
