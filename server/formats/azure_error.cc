#include "server/formats/azure_error.h"

#include "server/formats/escape.h"
#include "storage/edm_text.h"

namespace cerulean::server {

namespace {

struct Entry {
  AzureError error;
  ErrorInfo info;
};

// persistent order irrelevant; looked up by scan (small).
constexpr Entry kErrorTable[] = {
    {AzureError::kTableAlreadyExists,
     {409, "TableAlreadyExists", "The table specified already exists."}},
    {AzureError::kTableNotFound, {404, "TableNotFound", "The table specified does not exist."}},
    {AzureError::kResourceNotFound,
     {404, "ResourceNotFound", "The specified resource does not exist."}},
    {AzureError::kEntityAlreadyExists,
     {409, "EntityAlreadyExists", "The specified entity already exists."}},
    {AzureError::kUpdateConditionNotSatisfied,
     {412, "UpdateConditionNotSatisfied",
      "The update condition specified in the request was not satisfied."}},
    {AzureError::kPropertiesNeedValue,
     {400, "PropertiesNeedValue",
      "The values are not specified for all properties in the entity."}},
    {AzureError::kInvalidInput, {400, "InvalidInput", "One of the request inputs is not valid."}},
    {AzureError::kInvalidValueType, {400, "InvalidValueType", "The value specified is invalid."}},
    {AzureError::kOutOfRangeInput,
     {400, "OutOfRangeInput", "One of the request inputs is out of range."}},
    {AzureError::kPropertyValueTooLarge,
     {400, "PropertyValueTooLarge",
      "The property value exceeds the maximum allowed size (64KB). If the property value is a "
      "string, it is UTF-16 encoded and the maximum number of characters should be 32K or less."}},
    {AzureError::kEntityTooLarge,
     {400, "EntityTooLarge", "The entity is larger than the maximum allowed size (1MB)."}},
    {AzureError::kTooManyProperties,
     {400, "TooManyProperties",
      "The entity contains more properties than allowed. Each entity can include up to 252 "
      "properties to store data. Each entity also has 3 system properties."}},
    {AzureError::kPropertyNameTooLong,
     {400, "PropertyNameTooLong", "The property name exceeds the maximum allowed length (255)."}},
    {AzureError::kPropertyNameInvalid,
     {400, "PropertyNameInvalid", "The property name is invalid."}},
    {AzureError::kDuplicatePropertiesSpecified,
     {400, "DuplicatePropertiesSpecified", "A property is specified more than one time."}},
    {AzureError::kInvalidDuplicateRow,
     {400, "InvalidDuplicateRow",
      "The batch request contains multiple changes with same row key. An entity can appear only "
      "once in a batch request."}},
    {AzureError::kCommandsInBatchActOnDifferentPartitions,
     {400, "CommandsInBatchActOnDifferentPartitions",
      "All commands in a batch must operate on same entity group."}},
    {AzureError::kJsonFormatNotSupported,
     {415, "JsonFormatNotSupported", "JSON format is not supported."}},
    {AzureError::kJsonVerboseFormatNotSupported,
     {415, "JsonVerboseFormatNotSupported", "Verbose JSON format is not supported."}},
    {AzureError::kAtomFormatNotSupported,
     {415, "AtomFormatNotSupported", "Atom format is not supported."}},
    {AzureError::kMediaTypeNotSupported,
     {415, "MediaTypeNotSupported", "None of the provided media types are supported"}},
    {AzureError::kMethodNotAllowed,
     {405, "MethodNotAllowed", "The requested method is not allowed on the specified resource."}},
    {AzureError::kNotImplemented,
     {501, "NotImplemented",
      "The requested operation is not implemented on the specified resource."}},
    {AzureError::kXMethodNotUsingPost,
     {400, "XMethodNotUsingPost",
      "The request uses X-HTTP-Method with an HTTP verb other than POST."}},
    {AzureError::kXMethodIncorrectValue,
     {400, "XMethodIncorrectValue", "The specified X-HTTP-Method is invalid."}},
    {AzureError::kXMethodIncorrectCount,
     {400, "XMethodIncorrectCount", "More than one X-HTTP-Method is specified."}},
    {AzureError::kHostInformationNotPresent,
     {400, "HostInformationNotPresent",
      "The required host information is not present in the request. You must send a non-empty Host "
      "header or include the absolute URI in the request line."}},
    {AzureError::kAuthenticationFailed,
     {403, "AuthenticationFailed",
      "Server failed to authenticate the request. Make sure the value of Authorization header is "
      "formed correctly including the signature."}},
    {AzureError::kAuthorizationFailure,
     {403, "AuthorizationFailure", "This request is not authorized to perform this operation."}},
    {AzureError::kAuthorizationPermissionMismatch,
     {403, "AuthorizationPermissionMismatch",
      "This request is not authorized to perform this operation using this permission."}},
    {AzureError::kAuthorizationServiceMismatch,
     {403, "AuthorizationServiceMismatch",
      "This request is not authorized to perform this operation using this service."}},
    {AzureError::kAuthorizationResourceTypeMismatch,
     {403, "AuthorizationResourceTypeMismatch",
      "This request is not authorized to perform this operation using this resource type."}},
    {AzureError::kAuthorizationProtocolMismatch,
     {403, "AuthorizationProtocolMismatch",
      "This request is not authorized to perform this operation using this protocol."}},
    {AzureError::kAuthorizationSourceIPMismatch,
     {403, "AuthorizationSourceIPMismatch",
      "This request is not authorized to perform this operation using this source IP."}},
    {AzureError::kInvalidAuthenticationInfo,
     {400, "InvalidAuthenticationInfo",
      "Authentication information is not given in the correct format. Check the value of "
      "Authorization header."}},
    {AzureError::kInvalidAuthenticationInfoToken,
     {401, "InvalidAuthenticationInfo",
      "Server failed to authenticate the request. Please refer to the information in the "
      "www-authenticate header."}},
    {AzureError::kInsufficientAccountPermissions,
     {403, "InsufficientAccountPermissions", "Write operations are not allowed."}},
    {AzureError::kInvalidHeaderValue,
     {400, "InvalidHeaderValue",
      "The value for one of the HTTP headers is not in the correct format."}},
    {AzureError::kCorsPreflightFailure,
     {403, "CorsPreflightFailure", "CORS not enabled or no matching rule found for this request."}},
    {AzureError::kMissingRequiredHeader,
     {400, "MissingRequiredHeader",
      "An HTTP header that's mandatory for this request is not specified."}},
    {AzureError::kInvalidQueryParameterValue,
     {400, "InvalidQueryParameterValue",
      "Value for one of the query parameters specified in the request URI is invalid."}},
    {AzureError::kInvalidUri,
     {400, "InvalidUri", "The requested URI does not represent any resource on the server."}},
    {AzureError::kInvalidResourceName,
     {400, "InvalidResourceName", "The specifed resource name contains invalid characters."}},
    {AzureError::kUnsupportedHttpVerb,
     {405, "UnsupportedHttpVerb", "The resource doesn't support specified Http Verb."}},
    {AzureError::kInvalidXmlDocument,
     {400, "InvalidXmlDocument", "XML specified is not syntactically valid."}},
    {AzureError::kInvalidXmlNodeValue,
     {400, "InvalidXmlNodeValue",
      "The value for one of the XML nodes is not in the correct format."}},
    {AzureError::kMd5Mismatch,
     {400, "Md5Mismatch",
      "The MD5 value specified in the request did not match with the MD5 value calculated by the "
      "server."}},
    {AzureError::kRequestBodyTooLarge,
     {413, "RequestBodyTooLarge",
      "The request body is too large and exceeds the maximum permissible limit."}},
    {AzureError::kResourceNotFoundAccount,
     {404, "AccountNotFound", "The specified account does not exist."}},
    {AzureError::kInternalError,
     {500, "InternalError",
      "Server encountered an internal error. Please try again after some time."}},
    {AzureError::kServerBusy, {503, "ServerBusy", "The server is busy."}},
    {AzureError::kOperationTimedOut,
     {500, "OperationTimedOut", "The operation could not be completed within the permitted time."}},
};

}  // namespace

const ErrorInfo& Describe(AzureError error) {
  for (const auto& e : kErrorTable) {
    if (e.error == error) return e.info;
  }
  return Describe(AzureError::kInternalError);
}

std::optional<AzureError> ErrorFromCode(std::string_view code, int status) {
  for (const auto& e : kErrorTable) {
    if (e.info.code == code && (status == 0 || e.info.status == status)) return e.error;
  }
  return std::nullopt;
}

std::string_view ErrorReply::Message() const {
  return message.empty() ? Describe(error).message : std::string_view(message);
}

ErrorReply FromStatus(const storage::Status& status, Addressed addressed) {
  using storage::StatusCode;
  switch (status.code()) {
    case StatusCode::kNotFound:
      if (addressed == Addressed::kSnapshot) {
        return ErrorReply(AzureError::kResourceNotFound, "The specified snapshot does not exist.");
      }
      return AzureError::kResourceNotFound;
    case StatusCode::kTableNotFound:
      if (addressed == Addressed::kTableEntry) return AzureError::kResourceNotFound;
      return AzureError::kTableNotFound;
    case StatusCode::kAlreadyExists:
      return AzureError::kEntityAlreadyExists;
    case StatusCode::kTableAlreadyExists:
      return AzureError::kTableAlreadyExists;
    case StatusCode::kConditionFailed:
      return AzureError::kUpdateConditionNotSatisfied;
    case StatusCode::kInvalidArgument:
      return AzureError::kInvalidInput;
    case StatusCode::kTooManyProperties:
      return AzureError::kTooManyProperties;
    case StatusCode::kBusy:
      return AzureError::kServerBusy;
    case StatusCode::kNotSupported:
      return ErrorReply(AzureError::kNotImplemented, status.message());
    case StatusCode::kOutcomeUnknown:
      // Azure's answer for an operation that may or may not have succeeded.
      return AzureError::kOperationTimedOut;
    case StatusCode::kOk:  // not an error: a caller's bug
    case StatusCode::kIOError:
    case StatusCode::kCorruption:
      break;
  }
  return AzureError::kInternalError;
}

namespace {
std::string FullMessage(std::string_view message, std::string_view request_id) {
  std::string m(message);
  m += "\nRequestId:";
  m += request_id;
  m += "\nTime:";
  // Always seven fraction digits here.
  std::string t = storage::FormatDateTime(storage::NowTicks());
  t.pop_back();  // 'Z'
  size_t dot = t.find('.');
  if (dot == std::string::npos) {
    t += ".0000000";
  } else {
    t.append(7 - (t.size() - dot - 1), '0');
  }
  m += t;
  m += 'Z';
  return m;
}
}  // namespace

std::string JsonErrorBody(std::string_view code, std::string_view message,
                          std::string_view request_id) {
  std::string out = R"({"odata.error":{"code":)";
  AppendJsonString(&out, code);
  out += R"(,"message":{"lang":"en-US","value":)";
  AppendJsonString(&out, FullMessage(message, request_id));
  out += "}}}";
  return out;
}

std::string XmlErrorBody(std::string_view code, std::string_view message,
                         std::string_view request_id) {
  std::string out =
      "<?xml version=\"1.0\" encoding=\"utf-8\" standalone=\"yes\"?>\r\n"
      "<error xmlns=\"http://schemas.microsoft.com/ado/2007/08/dataservices/metadata\">\r\n"
      "  <code>";
  AppendXmlText(&out, code);
  out += "</code>\r\n  <message xml:lang=\"en-US\">";
  AppendXmlText(&out, FullMessage(message, request_id));
  out += "</message>\r\n</error>";
  return out;
}

}  // namespace cerulean::server
