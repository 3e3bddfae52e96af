// libFuzzer entry for the JSON entity codec: the entity body parser (both
// the simdjson path and the slow path for numbers beyond 64 bits), the
// Create Table body and ETag (server/formats/entity_id.h) parsers. Besides
// "no crash, no hang, no sanitizer report" it checks that an accepted
// entity, written back at full metadata, fits the bound its buffer is sized
// by and parses again to the same properties. Seeds:
// server/fuzz_seeds/entity_json/; build and run: scripts/fuzz.sh (README,
// "Fuzzing").
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "server/formats/entity_id.h"
#include "server/formats/entity_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using cerulean::server::JsonContext;
  using cerulean::server::Metadata;
  using cerulean::storage::Entity;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  std::string table;
  static_cast<void>(cerulean::server::ParseTableBody(body, &table));
  static_cast<void>(cerulean::server::ParseETag(body));
  // The last byte picks insert (keys from the body) or update.
  const bool keys_from_body = size > 0 && (data[size - 1] & 1) != 0;
  Entity entity;
  if (cerulean::server::ParseEntityBody(body, keys_from_body, &entity)) return 0;
  entity.timestamp = 638000000000000000;
  if (!keys_from_body) {
    entity.partition_key = "p";
    entity.row_key = "r";
  }
  const JsonContext ctx{"http://127.0.0.1:10002/devstoreaccount1", "devstoreaccount1", "t",
                        Metadata::kFull};
  std::string out;
  cerulean::server::AppendEntityJson(&out, entity, ctx, true, nullptr);
  if (out.size() > cerulean::server::EntityJsonBound(entity, ctx, true, nullptr)) std::abort();
  Entity back;
  if (cerulean::server::ParseEntityBody(out, true, &back)) std::abort();
  if (back.properties.size() != entity.properties.size()) std::abort();
  for (size_t i = 0; i < entity.properties.size(); ++i) {
    const auto& [name, value] = entity.properties[i];
    const cerulean::storage::Value* again = back.Find(name);
    if (again == nullptr || again->type() != value.type()) std::abort();
  }
  return 0;
}
