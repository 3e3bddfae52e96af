// Micro-benchmark of the entity codec on a ~500-byte entity (the benchmark
// harness's entity shape: ten properties of mixed EDM types): writes a
// 1,000-entity page from its stored encoding with AppendEntityRowJson, one
// entity with AppendEntityJson (a point read's body), parses the request body
// with ParseEntityBody (an insert's), and prints the best time per entity of
// several rounds. Not a test: it asserts nothing about time. Run pinned to
// one core:
//
//   taskset -c 1 build/entity_json_bench
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "server/formats/entity_json.h"
#include "storage/codec.h"
#include "storage/edm_text.h"

namespace {

using cerulean::server::JsonContext;
using cerulean::server::Metadata;
namespace storage = cerulean::storage;

constexpr std::string_view kEntity =
    R"({"PartitionKey":"dev0003","RowKey":"2517000000000000000",)"
    R"("Amount":512.37,"Amount@odata.type":"Edm.Double","Active":true,"Quantity":417,)"
    R"("Total":"123456789012","Total@odata.type":"Edm.Int64",)"
    R"("CreatedAt":"2024-05-06T07:08:09Z","CreatedAt@odata.type":"Edm.DateTime",)"
    R"("CustomerId":"0f8fad5b-d9cb-469f-a165-70867728950e","CustomerId@odata.type":"Edm.Guid",)"
    R"("Region":"westeurope","Status":"shipped",)"
    R"("Description":"alpha bravo charlie delta echo foxtrot golf hotel",)"
    R"("Thumb":"QUJDREVGR0hJSktMTU5PUFFSU1RVVldY","Thumb@odata.type":"Edm.Binary"})";

// Best nanoseconds per call of `body` (which writes `per_call` entities)
// over `rounds` rounds of `calls` calls.
template <typename Body>
double BestNanosPerEntity(int rounds, int calls, int per_call, Body body) {
  double best = 1e18;
  for (int r = 0; r < rounds; ++r) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) body();
    std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count() / (static_cast<double>(calls) * per_call));
  }
  return best;
}

}  // namespace

int main() {
  storage::Entity entity;
  if (cerulean::server::ParseEntityBody(kEntity, true, &entity)) {
    std::fprintf(stderr, "the sample entity does not parse\n");
    return 1;
  }
  entity.timestamp = *storage::ParseDateTime("2026-11-24T22:13:24.0914302Z");
  std::string encoded;
  storage::EncodeProperties(entity.properties, &encoded);
  storage::EntityRow row;
  row.partition_key = entity.partition_key;
  row.row_key = entity.row_key;
  row.timestamp = entity.timestamp;
  row.properties = encoded;
  JsonContext ctx{"http://127.0.0.1:10002/devstoreaccount1", "devstoreaccount1", "chrono",
                  Metadata::kMinimal};

  std::string page;
  page.reserve(1 << 20);
  bool ok = true;
  double row_ns = BestNanosPerEntity(15, 200, 1000, [&] {
    page.clear();
    for (int k = 0; k < 1000; ++k) {
      if (k > 0) page.push_back(',');
      ok &= cerulean::server::AppendEntityRowJson(&page, row, ctx, false).ok();
    }
  });
  std::string single;
  double entity_ns = BestNanosPerEntity(15, 200000, 1, [&] {
    single.clear();
    cerulean::server::AppendEntityJson(&single, entity, ctx, true, nullptr);
  });
  storage::Entity parsed;
  double parse_ns = BestNanosPerEntity(15, 100000, 1, [&] {
    ok &= !cerulean::server::ParseEntityBody(kEntity, true, &parsed).has_value();
  });
  if (!ok) {
    std::fprintf(stderr, "the stored row does not decode or the body does not parse\n");
    return 1;
  }
  std::printf("AppendEntityRowJson (1,000-entity page): %.1f ns per entity, %zu bytes each\n",
              row_ns, page.size() / 1000);
  std::printf("AppendEntityJson (one entity, element): %.1f ns, %zu bytes\n", entity_ns,
              single.size());
  std::printf("ParseEntityBody (insert body): %.1f ns, %zu bytes\n", parse_ns, kEntity.size());
  return 0;
}
