// OAuth bearer tokens at the level Azurite calls "basic" (--oauth basic):
// the token must be a well-formed JWT whose issuer is a Microsoft Entra ID
// issuer, whose audience is Azure Storage or this account's table endpoint,
// and whose lifetime covers now. The signature is NOT verified and every
// identity may do everything (no RBAC), as in Azurite: this is for local
// development with DefaultAzureCredential or hand-made tokens.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "server/formats/azure_error.h"

namespace cerulean::server {

// Sent as WWW-Authenticate with every 401 InvalidAuthenticationInfo, as the
// real service does. The tenant is "common" because an emulator belongs to
// none; SDKs only re-request a token for a tenant that is a GUID, so they
// surface the 401 instead of retrying.
inline constexpr std::string_view kBearerChallenge =
    "Bearer authorization_uri=https://login.microsoftonline.com/common/oauth2/authorize "
    "resource_id=https://storage.azure.com";

// Tolerance for clocks that disagree on nbf/exp (Entra ID's usual 5 minutes).
inline constexpr int64_t kTokenClockSkewSeconds = 5 * 60;

// True iff `aud` names Azure Storage (https://storage.azure.com[/] or the
// storage application id) or the table endpoint of `account` in a public or
// sovereign cloud (https://{account}.table.core.windows.net[/] ...).
bool IsAcceptedAudience(std::string_view aud, std::string_view account);

// True iff `iss` is a Microsoft Entra ID issuer: v1 (https://sts.windows.net/
// {tenant}/ and the sovereign clouds) or v2 (https://login.microsoftonline.com/
// {tenant}/v2.0 ...).
bool IsAcceptedIssuer(std::string_view iss);

// Checks the compact JWT `token` for a request to `account` at unix time
// `now`. Returns nullopt iff accepted, else 401 InvalidAuthenticationInfo
// whose message names the failed check (malformed, lifetime, issuer,
// audience).
std::optional<ErrorReply> CheckBearerToken(std::string_view token, std::string_view account,
                                           int64_t now);

}  // namespace cerulean::server
