// Query Entities: the query options parsed and planned into a scan
// (PlanQuery), and its page rendered as the store reads the rows
// (RenderQueryPage: JSON or an Atom feed, bounded in rows examined and in
// bytes, the next JSON page rendered ahead), on the thread that read the
// request when the page is short, else on the blocking pool.
#include <algorithm>
#include <chrono>
#include <memory>

#include "odata/query.h"
#include "server/devtools/logger.h"
#include "server/devtools/metrics.h"
#include "server/formats/entity_atom.h"
#include "server/formats/escape.h"
#include "server/operations/operations.h"
#include "server/protocol/query_options.h"
#include "server/protocol/query_plan_header.h"
#include "server/runtime/page_prefetch.h"
#include "server/runtime/response_budget.h"

namespace cerulean::server {

namespace {

// Rows a page may examine before it is cut short with a continuation
// (query.md §6.1: bounds the work of a filter that matches little), and the
// residual filter's nodes it may evaluate over them (odata::EvaluationCost):
// a residual of more than 32 nodes gets fewer rows, at least
// kMinExaminedPerPage.
constexpr size_t kMaxExaminedPerPage = 200'000;
constexpr size_t kResidualNodesPerPage = kMaxExaminedPerPage * 32;
constexpr size_t kMinExaminedPerPage = 1'000;

// What the thread that read a Query Entities request may do itself (the
// rest goes to the blocking pool, where it shares the core with the I/O
// thread instead of holding up its other connections; a hand-off there and
// back costs two context switches, server/README.md "Threads"):
// - parse and plan a $filter of at most kInlinePlanFilterBytes (parsing and
//   planning cost in proportion to the filter);
// - render a page of key ranges only (every row read is written) with at
//   most kInlineQueryRanges ranges (a seek each) and $top at most
//   kInlineQueryRows, giving up once its JSON passes kInlineQueryBytes
//   (which holds a full page of typical entities).
constexpr size_t kInlinePlanFilterBytes = 512;
constexpr size_t kInlineQueryRanges = 16;
constexpr size_t kInlineQueryRows = 100;
constexpr size_t kInlineQueryBytes = 128 * 1024;
// The longest JSON page rendered off the I/O thread: a longer one ends
// there with a continuation (as a page may end before $top).
constexpr size_t kMaxPageBytes = 16 * 1024 * 1024;
// A page being rendered takes from the response budget this much ahead of
// its length, so that it takes once per megabyte, not once per entity.
constexpr size_t kPageBudgetStep = 1024 * 1024;
// The most a page reserves ahead of its length (grown further as needed):
// a page's length is guessed from its first entity and $top.
constexpr size_t kPageReserveBytes = 4 * 1024 * 1024;

// What a Query Entities page in JSON is rendered from, besides the data:
// owned, so that the next page can be rendered after the request is gone.
struct FeedInputs {
  std::string base;
  std::string account;
  std::string table;  // as written in the request URL
  Metadata level = Metadata::kMinimal;
  std::optional<std::vector<std::string>> select;

  JsonContext json() const { return JsonContext{base, account, table, level}; }
};

// How long a JSON page may grow, and how it ends when it would grow longer.
struct PageLimit {
  size_t max_bytes = SIZE_MAX;
  // True: the page ends before the entity that made it long, with a
  // continuation naming that entity. False, or when its first entity makes
  // it long: the rendering gives up with kBusy (503 ServerBusy).
  bool cut = false;
  // While it is rendered, the page holds its length through this hold on
  // the response budget, growing it kPageBudgetStep ahead; a page that
  // cannot grow it is long. May be null. The session settles the hold when
  // it takes the answer.
  ResponseHold* hold = nullptr;
};

// True iff a page `length` bytes long is long by `limit`: past max_bytes,
// or past what it holds from the budget and unable to take more.
bool IsLong(const PageLimit& limit, size_t length) {
  if (length > limit.max_bytes) return true;
  return limit.hold != nullptr && !limit.hold->GrowTo(length, kPageBudgetStep);
}

// Where a page that ran long ends: the first entity left out of it.
struct PageCut {
  std::optional<storage::EntityKey> at;

