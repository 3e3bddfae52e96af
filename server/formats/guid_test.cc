#include "server/formats/guid.h"

#include <doctest/doctest.h>

#include <set>
#include <string>

namespace cerulean::server {

TEST_CASE("NewGuid is a lowercase version-4 GUID, different every time") {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string id = i % 2 == 0 ? NewGuid() : NewRequestId();
    CAPTURE(id);
    REQUIRE(id.size() == 36);
    for (size_t k = 0; k < id.size(); ++k) {
      if (k == 8 || k == 13 || k == 18 || k == 23) {
        CHECK(id[k] == '-');
      } else {
        CHECK(((id[k] >= '0' && id[k] <= '9') || (id[k] >= 'a' && id[k] <= 'f')));
      }
    }
    // Version 4, RFC 4122 variant.
    CHECK(id[14] == '4');
    CHECK((id[19] == '8' || id[19] == '9' || id[19] == 'a' || id[19] == 'b'));
    seen.insert(id);
  }
  CHECK(seen.size() == 1000);
}

}  // namespace cerulean::server
