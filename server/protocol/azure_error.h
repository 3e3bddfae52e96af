// Azure error identities and their wire form: status, x-ms-error-code and the
// odata.error body. The only place that maps errors to the wire.
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "storage/status.h"

namespace cerulean::server {

// Every error the service answers with. The wire code is the enumerator name
// without the leading 'k' (see kErrorTable in azure_error.cc).
enum class AzureError {
  kTableAlreadyExists,
  kTableNotFound,
  kResourceNotFound,
  kEntityAlreadyExists,
  kUpdateConditionNotSatisfied,
  kPropertiesNeedValue,
  kInvalidInput,
  kInvalidValueType,
  kOutOfRangeInput,
  kPropertyValueTooLarge,
  kEntityTooLarge,
  kTooManyProperties,
  kPropertyNameTooLong,
  kPropertyNameInvalid,
  kDuplicatePropertiesSpecified,
  kInvalidDuplicateRow,
  kCommandsInBatchActOnDifferentPartitions,
  kJsonFormatNotSupported,
  kJsonVerboseFormatNotSupported,
  kAtomFormatNotSupported,
  kMediaTypeNotSupported,
  kMethodNotAllowed,
  kNotImplemented,
  kXMethodNotUsingPost,
  kXMethodIncorrectValue,
  kXMethodIncorrectCount,
  kHostInformationNotPresent,
  kAuthenticationFailed,
  kAuthorizationFailure,
  kAuthorizationPermissionMismatch,
  kAuthorizationServiceMismatch,
  kAuthorizationResourceTypeMismatch,
  kAuthorizationProtocolMismatch,
  kAuthorizationSourceIPMismatch,
  kInvalidAuthenticationInfo,
  kInvalidAuthenticationInfoToken,  // 401 for a rejected bearer token; wire code
                                    // InvalidAuthenticationInfo
  kInsufficientAccountPermissions,
  kInvalidHeaderValue,
  kCorsPreflightFailure,
  kMissingRequiredHeader,
  kInvalidQueryParameterValue,
  kInvalidUri,
  kInvalidResourceName,
  kUnsupportedHttpVerb,
  kInvalidXmlDocument,
  kInvalidXmlNodeValue,
  kMd5Mismatch,
  kRequestBodyTooLarge,
  kResourceNotFoundAccount,  // wire code AccountNotFound
  kInternalError,
  kServerBusy,
  kOperationTimedOut,
};

struct ErrorInfo {
  int status;
  std::string_view code;
  std::string_view message;  // default message
};

// Status, code and default message of `error`.
const ErrorInfo& Describe(AzureError error);

// An error to answer: identity plus an optional message overriding the
// default one.
struct ErrorReply {
  AzureError error;
  std::string message;  // empty: the default message
  ErrorReply(AzureError e, std::string m = {}) : error(e), message(std::move(m)) {}  // NOLINT
  std::string_view Message() const;
};

// The error whose wire code is `code` (and whose status is `status`, when
// not 0), or nullopt.
std::optional<AzureError> ErrorFromCode(std::string_view code, int status);

// Maps a storage Status (not ok) to the Azure error for an entity or table
// operation.
ErrorReply FromStatus(const storage::Status& status);

// {"odata.error":{"code":..,"message":{"lang":"en-US","value":"msg\nRequestId:..\nTime:.."}}}
std::string JsonErrorBody(std::string_view code, std::string_view message,
                          std::string_view request_id);
// The XML OData error body.
std::string XmlErrorBody(std::string_view code, std::string_view message,
                         std::string_view request_id);

}  // namespace cerulean::server