  // Leaves out the entity just rendered (the body back to `keep` bytes, one
  // fewer in `*count`) and stops the scan there.
  storage::Status Before(const storage::EntityRow& row, size_t keep, std::string* body,
                         size_t* count) {
    body->resize(keep);
    --*count;
    at = storage::EntityKey{std::string(row.partition_key), std::string(row.row_key)};
    return storage::Status::Busy("page cut");
  }

  // The scan's status `s` as the page's: a cut page is whole, and its
  // continuation is the entity left out.
  storage::Status Finish(storage::Status s, std::optional<storage::EntityKey>* next) {
    if (!at) return s;
    *next = std::move(at);
    return storage::Status::Ok();
  }
};

// The body of a Query Entities page in JSON, each entity written as the
// store reads its row: straight from the stored encoding, or (for $select)
// from the row decoded. Ends as `limit` says once the page is long (null:
// never). `*written` (if given) gets the number of entities written.
storage::Status StreamEntityFeedJson(const ServerContext& ctx, const FeedInputs& in,
                                     const storage::ScanRequest& scan, std::string* body,
                                     std::optional<storage::EntityKey>* next,
                                     PageLimit* limit = nullptr, size_t* written = nullptr) {
  const JsonContext jc = in.json();
  const std::vector<std::string>* select = in.select ? &*in.select : nullptr;
  body->reserve(4096);
  *body += '{';
  if (in.level != Metadata::kNone) {
    *body += "\"odata.metadata\":";
    AppendJsonString(body, in.base + "/$metadata#" + in.table);
    *body += ',';
  }
  *body += "\"value\":[";
  size_t count = 0;
  PageCut cut;              // PageLimit::cut
  storage::Entity decoded;  // reused row after row ($select only)
  auto append = [&](storage::EntityRow& row) -> storage::Status {
    if (select == nullptr) return AppendEntityRowJson(body, row, jc, false);
    const storage::Entity* e = row.decoded;
    if (e == nullptr) {
      storage::Status st = storage::DecodeRow(row, &decoded);
      if (!st.ok()) return st;
      e = &decoded;
    }
    AppendEntityJson(body, *e, jc, false, select);
    return storage::Status::Ok();
  };
  storage::Status s = ctx.store->ScanRows(
      in.account, in.table, scan,
      [&](storage::EntityRow& row) {
        if (count > 0) *body += ',';
        size_t before = body->size();
        storage::Status st = append(row);
        if (count++ == 0 && scan.limit > 1) {
          // Sized from the first entity (+1/8) for a full page, so that a
          // page is rarely copied while it grows.
          size_t first = body->size() - before + 1;
          size_t rest = (std::min<size_t>(scan.limit, 1000) - 1) * (first + first / 8) + 16;
          if (limit != nullptr) rest = std::min({rest, limit->max_bytes, kPageReserveBytes});
          body->reserve(body->size() + rest);
        }
        if (!st.ok() || limit == nullptr || !IsLong(*limit, body->size())) return st;
        // A first entity that does not fit the budget: 503 ServerBusy.
        if (!limit->cut || count == 1) return storage::Status::Busy("page too long");
        return cut.Before(row, before - 1, body, &count);  // the entity and its comma
      },
      next);
  s = cut.Finish(s, next);
  *body += "]}";
  if (written != nullptr) *written = count;
  return s;
}

// Everything a JSON page's rendering depends on besides the data, as one
// string (PagePrefetcher's key): each part length-prefixed.
std::string PageKey(const FeedInputs& in, std::string_view filter,
                    const storage::ScanRequest& scan) {
  std::string key;
  auto part = [&key](std::string_view v) {
    key += std::to_string(v.size());
    key += ':';
    key += v;
  };
  part(in.base);
  part(in.account);
  part(in.table);
  part(std::to_string(static_cast<int>(in.level)));
  part(filter);
  part(std::to_string(scan.limit));
  part(std::to_string(scan.max_examined));
  if (in.select) {
    part(std::to_string(in.select->size()));
    for (const auto& name : *in.select) part(name);
  } else {
    part("*");
  }
  if (scan.start) {
    part(scan.start->partition_key);
    part(scan.start->row_key);
  } else {
    part("-");
  }
  return key;
}

// After a JSON page with a continuation: arms the rendering of the page that
// follows it, to run once this one is written, while the client reads it
// (PagePrefetcher).
void PrefetchNextPage(const ServerContext& ctx, FeedInputs in, std::string_view filter,
                      storage::ScanRequest scan, const storage::EntityKey& next) {
  scan.start = next;
  scan.point_reader = false;  // rendered on the blocking pool
  std::string key = PageKey(in, filter, scan);
  ctx.prefetcher->Arm(*ctx.blocking_pool, *ctx.store, std::move(key),
                      [&ctx, in = std::move(in), scan = std::move(scan)](
                          const std::function<bool()>& stop, PagePrefetcher::Page* page) mutable {
                        scan.abandon = stop;  // polled between rows, matching or not
                        return StreamEntityFeedJson(ctx, in, scan, &page->body, &page->next);
                      });
}

// The body of a Query Entities page as an Atom feed (payload.md §6.4), each
// entry written as the store reads its row; ends as `limit` says once the
// page is long, as StreamEntityFeedJson does. `*written` gets the number of
// entries written.
storage::Status StreamEntityFeedAtom(const ServerContext& ctx, const Request& req,
                                     const std::vector<std::string>* select,
                                     const storage::ScanRequest& scan, PageLimit& limit,
                                     std::string* body, std::optional<storage::EntityKey>* next,
                                     size_t* written) {
  const AtomContext ac = MakeAtomContext(req.base, req.account, req.path.table);
  body->reserve(4096);
  AppendAtomFeedStart(body, ac, false);
  size_t count = 0;
  PageCut cut;
  storage::Entity decoded;  // reused row after row
  storage::Status s = ctx.store->ScanRows(
      req.account, req.path.table, scan,
      [&](storage::EntityRow& row) {
        const storage::Entity* e = row.decoded;
        if (e == nullptr) {
          storage::Status st = storage::DecodeRow(row, &decoded);
          if (!st.ok()) return st;
          e = &decoded;
        }
        const size_t before = body->size();
        AppendEntityAtom(body, *e, ac, false, select);
        ++count;
        if (!IsLong(limit, body->size())) return storage::Status::Ok();
        // A first entity that does not fit the budget: 503 ServerBusy.
        if (count == 1) return storage::Status::Busy("page too long");
        return cut.Before(row, before, body, &count);
      },
      next);
  s = cut.Finish(s, next);
  if (count == 0) {
    body->clear();
    AppendAtomFeedStart(body, ac, true);
  }
  AppendAtomFeedEnd(body);
  *written = count;
  return s;
}

// True iff every key of `range` is below `key`.
bool EndsBefore(const storage::KeyRange& range, const storage::EntityKey& key) {
  if (!range.upper) return false;
  const storage::KeyBound& u = *range.upper;
  int c = storage::CompareOrdinal(u.partition_key, key.partition_key);
  if (!u.row_key) return u.inclusive ? c < 0 : c <= 0;  // all of partition u, or up to it
  if (c == 0) c = storage::CompareOrdinal(*u.row_key, key.row_key);
  return u.inclusive ? c < 0 : c <= 0;
}

// A Query Entities request parsed and planned (PlanQuery), ready to render
// on whichever thread finishes it (RenderQueryPage).
struct PlannedQuery {
  // The plan is reported when the request asks for it with the header of
  // the same name; other requests pay only for that look-up.
  bool report = false;
  std::chrono::steady_clock::time_point started;  // set iff `report`
  std::optional<odata::QueryPlan> reported_plan;  // set iff `report`
  bool residual = false;                          // the plan has a residual filter
  storage::ScanRequest scan;
  FeedInputs in;  // the JSON feed's; `in.select` serves Atom too
  // Rows the predicate saw, when the plan is reported and has one (without
  // one, every row examined is returned).
  std::shared_ptr<size_t> examined;
};

// Parses the query options of `req` and plans the scan: an error response,
// or nullopt with *q filled.
std::optional<HttpResponse> PlanQuery(const ServerContext& ctx, const Request& req,
                                      PlannedQuery* q) {
  q->report = !Header(req.http, kQueryPlanHeader).empty();
  if (q->report) q->started = std::chrono::steady_clock::now();
  QueryOptions opts;
  if (auto err = ParseQueryOptions(ctx, req, &opts)) return ErrorResponse(req, *err);
  odata::QueryPlan plan = odata::Compile(opts.filter.get());
  if (q->report) q->reported_plan = plan;
  if (ctx.logger != nullptr && ctx.logger->debug_enabled()) {
    ctx.logger->Debug(req, "query plan " + req.path.table + ": " + plan.ToString());
  }
  storage::ScanRequest& scan = q->scan;
  scan.ranges = std::move(plan.ranges);
  // $top=0: an empty page without continuation (no ranges: nothing read).
  if (opts.top == 0) scan.ranges.clear();
  scan.limit = opts.top;
  scan.max_examined = kMaxExaminedPerPage;
  if (plan.residual) {
    const size_t cost = std::max<size_t>(odata::EvaluationCost(*plan.residual), 1);
    scan.max_examined =
        std::clamp(kResidualNodesPerPage / cost, kMinExaminedPerPage, kMaxExaminedPerPage);
  }
  if (opts.next_partition_key) {
    scan.start = storage::EntityKey{*opts.next_partition_key, opts.next_row_key.value_or("")};
    // A continuation needs no seek into the ranges it has passed.
    auto first = std::partition_point(
        scan.ranges.begin(), scan.ranges.end(),
        [&start = *scan.start](const storage::KeyRange& r) { return EndsBefore(r, start); });
    scan.ranges.erase(scan.ranges.begin(), first);
  }
  if (req.grant.HasRange()) {
    // The scan reads the keys inside the SAS key range only: no row outside
    // it is examined, counted in the plan header, or named by a
    // continuation.
    const storage::KeyRange granted = req.grant.Range();
    std::vector<storage::KeyRange> clipped;
    for (const storage::KeyRange& range : scan.ranges) {
      if (auto inside = storage::Intersect(range, granted)) clipped.push_back(std::move(*inside));
    }
    scan.ranges = std::move(clipped);
    if (q->report) q->reported_plan->ranges = scan.ranges;
  }
  std::shared_ptr<const odata::Filter> residual = plan.residual;
  q->residual = residual != nullptr;
  if (residual) {
    // Owns all it uses: a page rendered ahead runs it after the request.
    scan.predicate = [residual](const storage::Entity& e) { return odata::Matches(*residual, e); };
  }
  if (q->report && scan.predicate) {
    q->examined = std::make_shared<size_t>(0);
    scan.predicate = [inner = std::move(scan.predicate),
                      examined = q->examined](const storage::Entity& e) {
      ++*examined;
      return inner(e);
    };
  }
  q->in = FeedInputs{req.base, req.account, req.path.table, req.format, std::move(opts.select)};
  return std::nullopt;
}

// The page of planned query `q`. With `inline_only`, nullopt instead when
// the page is not short enough to render on the thread that read the
// request (kInlineQueryRanges, kInlineQueryRows, kInlineQueryBytes); `q` may
// then be rendered again without it.
std::optional<HttpResponse> RenderQueryPage(const ServerContext& ctx, Request& req, PlannedQuery& q,
                                            bool inline_only) {
  if (inline_only && req.atom) return std::nullopt;
  storage::ScanRequest& scan = q.scan;
  if (q.examined) *q.examined = 0;
  size_t returned = 0;
  std::optional<storage::EntityKey> next;
  HttpResponse res;
  if (req.atom) {
    // Bounded and budgeted as a JSON page rendered off the I/O thread.
    const std::vector<std::string>* select = q.in.select ? &*q.in.select : nullptr;
    PageLimit limit;
    limit.max_bytes = kMaxPageBytes;
    limit.cut = true;
    limit.hold = req.response_hold;
    std::string body;
    storage::Status s =
        StreamEntityFeedAtom(ctx, req, select, scan, limit, &body, &next, &returned);
    if (!s.ok()) return ErrorResponse(req, FromStatus(s));
    res = AtomResponse(req, http::status::ok, std::move(body));
  } else {
    // Pages are rendered ahead only for key ranges: a page then costs at
    // most $top rows. With a residual filter the next page may examine up to
    // kMaxExaminedPerPage rows, often for a client that wanted only the
    // first page (a client reading only first pages would lose throughput
    // to the rendering ahead). Nor with a SAS key range, which the
    // page's key does not hold. Nor when the plan is reported: a page
    // rendered ahead was not counted.
    const bool prefetch = ctx.prefetcher != nullptr && ctx.blocking_pool != nullptr &&
                          !q.residual && !req.grant.HasRange() && !q.report;
    const std::string_view filter = req.query.Get("$filter").value_or("");
    std::string body;
    std::optional<PagePrefetcher::Page> ready;
    if (prefetch) ready = ctx.prefetcher->Take(*ctx.store, PageKey(q.in, filter, scan));
    if (ready) {
      body = std::move(ready->body);
      next = std::move(ready->next);
    } else {
      // Without a predicate every row read is written: the page's work is
      // bounded by $top.
      if (inline_only && (scan.predicate || scan.limit > kInlineQueryRows ||
                          scan.ranges.size() > kInlineQueryRanges)) {
        return std::nullopt;
      }
      scan.point_reader = inline_only;
      // Off the I/O thread a page holds its length from the response
      // budget while it is rendered, and ends early (with a continuation)
      // when the budget has no more.
      PageLimit limit;
      if (inline_only) {
        limit.max_bytes = kInlineQueryBytes;
      } else {
        limit.max_bytes = kMaxPageBytes;
        limit.cut = true;
        limit.hold = req.response_hold;
      }
      storage::Status s = StreamEntityFeedJson(ctx, q.in, scan, &body, &next, &limit, &returned);
      if (inline_only && s.code() == storage::StatusCode::kBusy) return std::nullopt;
      if (!s.ok()) return ErrorResponse(req, FromStatus(s));
    }
    res = JsonResponse(req, http::status::ok, std::move(body));
    // Only while this is the one request in flight: with others, the
    // rendering would be stopped before it starts, and arming it costs
    // (chrono-newest20 at c16, where every answer has a continuation).
    if (prefetch && next && req.in_flight <= 1) {
      PrefetchNextPage(ctx, std::move(q.in), filter, std::move(scan), *next);
    }
  }
  if (next) {
    res.set("x-ms-continuation-NextPartitionKey", EncodeContinuation(next->partition_key));
    res.set("x-ms-continuation-NextRowKey", EncodeContinuation(next->row_key));
  }
  if (q.report) {
    QueryPlanReport counts;
    counts.returned = returned;
    counts.examined = q.examined ? *q.examined : returned;
    counts.elapsed_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - q.started)
            .count();
    counts.more = next.has_value();
    res.set(kQueryPlanHeader, QueryPlanHeaderValue(*q.reported_plan, counts));
  }
  return res;
}

}  // namespace

