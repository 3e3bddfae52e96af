// The Set/Get Table ACL body: a table's stored access policies
// (<SignedIdentifiers>) and the time format they share with SAS tokens.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/formats/azure_error.h"

namespace cerulean::server {

// A stored access policy (Set Table ACL).
struct AccessPolicy {
  std::string id;
  std::string start;       // as given, may be empty
  std::string expiry;      // as given, may be empty
  std::string permission;  // may be empty
};

// Parses a time as SAS tokens (st, se) and access policies give it:
// "2024-11-05", "2024-11-05T10:00Z", "...:00.0000000Z"; as
// storage::ParseDateTime returns it, nullopt if malformed.
std::optional<int64_t> ParseSasTime(std::string_view s);

// Parses a Set Table ACL body into *out: empty (no policies) or
// <SignedIdentifiers> with at most five identifiers, each an Id of 1-64
// characters unique in the list, its dates SAS times and its permission of
// the letters "raud". InvalidXmlDocument otherwise.
std::optional<ErrorReply> ParseAclXml(std::string_view xml, std::vector<AccessPolicy>* out);
// The Get Table ACL body for `policies`, dates with seven fractional digits
// as Azure writes them.
std::string AclToXml(const std::vector<AccessPolicy>& policies);

}  // namespace cerulean::server
