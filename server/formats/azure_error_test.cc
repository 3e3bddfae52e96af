// The error path: every storage StatusCode to its Azure status and code
// (FromStatus), and the wire form RenderError gives an error in each scope
// and format.
#include "server/formats/azure_error.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "server/protocol/error_response.h"

namespace cerulean::server {
namespace {

using storage::Status;
using storage::StatusCode;

struct Mapping {
  StatusCode code;
  Addressed addressed;
  int status;
  std::string_view azure_code;
  std::string_view message;
};

// A Status of `code` carrying message "detail".
Status Make(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return Status::Ok();
    case StatusCode::kNotFound:
      return Status::NotFound("detail");
    case StatusCode::kTableNotFound:
      return Status::TableNotFound("detail");
    case StatusCode::kAlreadyExists:
      return Status::AlreadyExists("detail");
    case StatusCode::kTableAlreadyExists:
      return Status::TableAlreadyExists("detail");
    case StatusCode::kConditionFailed:
      return Status::ConditionFailed("detail");
    case StatusCode::kInvalidArgument:
      return Status::InvalidArgument("detail");
    case StatusCode::kIOError:
      return Status::IOError("detail");
    case StatusCode::kCorruption:
      return Status::Corruption("detail");
    case StatusCode::kBusy:
      return Status::Busy("detail");
    case StatusCode::kNotSupported:
      return Status::NotSupported("detail");
    case StatusCode::kTooManyProperties:
      return Status::TooManyProperties("detail");
    case StatusCode::kOutcomeUnknown:
      return Status::OutcomeUnknown("detail");
  }
  return Status::Ok();
}

// The message of a storage Status never reaches the client, except where
// Azure's own says nothing more (kNotSupported).
const std::vector<Mapping> kMappings = {
    {StatusCode::kOk, Addressed::kData, 500, "InternalError",
     "Server encountered an internal error. Please try again after some time."},
    {StatusCode::kNotFound, Addressed::kData, 404, "ResourceNotFound",
     "The specified resource does not exist."},
    {StatusCode::kTableNotFound, Addressed::kData, 404, "TableNotFound",
     "The table specified does not exist."},
    {StatusCode::kAlreadyExists, Addressed::kData, 409, "EntityAlreadyExists",
     "The specified entity already exists."},
    {StatusCode::kTableAlreadyExists, Addressed::kData, 409, "TableAlreadyExists",
     "The table specified already exists."},
    {StatusCode::kConditionFailed, Addressed::kData, 412, "UpdateConditionNotSatisfied",
     "The update condition specified in the request was not satisfied."},
    {StatusCode::kInvalidArgument, Addressed::kData, 400, "InvalidInput",
     "One of the request inputs is not valid."},
    {StatusCode::kIOError, Addressed::kData, 500, "InternalError",
     "Server encountered an internal error. Please try again after some time."},
    {StatusCode::kCorruption, Addressed::kData, 500, "InternalError",
     "Server encountered an internal error. Please try again after some time."},
    {StatusCode::kBusy, Addressed::kData, 503, "ServerBusy", "The server is busy."},
    {StatusCode::kOutcomeUnknown, Addressed::kData, 500, "OperationTimedOut",
     "The operation could not be completed within the permitted time."},
    {StatusCode::kNotSupported, Addressed::kData, 501, "NotImplemented", "detail"},
    {StatusCode::kTooManyProperties, Addressed::kData, 400, "TooManyProperties",
     "The entity contains more properties than allowed. Each entity can include up to 252 "
     "properties to store data. Each entity also has 3 system properties."},
    // A table addressed as an entry of /Tables.
    {StatusCode::kTableNotFound, Addressed::kTableEntry, 404, "ResourceNotFound",
     "The specified resource does not exist."},
    {StatusCode::kNotFound, Addressed::kTableEntry, 404, "ResourceNotFound",
     "The specified resource does not exist."},
    {StatusCode::kBusy, Addressed::kTableEntry, 503, "ServerBusy", "The server is busy."},
    // A snapshot.
    {StatusCode::kNotFound, Addressed::kSnapshot, 404, "ResourceNotFound",
     "The specified snapshot does not exist."},
    {StatusCode::kNotSupported, Addressed::kSnapshot, 501, "NotImplemented", "detail"},
};

TEST_CASE("FromStatus: every StatusCode maps to its Azure status and code") {
  std::vector<bool> covered(static_cast<size_t>(storage::kLastStatusCode) + 1);
  for (const Mapping& m : kMappings) {
    CAPTURE(Make(m.code).ToString());
    CAPTURE(static_cast<int>(m.addressed));
    ErrorReply reply = FromStatus(Make(m.code), m.addressed);
    const ErrorInfo& info = Describe(reply.error);
    CHECK(info.status == m.status);
    CHECK(info.code == m.azure_code);
    CHECK(reply.Message() == m.message);
    if (m.addressed == Addressed::kData) covered[static_cast<size_t>(m.code)] = true;
  }
  for (size_t c = 0; c < covered.size(); ++c) {
    CAPTURE(c);
    CHECK(covered[c]);
  }
}

TEST_CASE("FromStatus: the code decides, never the message") {
  for (const char* message : {"TooManyProperties", "InvalidKey", "NotFound", ""}) {
    CAPTURE(message);
    CHECK(FromStatus(Status::InvalidArgument(message)).error == AzureError::kInvalidInput);
    CHECK(FromStatus(Status::TooManyProperties(message)).error == AzureError::kTooManyProperties);
  }
}

// Headers as "Name: value" lines, for comparison.
std::string Lines(const ErrorAnswer& a) {
  std::string out;
  for (const auto& [name, value] : a.headers) out += std::string(name) + ": " + value + "\n";
  return out;
}

// The body's message text up to the request id.
std::string MessageOf(const ErrorAnswer& a) {
  size_t end = a.body.find("RequestId:");
  REQUIRE(end != std::string::npos);
  const std::string_view open = a.body.starts_with("{") ? R"("value":")" : "en-US\">";
  size_t start = a.body.find(open);
  REQUIRE(start != std::string::npos);
  start += open.size();
  return a.body.substr(start, end - start);
}

