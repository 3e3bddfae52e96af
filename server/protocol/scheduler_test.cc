// Tests of where a prepared request runs (AnswersNow): the route table's
// Runs, the store's ReadsWaitOnNetwork hint, the blocking pool's presence
// and armed faults decide, nothing else.
#include "server/protocol/scheduler.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "server/protocol/routes.h"
#include "storage/store.h"

namespace cerulean::server {
namespace {

using storage::Status;

// A store whose reads wait on the network; only that hint is consulted.
class NetworkStore final : public storage::Store {
 public:
  bool ReadsWaitOnNetwork() const override { return true; }

  Status CreateTable(const std::string&, const std::string&) override { return No(); }
  Status DeleteTable(const std::string&, const std::string&) override { return No(); }
  storage::Result<std::string> GetTable(const std::string&, const std::string&) override {
    return No();
  }
  Status ScanTables(const std::string&, const std::string&,
                    const std::function<bool(const std::string&)>&) override {
    return No();
  }
  storage::Result<std::string> GetTableAcl(const std::string&, const std::string&) override {
    return No();
  }
  Status SetTableAcl(const std::string&, const std::string&, const std::string&) override {
    return No();
  }
  storage::Result<std::string> GetServiceProperties(const std::string&) override { return No(); }
  Status SetServiceProperties(const std::string&, const std::string&) override { return No(); }
  Status GetEntityRow(const std::string&, const std::string&, const std::string&,
                      const std::string&, const storage::RowVisitor&) override {
    return No();
  }
  Status ScanRows(const std::string&, const std::string&, const storage::ScanRequest&,
                  const storage::RowVisitor&, std::optional<storage::EntityKey>*) override {
    return No();
  }
  Status Apply(const std::string&, const std::string&, const std::vector<storage::WriteOp>&,
               storage::ApplyResult*, storage::ApplyError*) override {
    return No();
  }
  void ApplyAsync(std::string, std::string, std::vector<storage::WriteOp>,
                  storage::ApplyCallback) override {}
  void Flush() override {}
  Status ResetAccount(const std::string&) override { return No(); }
  Status SaveSnapshot(const std::string&, const std::string&, storage::SnapshotInfo*) override {
    return No();
  }
  Status RestoreSnapshot(const std::string&, const std::string&, storage::RestoreStats*) override {
    return No();
  }
  Status ListSnapshots(const std::string&, std::vector<storage::SnapshotInfo>*) override {
    return No();
  }
  Status DeleteSnapshot(const std::string&, const std::string&) override { return No(); }
  bool Healthy() override { return true; }
  Status GetUsage(std::vector<storage::AccountUsage>*, uint64_t*) override { return No(); }

 private:
  static Status No() { return Status::NotSupported("test store"); }
};

}  // namespace

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

TEST_CASE("on a store whose reads wait on the network, no operation is answered at once") {
  BlockingPool pool(1, 1);
  NetworkStore store;
  ServerContext ctx;
  ctx.blocking_pool = &pool;
  ctx.store = &store;
  HttpRequest http;
  Request req(http);
  for (const Route& r : AllRoutes()) {
    CAPTURE(r.name);
    req.op = r.op;
    CHECK_FALSE(AnswersNow(ctx, req, false));
  }
  // Nor later on the I/O thread: a query's short first page too waits on
  // the database, so it goes to the pool.
  for (const Route& r : AllRoutes()) {
    CAPTURE(r.name);
    req.op = r.op;
    const Runs runs = WhereRuns(ctx, req);
    CHECK(runs != Runs::kInline);
    CHECK(runs != Runs::kInlineOrPool);
    CHECK(runs == (r.runs == Runs::kCommit ? Runs::kCommit : Runs::kPool));
  }
  // The health check reads no entity: it stays on the I/O thread.
  req.admin = true;
  req.raw_path = "/_health";
  CHECK(AnswersNow(ctx, req, false));
}

}  // namespace cerulean::server
