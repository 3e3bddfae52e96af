// Internal to authentication (auth.h): what auth.cc, auth_shared_key.cc and
// auth_sas.cc share.
// Thread-safety: as auth.h; MatchesAnyKey remembers per thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "server/formats/azure_error.h"
#include "server/protocol/auth.h"

namespace cerulean::server {

// 403 AuthenticationFailed, its message followed by `detail` if any.
inline std::optional<ErrorReply> AuthFailed(std::string detail = {}) {
  std::string msg(Describe(AzureError::kAuthenticationFailed).message);
  if (!detail.empty()) msg += "\n" + detail;
  return ErrorReply(AzureError::kAuthenticationFailed, std::move(msg));
}

// True iff `sig` is the Sign() of `string_to_sign` under one of `account`'s
// keys (compared in constant time). The latest successes are remembered
// per thread (auth_shared_key.cc).
bool MatchesAnyKey(const Account& account, std::string_view string_to_sign, std::string_view sig);

// Shared Key and Shared Key Lite (auth_shared_key.cc): verifies `credential`
// ("name:signature", under `scheme`) of the request to `account_name`'s
// resources.
std::optional<ErrorReply> AuthenticateSharedKey(const ServerContext& ctx, const Request& req,
                                                std::string_view account_name,
                                                std::string_view scheme,
                                                std::string_view credential);

// Account and service SAS (auth_sas.cc): verifies the SAS of the query
// string and fills req->grant (and req->version), as Authenticate says.
std::optional<ErrorReply> AuthenticateSas(const ServerContext& ctx, Request* req);

}  // namespace cerulean::server
