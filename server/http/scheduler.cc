#include "server/http/scheduler.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "server/devtools/faults.h"
#include "server/devtools/logger.h"
#include "server/devtools/metrics.h"
#include "server/formats/http_date.h"
#include "server/operations/admin.h"
#include "server/operations/operations.h"
#include "server/protocol/document_cache.h"
#include "server/protocol/routes.h"
#include "server/runtime/blocking_pool.h"
#include "server/runtime/response_budget.h"

namespace cerulean::server {

namespace {

// `F` as a Handler: a handler that always answers at once is wrapped, one
// that may answer later is itself, none (nullptr) stays none.
template <auto F>
constexpr Handler Bind() {
  if constexpr (std::is_null_pointer_v<decltype(F)>) {
    return nullptr;
  } else if constexpr (std::is_same_v<decltype(F), Handler>) {
    return F;
  } else {
    return [](const ServerContext& ctx, Request& req) -> OperationResult { return F(ctx, req); };
  }
}

// The handler of every Operation, in its order: the operation table's last
// column (operation_table.h).
#define CERULEAN_HANDLER(op, name, kind, verbs, selector, if_match, body, response, write, \
                         in_changeset, runs, sas, handler)                                 \
  Bind<handler>(),
constexpr Handler kHandlers[] = {CERULEAN_OPERATIONS(CERULEAN_HANDLER)};
#undef CERULEAN_HANDLER

// The operation's result of prepared `req`, from its handler (the route
// table) or, for a reserved /_ endpoint, from HandleAdmin.
OperationResult Dispatch(const ServerContext& ctx, Request& req) {
  if (req.admin) return HandleAdmin(ctx, req, req.raw_path);
  if (req.op == Operation::kPreflight) return Preflight(ctx, req);
  Handler handler = HandlerOf(req.op);
  if (handler == nullptr) return ErrorResponse(req, ErrorReply(AzureError::kNotImplemented));
  return handler(ctx, req);
}

// Reserves the answer of `write` from the response budget before it commits
// (response_budget.h): nullopt if reserved (or not needed), else the 503
// ServerBusy that answers instead, nothing written.
std::optional<HttpResponse> ReserveAnswer(Request& req, const PendingWrite& write) {
  if (req.response_hold == nullptr || write.answer_bytes <= kUnbudgetedResponseBytes) {
    return std::nullopt;
  }
  if (req.response_hold->ReserveForWrite(write.answer_bytes)) return std::nullopt;
  return ErrorResponse(req, ErrorReply(AzureError::kServerBusy));
}

// The response of an operation's result, applying its write or running its
// read synchronously.
HttpResponse ResolveNow(const ServerContext& ctx, Request& req, OperationResult result) {
  if (auto* res = std::get_if<HttpResponse>(&result)) return std::move(*res);
  if (auto* read = std::get_if<PendingRead>(&result)) return read->run(ctx, req);
  PendingWrite& write = std::get<PendingWrite>(result);
  if (auto refused = ReserveAnswer(req, write)) return std::move(*refused);
  storage::ApplyOutcome outcome;
  outcome.status =
      ctx.store->Apply(req.account, write.table, write.ops, &outcome.result, &outcome.error);
  outcome.ops = std::move(write.ops);
  return write.answer(req, outcome);
}

void FinishResponse(const Request& req, HttpResponse& res, bool keep_alive) {
  res.set("x-ms-request-id", req.request_id);
  res.set("x-ms-version", req.version.empty() ? std::string(kNewestVersion) : req.version);
  res.set("Date", HttpDateNow());
  res.set("Server", "Cerulean-Table/" CERULEAN_VERSION);
  res.set("Cache-Control", "no-cache");
  res.set("X-Content-Type-Options", "nosniff");
  std::string_view client_id = Header(req.http, "x-ms-client-request-id");
  if (!client_id.empty()) res.set("x-ms-client-request-id", client_id);
  // From the rules cached when the request was prepared (never missing
  // here: a request whose rules were missing is finished on the pool once
  // they were read).
  if ((req.missing_documents & kMissingCors) == 0) ApplyCorsHeaders(req, res);
  res.keep_alive(keep_alive);
  res.prepare_payload();
  // HEAD: GET's headers, Content-Length included, without the body.
  if (req.http.method() == http::verb::head) res.body().clear();
}

}  // namespace

Handler HandlerOf(Operation op) { return kHandlers[static_cast<size_t>(op)]; }

void Finish(const ServerContext& ctx, const Request& req, HttpResponse& res,
            std::chrono::steady_clock::time_point started) {
  FinishResponse(req, res, req.http.keep_alive());
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  if (ctx.metrics) ctx.metrics->Record(req, res.result_int(), ms);
  if (ctx.logger) ctx.logger->Access(req, res, ms);
}

