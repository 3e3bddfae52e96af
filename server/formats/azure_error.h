// Azure error identities and their wire form: status, x-ms-error-code and the
// odata.error body. With error_response.h the only place that maps errors to
// the wire: a storage Status becomes an ErrorReply by its code (FromStatus),
// and every error answer is rendered by RenderError.
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

// What a failed storage call addressed, where that changes the error.
enum class Addressed {
  kData,        // a table's entities, or a table by its name in the URL
  kTableEntry,  // a table as an entry of /Tables (Get Table, Delete Table):
                // a missing one is a missing resource, not a missing table
  kSnapshot,    // a snapshot (/_snapshots): a missing one is a missing resource
};

// Maps a storage Status (not ok) to the Azure error, by its code alone (the
// message is passed on only where Azure's own message says nothing more, as
// for kNotSupported).
ErrorReply FromStatus(const storage::Status& status, Addressed addressed = Addressed::kData);

// {"odata.error":{"code":..,"message":{"lang":"en-US","value":"msg\nRequestId:..\nTime:.."}}}
std::string JsonErrorBody(std::string_view code, std::string_view message,
                          std::string_view request_id);
// The XML OData error body.
std::string XmlErrorBody(std::string_view code, std::string_view message,
                         std::string_view request_id);

}  // namespace cerulean::server
