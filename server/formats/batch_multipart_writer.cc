// The writing half of the $batch codec (batch_multipart.h): the 202 multipart
// response body, written part by part.
#include <string>

#include "server/formats/ascii.h"
#include "server/formats/batch_multipart.h"
#include "server/formats/guid.h"

namespace cerulean::server {

BatchResponseWriter::BatchResponseWriter(bool changeset, size_t reserve)
    : changeset_(changeset), batch_boundary_("batchresponse_" + NewGuid()) {
  out_.reserve(reserve);
  if (changeset_) {
    const std::string changeset_boundary = "changesetresponse_" + NewGuid();
    out_.append("--").append(batch_boundary_).append("\r\n");
    out_.append("Content-Type: multipart/mixed; boundary=")
        .append(changeset_boundary)
        .append("\r\n\r\n");
    part_delimiter_ = "--" + changeset_boundary + "\r\n";
  } else {
    part_delimiter_ = "--" + batch_boundary_ + "\r\n";
  }
}

void BatchResponseWriter::BeginPart(int status, std::optional<std::string_view> content_id) {
  EndPart();
  in_part_ = true;
  in_headers_ = true;
  out_.append(part_delimiter_);
  out_.append("Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n");
  if (status < 100 || status > 999) status = 500;
  char digits[3] = {static_cast<char>('0' + status / 100),
                    static_cast<char>('0' + status / 10 % 10),
                    static_cast<char>('0' + status % 10)};
  out_.append("HTTP/1.1 ").append(digits, 3).push_back(' ');
  out_.append(ReasonPhrase(status)).append("\r\n");
  if (content_id) AddHeader("Content-ID", *content_id);
}

void BatchResponseWriter::AddHeader(std::string_view name, std::string_view value) {
  // One check of the whole line (": " holds no line break).
  const size_t start = out_.size();
  out_.append(name).append(": ").append(value);
  if (HasLineBreak(std::string_view(out_).substr(start))) {
    for (size_t i = start; i < out_.size(); ++i) {
      if (out_[i] == '\r' || out_[i] == '\n') out_[i] = ' ';
    }
  }
  out_.append("\r\n");
}

void BatchResponseWriter::AddFixedHeaders(std::string_view lines) { out_.append(lines); }

std::string* BatchResponseWriter::Body() {
  if (in_headers_) out_.append("\r\n");
  in_headers_ = false;
  return &out_;
}

void BatchResponseWriter::EndPart() {
  if (!in_part_) return;
  Body();
  out_.append("\r\n");
  in_part_ = false;
}

std::string BatchResponseWriter::Finish(std::string* content_type) {
  EndPart();
  if (changeset_) {
    // The part delimiter without its line break, closed.
    out_.append(part_delimiter_, 0, part_delimiter_.size() - 2).append("--\r\n");
  }
  out_.append("--").append(batch_boundary_).append("--\r\n");
  *content_type = "multipart/mixed; boundary=" + batch_boundary_;
  return std::move(out_);
}

std::string SerializeBatchResponse(const std::vector<BatchSubResponse>& subs, bool changeset,
                                   std::string* content_type) {
  size_t estimate = 256;
  for (const BatchSubResponse& sub : subs) estimate += 256 + sub.body.size();
  BatchResponseWriter writer(changeset, estimate);
  for (const BatchSubResponse& sub : subs) {
    writer.BeginPart(sub.status, sub.content_id);
    for (const auto& [name, value] : sub.headers) writer.AddHeader(name, value);
    writer.Body()->append(sub.body);
  }
  return writer.Finish(content_type);
}

std::string_view ReasonPhrase(int status) {
  // RFC 2616 phrases, as the Table service writes them.
  switch (status) {
    case 100:
      return "Continue";
    case 101:
      return "Switching Protocols";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 203:
      return "Non-Authoritative Information";
    case 204:
      return "No Content";
    case 205:
      return "Reset Content";
    case 206:
      return "Partial Content";
    case 300:
      return "Multiple Choices";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 303:
      return "See Other";
    case 304:
      return "Not Modified";
    case 305:
      return "Use Proxy";
    case 307:
      return "Temporary Redirect";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 402:
      return "Payment Required";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 407:
      return "Proxy Authentication Required";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 411:
      return "Length Required";
    case 412:
      return "Precondition Failed";
    case 413:
      return "Request Entity Too Large";
    case 414:
      return "Request-URI Too Long";
    case 415:
      return "Unsupported Media Type";
    case 416:
      return "Requested Range Not Satisfiable";
    case 417:
      return "Expectation Failed";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

}  // namespace cerulean::server
