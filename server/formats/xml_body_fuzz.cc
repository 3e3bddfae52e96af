// libFuzzer entry for the XML request bodies: Set Table ACL and Set Service
// Properties (server/formats/acl_xml.h, server/protocol/service_properties.h;
// both read with server/formats/xml_tree.h). Besides "no crash, no hang, no
// sanitizer report, no deep recursion" it checks that what either accepts,
// written back, is accepted again and written back the same. Seeds:
// server/fuzz_seeds/xml_body/; build and run: scripts/fuzz.sh (README,
// "Fuzzing").
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "server/formats/acl_xml.h"
#include "server/protocol/service_properties.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using cerulean::server::AccessPolicy;
  using cerulean::server::ServiceProperties;
  const std::string_view xml(reinterpret_cast<const char*>(data), size);

  std::vector<AccessPolicy> acl;
  if (!cerulean::server::ParseAclXml(xml, &acl)) {
    const std::string written = cerulean::server::AclToXml(acl);
    std::vector<AccessPolicy> again;
    if (cerulean::server::ParseAclXml(written, &again)) std::abort();
    if (cerulean::server::AclToXml(again) != written) std::abort();
  }

  ServiceProperties props;
  if (!cerulean::server::ApplyServicePropertiesXml(xml, &props)) {
    const std::string written = cerulean::server::ServicePropertiesToXml(props);
    ServiceProperties again;
    if (cerulean::server::ApplyServicePropertiesXml(written, &again)) std::abort();
    if (cerulean::server::ServicePropertiesToXml(again) != written) std::abort();
    for (const auto& rule : props.cors) {
      static_cast<void>(cerulean::server::CorsHeadersAllowed(rule, xml.substr(0, 256)));
    }
    static_cast<void>(cerulean::server::MatchCorsRule(props.cors, "http://a.example", "GET"));
  }
  return 0;
}