TEST_CASE("RenderError: a request's error, JSON or XML, with or without a body") {
  const ErrorReply error(AzureError::kEntityAlreadyExists);
  ErrorForm form;
  form.request_id = "rid";
  ErrorAnswer json = RenderError(error, form);
  CHECK(json.status == 409);
  CHECK(Lines(json) ==
        "x-ms-error-code: EntityAlreadyExists\n"
        "Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\n");
  CHECK(json.body.starts_with(R"({"odata.error":{"code":"EntityAlreadyExists","message":)"
                              R"({"lang":"en-US","value":"The specified entity already exists.)"
                              R"(\nRequestId:rid\nTime:)"));

  form.xml = true;
  form.prefer = "return-no-content";
  ErrorAnswer xml = RenderError(error, form);
  CHECK(Lines(xml) ==
        "x-ms-error-code: EntityAlreadyExists\n"
        "Content-Type: application/xml\n"
        "Preference-Applied: return-no-content\n");
  CHECK(xml.body.starts_with(
      "<?xml version=\"1.0\" encoding=\"utf-8\" standalone=\"yes\"?>\r\n"
      "<error xmlns=\"http://schemas.microsoft.com/ado/2007/08/dataservices/metadata\">\r\n"
      "  <code>EntityAlreadyExists</code>\r\n"
      "  <message xml:lang=\"en-US\">The specified entity already exists.\nRequestId:rid\n"));

  form.head = true;
  ErrorAnswer head = RenderError(error, form);
  CHECK(Lines(head) == "x-ms-error-code: EntityAlreadyExists\n");
  CHECK(head.body.empty());

  form = ErrorForm{};
  form.prefer = "something-else";
  CHECK(Lines(RenderError(ErrorReply(AzureError::kInvalidAuthenticationInfoToken), form))
            .starts_with("x-ms-error-code: InvalidAuthenticationInfo\n"
                         "WWW-Authenticate: Bearer authorization_uri="));
  CHECK(Lines(RenderError(error, form)).find("Preference-Applied") == std::string::npos);
}

TEST_CASE("RenderError: a $batch sub-response carries its index and no x-ms-error-code") {
  ErrorForm form;
  form.scope = ErrorScope::kOperation;
  form.metadata = Metadata::kNone;
  form.prefer = "return-content";
  form.index = 3;
  form.request_id = "rid";
  ErrorAnswer op = RenderError(ErrorReply(AzureError::kInvalidInput, "bad"), form);
  CHECK(op.status == 400);
  CHECK(Lines(op) ==
        "X-Content-Type-Options: nosniff\n"
        "Cache-Control: no-cache\n"
        "Preference-Applied: return-content\n"
        "DataServiceVersion: 3.0;\n"
        "Content-Type: application/json;odata=nometadata;streaming=true;charset=utf-8\n");
  CHECK(MessageOf(op) == "3:bad\\n");

  form.xml = true;
  form.index.reset();
  ErrorAnswer xml = RenderError(ErrorReply(AzureError::kResourceNotFound), form);
  CHECK(Lines(xml).ends_with("Content-Type: application/xml;charset=utf-8\n"));
  CHECK(MessageOf(xml) == "The specified resource does not exist.\n");

  form = ErrorForm{};
  form.scope = ErrorScope::kChangeSet;
  form.xml = true;
  CHECK(Lines(RenderError(ErrorReply(AzureError::kInvalidInput), form)) ==
        "X-Content-Type-Options: nosniff\n"
        "Cache-Control: no-cache\n"
        "DataServiceVersion: 1.0;\n"
        "Content-Type: application/xml;charset=utf-8\n");
}

}  // namespace
}  // namespace cerulean::server
