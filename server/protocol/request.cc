#include "server/protocol/request.h"

#include <algorithm>

#include "server/formats/entity_atom.h"
#include "server/formats/url.h"
#include "server/protocol/oauth.h"

namespace cerulean::server {

void QueryParams::Reserve(size_t n, size_t bytes) {
  params_.reserve(n);
  reserved_bytes_ = bytes;
}

std::optional<std::string_view> QueryParams::Decode(std::string_view encoded) {
  size_t plain = 0;
  while (plain < encoded.size() && encoded[plain] != '%' && encoded[plain] != '+') ++plain;
  if (plain == encoded.size()) return encoded;
  // Decoding never lengthens: the output fits in encoded.size() bytes.
  if (decoded_free_ < encoded.size()) {
    const size_t size = std::max(encoded.size(), decoded_.empty() ? reserved_bytes_ : 0);
    decoded_.push_back(std::make_unique_for_overwrite<char[]>(size));
    decoded_next_ = decoded_.back().get();
    decoded_free_ = size;
  }
  char* const out = decoded_next_;
  char* const o = PercentDecodeTo(out, encoded, true);
  if (o == nullptr) return std::nullopt;
  const size_t n = static_cast<size_t>(o - out);
  decoded_next_ += n;
  decoded_free_ -= n;
  return std::string_view(out, n);
}

bool QueryParams::AddEncoded(std::string_view encoded_key, std::string_view encoded_value) {
  auto key = Decode(encoded_key);
  if (!key) return false;
  auto value = Decode(encoded_value);
  if (!value) return false;
  params_.emplace_back(*key, *value);
  return true;
}

std::optional<std::string_view> QueryParams::Get(std::string_view name) const {
  for (const auto& [k, v] : params_) {
    if (k == name) return v;
  }
  return std::nullopt;
}

size_t QueryParams::Count(std::string_view name) const {
  size_t n = 0;
  for (const auto& [k, v] : params_) n += k == name;
  return n;
}

std::string_view Header(const HttpRequest& req, std::string_view name) {
  auto it = req.find(boost::beast::string_view(name.data(), name.size()));
  if (it == req.end()) return {};
  return std::string_view(it->value().data(), it->value().size());
}

HttpResponse MakeResponse(const Request& req, http::status status) {
  HttpResponse res{status, req.http.version()};
  return res;
}

HttpResponse ErrorResponse(const Request& req, const ErrorReply& error) {
  const ErrorInfo& info = Describe(error.error);
  HttpResponse res{static_cast<http::status>(info.status), req.http.version()};
  res.set("x-ms-error-code", info.code);
  if (error.error == AzureError::kInvalidAuthenticationInfoToken)
    res.set(http::field::www_authenticate, kBearerChallenge);
  if (req.http.method() == http::verb::head) return res;
  if (req.xml_errors) {
    res.set(http::field::content_type, "application/xml");
    res.body() = XmlErrorBody(info.code, error.Message(), req.request_id);
  } else {
    res.set(http::field::content_type, JsonContentType(req.format));
    res.body() = JsonErrorBody(info.code, error.Message(), req.request_id);
  }
  // Create Table and Insert Entity echo the preference on errors too.
  if (req.op == Operation::kCreateTable || req.op == Operation::kInsertEntity) {
    std::string_view prefer = Header(req.http, "Prefer");
    if (prefer == "return-content" || prefer == "return-no-content")
      res.set("Preference-Applied", prefer);
  }
  return res;
}

HttpResponse JsonResponse(const Request& req, http::status status, std::string body) {
  HttpResponse res{status, req.http.version()};
  res.set(http::field::content_type, JsonContentType(req.format));
  res.body() = std::move(body);
  return res;
}

HttpResponse AtomResponse(const Request& req, http::status status, std::string body) {
  HttpResponse res{status, req.http.version()};
  res.set(http::field::content_type, kAtomContentType);
  res.body() = std::move(body);
  return res;
}

}  // namespace cerulean::server
