#include "server/protocol/error_response.h"

#include "server/protocol/oauth.h"

namespace cerulean::server {

namespace {

bool IsPreference(std::string_view prefer) {
  return prefer == "return-content" || prefer == "return-no-content";
}

}  // namespace

ErrorAnswer RenderError(const ErrorReply& error, const ErrorForm& form) {
  const ErrorInfo& info = Describe(error.error);
  ErrorAnswer out;
  out.status = info.status;
  const bool request = form.scope == ErrorScope::kRequest;
  if (request) {
    out.headers.reserve(4);
    out.headers.emplace_back("x-ms-error-code", info.code);
    if (error.error == AzureError::kInvalidAuthenticationInfoToken) {
      out.headers.emplace_back("WWW-Authenticate", kBearerChallenge);
    }
    if (form.head) return out;
  } else {
    // The headers a batch sub-response starts with; the preference is echoed
    // before the version.
    out.headers.reserve(5);
    out.headers.emplace_back("X-Content-Type-Options", "nosniff");
    out.headers.emplace_back("Cache-Control", "no-cache");
    if (IsPreference(form.prefer)) out.headers.emplace_back("Preference-Applied", form.prefer);
    out.headers.emplace_back("DataServiceVersion",
                             form.scope == ErrorScope::kChangeSet ? "1.0;" : "3.0;");
  }
  std::string message;
  if (form.index) message = std::to_string(*form.index) + ":";
  message += error.Message();
  if (form.xml) {
    out.headers.emplace_back("Content-Type",
                             request ? "application/xml" : "application/xml;charset=utf-8");
    out.body = XmlErrorBody(info.code, message, form.request_id);
  } else {
    out.headers.emplace_back("Content-Type", JsonContentType(form.metadata));
    out.body = JsonErrorBody(info.code, message, form.request_id);
  }
  // A request echoes the preference after the body's type.
  if (request && IsPreference(form.prefer)) {
    out.headers.emplace_back("Preference-Applied", form.prefer);
  }
  return out;
}

}  // namespace cerulean::server