namespace {

// A request answered by AnswerLater, alive until its completion ran.
struct AsyncRequest {
  AsyncRequest(Request&& r, boost::asio::any_io_executor ex, Completion d)
      : req(std::move(r)), executor(std::move(ex)), done(std::move(d)) {}
  Request req;
  boost::asio::any_io_executor executor;
  Completion done;
  std::chrono::steady_clock::time_point started;
  bool drop_answer = false;  // FaultAction::kDropAfter: the answer is logged, not sent
};

void Complete(const ServerContext& ctx, AsyncRequest& a, HttpResponse res) {
  Finish(ctx, a.req, res, a.started);
  if (a.drop_answer) MarkConnectionDrop(res);
  Completion done = std::move(a.done);
  done(std::move(res));  // last: the request may be gone after it
}

// Answers of writes that the store's thread holds back until the last
// callback of its run (ApplyOutcome::more_in_batch), then hands to each I/O
// thread at once, so that a run of commits wakes each I/O thread once rather
// than once per write. The queue is per thread because the hint is: a run is
// the callbacks that one store thread makes in a row, and only that thread
// knows where it ends. Two stores (two servers in one process) call back on
// their own threads and never share a queue.
struct HeldAnswer {
  boost::asio::any_io_executor executor;
  std::function<void()> run;
};
thread_local std::vector<HeldAnswer> held_answers;

void HandOn(boost::asio::any_io_executor executor, std::function<void()> run, bool more) {
  if (!more && held_answers.empty()) {
    boost::asio::post(executor, std::move(run));
    return;
  }
  held_answers.push_back(HeldAnswer{std::move(executor), std::move(run)});
  if (more) return;
  std::vector<HeldAnswer> held;
  held.swap(held_answers);
  // One post per executor, in the order the writes were committed.
  for (size_t i = 0; i < held.size(); ++i) {
    if (!held[i].run) continue;
    auto runs = std::make_shared<std::vector<std::function<void()>>>();
    for (size_t j = i; j < held.size(); ++j) {
      if (held[j].run && held[j].executor == held[i].executor)
        runs->push_back(std::move(held[j].run));
    }
    boost::asio::post(held[i].executor, [runs] {
      for (auto& run : *runs) run();
    });
  }
}

// Commits a prepared write without blocking: the store commits it with
// whatever else is queued, and the answer is built back on the request's
// executor.
void CommitAsync(const ServerContext& ctx, const std::shared_ptr<AsyncRequest>& a,
                 PendingWrite& write) {
  if (auto refused = ReserveAnswer(a->req, write)) return Complete(ctx, *a, std::move(*refused));
  const std::string& account = a->req.account;
  ctx.store->ApplyAsync(account, std::move(write.table), std::move(write.ops),
                        [&ctx, a, answer = std::move(write.answer)](storage::ApplyOutcome outcome) {
                          bool more = outcome.more_in_batch;
                          HandOn(
                              a->executor,
                              [&ctx, a, answer, outcome = std::move(outcome)] {
                                Complete(ctx, *a,
                                         Guarded(a->req, [&] { return answer(a->req, outcome); }));
                              },
                              more);
                        });
}

// Carries out `fault` (faults.h) for request `a`: after its delay (a timer
// on the request's executor, never a sleep), answers with the error, drops
// the connection, or runs `proceed` (for kDropAfter, whose answer is then
// dropped by Complete).
void InjectFault(const ServerContext& ctx, const std::shared_ptr<AsyncRequest>& a, Fault fault,
                 std::function<void()> proceed) {
  a->req.fault = FaultActionName(fault.action);
  auto act = [&ctx, a, fault, proceed = std::move(proceed)] {
    switch (fault.action) {
      case FaultAction::kError:
        return Complete(ctx, *a, ErrorResponse(a->req, ErrorReply(fault.error, fault.message)));
      case FaultAction::kDropBefore: {
        HttpResponse res = MakeResponse(a->req, http::status::unknown);
        return Complete(ctx, *a, std::move(res));
      }
      case FaultAction::kDropAfter:
        a->drop_answer = true;
        return proceed();
      case FaultAction::kNone:
        return proceed();
    }
  };
  if (fault.delay.count() == 0) return act();
  auto timer = std::make_shared<boost::asio::steady_timer>(a->executor, fault.delay);
  timer->async_wait([timer, act = std::move(act)](boost::system::error_code) { act(); });
}

// The fault, if any, for request `a` addressing `table` (and the entity
// key `partition_key`, when known).
std::optional<Fault> DecideFault(const ServerContext& ctx, const AsyncRequest& a,
                                 std::string_view table,
                                 std::optional<std::string_view> partition_key) {
  return ctx.faults->Decide(
      FaultTarget{a.req.account, OperationName(a.req.op), table, partition_key});
}

}  // namespace

// On a store whose reads are round trips to a database server, everything
// that may read goes to the pool: on the I/O thread it would hold every
// connection of that thread meanwhile. That includes entity writes and
// batches: they are parsed on the pool and committed from there, because
// their error paths and a batch's retrieve read the store. On any store, an
// entity write or batch whose body is longer than kInlineParseBytes is
// parsed there too: parsing costs in proportion to the body, and a long one
// would hold up every other connection of its I/O thread meanwhile.
Runs WhereRuns(const ServerContext& ctx, const Request& req) {
  if (req.admin) return AdminRuns(req.raw_path);
  // The preflight reads only the cached rules (Request::cors).
  if (req.op == Operation::kPreflight) return Runs::kInline;
  const Runs runs = RouteOf(req.op).runs;
  if (runs != Runs::kPool && ctx.store != nullptr && ctx.store->ReadsWaitOnNetwork()) {
    return Runs::kPool;
  }
  if (runs == Runs::kCommit && req.http.body().size() > kInlineParseBytes) return Runs::kPool;
  return runs;
}

