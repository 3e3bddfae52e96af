// libFuzzer entry for the AtomPub entry codec. Besides "no crash, no hang, no
// sanitizer report" it checks the round trip: an accepted body, written back
// as an entry, parses to the same entity. Seeds: server/fuzz_seeds/entity_atom/;
// build and run: scripts/fuzz.sh (README, "Fuzzing").
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "server/formats/entity_atom.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using cerulean::server::AtomContext;
  using cerulean::storage::Entity;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  // The first byte picks insert (keys from the body) or update.
  const bool keys_from_body = size > 0 && (data[0] & 1) != 0;
  Entity entity;
  if (cerulean::server::ParseAtomEntityBody(body, keys_from_body, &entity)) {
    std::string name;
    static_cast<void>(cerulean::server::ParseAtomTableBody(body, &name));
    return 0;
  }
  entity.timestamp = 638000000000000000;
  const AtomContext ctx{"http://127.0.0.1:10002/devstoreaccount1", "devstoreaccount1", "t",
                        "2024-01-01T00:00:00Z"};
  std::string out;
  cerulean::server::AppendEntityAtom(&out, entity, ctx, true, nullptr);
  Entity back;
  if (cerulean::server::ParseAtomEntityBody(out, keys_from_body, &back)) std::abort();
  back.timestamp = entity.timestamp;
  if (!keys_from_body) {
    back.partition_key = entity.partition_key;
    back.row_key = entity.row_key;
  }
  if (!(back == entity)) std::abort();
  return 0;
}
