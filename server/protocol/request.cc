#include "server/protocol/request.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "server/formats/ascii.h"
#include "server/formats/entity_atom.h"
#include "server/formats/url.h"
#include "server/protocol/error_response.h"

namespace cerulean::server {

void QueryParams::Reserve(size_t n, size_t bytes) {
  params_.reserve(n);
  reserved_bytes_ = bytes;
}

std::optional<std::string_view> QueryParams::Decode(std::string_view encoded) {
  if (FindEscapeOrPlus(encoded, 0, true) == encoded.size()) return encoded;
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

std::string_view Header(const HttpRequest& req, std::string_view name) { return req[name]; }

HttpResponse MakeResponse(const Request& req, http::status status) {
  HttpResponse res{status, req.http.version()};
  return res;
}

HttpResponse ErrorResponse(const Request& req, const ErrorReply& error) {
  ErrorForm form;
  form.xml = req.xml_errors;
  form.metadata = req.format;
  form.head = req.http.method() == http::verb::head;
  form.request_id = req.request_id;
  // Create Table and Insert Entity echo the preference on errors too.
  if (req.op == Operation::kCreateTable || req.op == Operation::kInsertEntity) {
    form.prefer = Header(req.http, "Prefer");
  }
  ErrorAnswer answer = RenderError(error, form);
  HttpResponse res{static_cast<http::status>(answer.status), req.http.version()};
  for (auto& [name, value] : answer.headers) {
    res.set(name, std::move(value));
  }
  res.body() = std::move(answer.body);
  return res;
}

HttpResponse JsonResponse(const Request& req, http::status status, std::string body) {
  HttpResponse res{status, req.http.version()};
  res.set("Content-Type", JsonContentType(req.format));
  res.body() = std::move(body);
  return res;
}

HttpResponse AtomResponse(const Request& req, http::status status, std::string body) {
  HttpResponse res{status, req.http.version()};
  res.set("Content-Type", kAtomContentType);
  res.body() = std::move(body);
  return res;
}

}  // namespace cerulean::server
