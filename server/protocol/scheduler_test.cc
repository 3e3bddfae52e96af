// Tests of where a prepared request runs (AnswersNow): the route table's
// Runs, the blocking pool's presence and armed faults decide, nothing else.
#include "server/protocol/scheduler.h"

#include <doctest/doctest.h>

#include "server/protocol/routes.h"

namespace cerulean::server {

TEST_CASE("a prepared request is answered on the calling thread iff its route runs inline") {
  BlockingPool pool(1, 1);
  ServerContext with_pool;
  with_pool.blocking_pool = &pool;
  const ServerContext without_pool;
  HttpRequest http;
  Request req(http);
  for (const Route& r : AllRoutes()) {
    CAPTURE(r.name);
    req.op = r.op;
    CHECK(AnswersNow(with_pool, req, false) == (r.runs == Runs::kInline));
    // Without a pool everything waits on this thread; with faults armed
    // nothing does (a delay must not block an I/O thread).
    CHECK(AnswersNow(without_pool, req, false));
    CHECK_FALSE(AnswersNow(with_pool, req, true));
    CHECK_FALSE(AnswersNow(without_pool, req, true));
  }
  req.admin = true;
  req.raw_path = "/_health";
  CHECK(AnswersNow(with_pool, req, false));
  req.raw_path = "/_metrics";
  CHECK_FALSE(AnswersNow(with_pool, req, false));
  CHECK(AnswersNow(without_pool, req, false));
}

}  // namespace cerulean::server