OperationResult QueryEntities(const ServerContext& ctx, Request& req) {
  if (req.query.Get("$filter").value_or("").size() > kInlinePlanFilterBytes) {
    // Parsed and planned where the page is rendered.
    return PendingRead{[](const ServerContext& ctx, Request& req) {
      if (ctx.metrics != nullptr) ctx.metrics->RecordQuery(false);
      PlannedQuery q;
      if (auto err = PlanQuery(ctx, req, &q)) return std::move(*err);
      return *RenderQueryPage(ctx, req, q, false);
    }};
  }
  PlannedQuery q;
  if (auto err = PlanQuery(ctx, req, &q)) return std::move(*err);
  if (auto res = RenderQueryPage(ctx, req, q, true)) {
    if (ctx.metrics != nullptr) ctx.metrics->RecordQuery(true);
    return std::move(*res);
  }
  // The planned query goes with the read: std::function needs a copyable
  // callable, and the plan's filter is shared, not copied.
  auto planned = std::make_shared<PlannedQuery>(std::move(q));
  return PendingRead{[planned](const ServerContext& ctx, Request& req) {
    if (ctx.metrics != nullptr) ctx.metrics->RecordQuery(false);
    return *RenderQueryPage(ctx, req, *planned, false);
  }};
}

}  // namespace cerulean::server