namespace {

// Everything after the fault: dispatch on this thread or the blocking pool
// (WhereRuns), commit a write through ApplyAsync. `faults`: fault rules are
// set (FaultsArmed, read once per request). `on_pool`: this is a pool
// thread already.
void RunPrepared(const ServerContext& ctx, const std::shared_ptr<AsyncRequest>& a, bool faults,
                 bool on_pool) {
  const Runs runs = WhereRuns(ctx, a->req);
  if (!on_pool && ctx.blocking_pool != nullptr && runs == Runs::kPool) {
    ctx.blocking_pool->Post([&ctx, a, faults] { RunPrepared(ctx, a, faults, true); });
    return;
  }
  OperationResult result;
  try {
    result = Dispatch(ctx, a->req);
  } catch (const std::exception&) {
    result = ErrorResponse(a->req, ErrorReply(AzureError::kInternalError));
  }
  if (auto* res = std::get_if<HttpResponse>(&result)) return Complete(ctx, *a, std::move(*res));
  if (auto* read = std::get_if<PendingRead>(&result)) {
    auto finish = [&ctx, a, run = std::move(read->run)] {
      Complete(ctx, *a, Guarded(a->req, [&] { return run(ctx, a->req); }));
    };
    if (on_pool || ctx.blocking_pool == nullptr) return finish();
    ctx.blocking_pool->Post(std::move(finish));
    return;
  }
  PendingWrite& write = std::get<PendingWrite>(result);
  // Writes and batches meet their fault here, parsed but not yet applied:
  // the table and PartitionKey of a $batch or an insert are in its body.
  if (faults) {
    std::optional<std::string_view> pk;
    if (!write.ops.empty()) pk = write.ops.front().entity.partition_key;
    if (auto fault = DecideFault(ctx, *a, write.table, pk)) {
      auto held = std::make_shared<PendingWrite>(std::move(write));
      return InjectFault(ctx, a, std::move(*fault),
                         [&ctx, a, held] { CommitAsync(ctx, a, *held); });
    }
  }
  CommitAsync(ctx, a, write);
}

}  // namespace

bool AnswersNow(const ServerContext& ctx, const Request& req, bool faults) {
  if (faults || req.missing_documents != 0) return false;
  if (ctx.blocking_pool == nullptr) return true;
  return WhereRuns(ctx, req) == Runs::kInline;
}

HttpResponse AnswerNow(const ServerContext& ctx, Request& req) {
  return Guarded(req, [&] { return ResolveNow(ctx, req, Dispatch(ctx, req)); });
}

namespace {

// The fault of `a` (decided here unless it is a write, which meets its
// fault once parsed: RunPrepared), then the rest.
void Start(const ServerContext& ctx, const std::shared_ptr<AsyncRequest>& a, bool faults,
           bool on_pool) {
  if (faults && RouteOf(a->req.op).runs != Runs::kCommit) {
    const ResourcePath& path = a->req.path;
    std::optional<std::string_view> pk;
    if (path.kind == ResourceKind::kEntity) pk = path.partition_key;
    if (auto fault = DecideFault(ctx, *a, path.table, pk)) {
      return InjectFault(ctx, a, std::move(*fault),
                         [&ctx, a] { RunPrepared(ctx, a, false, false); });
    }
  }
  RunPrepared(ctx, a, faults, on_pool);
}

// Runs `step` on the blocking pool, or at once without one.
template <class Step>
void OnPool(const ServerContext& ctx, Step&& step) {
  if (ctx.blocking_pool == nullptr) return step();
  ctx.blocking_pool->Post(std::forward<Step>(step));
}

}  // namespace

void AnswerLater(const ServerContext& ctx, Request&& req,
                 std::chrono::steady_clock::time_point started, Continuation then, bool faults,
                 bool on_pool) {
  auto a = std::make_shared<AsyncRequest>(std::move(req), std::move(then.executor),
                                          std::move(then.done));
  a->started = started;
  Start(ctx, a, faults, on_pool);
}

void FinishLater(const ServerContext& ctx, Request&& req,
                 std::chrono::steady_clock::time_point started, Continuation then,
                 HttpResponse res) {
  auto a = std::make_shared<AsyncRequest>(std::move(req), std::move(then.executor),
                                          std::move(then.done));
  a->started = started;
  auto answer = std::make_shared<HttpResponse>(std::move(res));
  OnPool(ctx, [&ctx, a, answer] {
    a->req.may_load_documents = true;
    a->req.missing_documents = 0;
    a->req.cors = LoadCors(ctx.documents, *ctx.store, a->req.account);
    Complete(ctx, *a, std::move(*answer));
  });
}

}  // namespace cerulean::server
