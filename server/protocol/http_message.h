// HTTP/1.1 messages as every layer above the HTTP layer sees them: a
// request's method, target, version, fields and body, and a response's
// status, fields and body. The HTTP layer parses requests into these
// (http/request_parser.h) and writes responses from them
// (http/response_serializer.h); nothing here knows of sockets or Beast.
// Thread-safety: a message belongs to one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cerulean::server::http {

// The request methods the Table service and its clients use; any other is
// kUnknown, its name kept in method_string().
enum class verb { unknown, delete_, get, head, post, put, options, patch, merge };

// `name` as a verb (method names are case-sensitive, RFC 9110 §9.1).
verb StringToVerb(std::string_view name);
// The method name of `v`; empty for verb::unknown.
std::string_view VerbName(verb v);

// A status code; any code in 100..999 may be held, the names are the ones
// the server sends.
enum class status : unsigned {
  unknown = 0,
  continue_ = 100,
  ok = 200,
  created = 201,
  accepted = 202,
  no_content = 204,
  partial_content = 206,
  not_modified = 304,
  bad_request = 400,
  unauthorized = 401,
  forbidden = 403,
  not_found = 404,
  method_not_allowed = 405,
  not_acceptable = 406,
  conflict = 409,
  length_required = 411,
  precondition_failed = 412,
  payload_too_large = 413,
  uri_too_long = 414,
  unsupported_media_type = 415,
  range_not_satisfiable = 416,
  request_header_fields_too_large = 431,
  internal_server_error = 500,
  not_implemented = 501,
  service_unavailable = 503,
  gateway_timeout = 504,
  http_version_not_supported = 505,
};

// A message's header fields in the order they were added; names compare
// case-insensitively. The bytes of every name and value live in chunks the
// message owns and that never move, so a view returned by operator[] or an
// iterator stays valid as long as the message does (moves included), also
// after the field is set again or erased (an iterator does not). A look-up
// scans the first fields; past kScanned of them it searches an index sorted
// by name, so that a head of thousands of fields costs each look-up a
// logarithm, not their number.
class Fields {
 public:
  class Field {
   public:
    std::string_view name_string() const { return name_; }
    std::string_view value() const { return value_; }

   private:
    friend class Fields;
    std::string_view name_;
    std::string_view value_;
  };
  using const_iterator = std::vector<Field>::const_iterator;

  Fields() = default;
  Fields(const Fields& other);
  Fields& operator=(const Fields& other);
  // A moved-from message is empty and keeps no view of the other's chunks.
  Fields(Fields&& other) noexcept;
  Fields& operator=(Fields&& other) noexcept;

  // The value of the first field named `name`, or an empty view.
  std::string_view operator[](std::string_view name) const;
  // The first field named `name`, or end().
  const_iterator find(std::string_view name) const;
  size_t count(std::string_view name) const;
  // Adds a field after the others, even if one of that name exists.
  void insert(std::string_view name, std::string_view value);
  // Replaces every field named `name` with one field (where the first was,
  // else last).
  void set(std::string_view name, std::string_view value);
  // Removes every field named `name`; returns how many there were.
  size_t erase(std::string_view name);

  const_iterator begin() const { return fields_.begin(); }
  const_iterator end() const { return fields_.end(); }
  size_t fields() const { return fields_.size(); }

  static constexpr size_t kScanned = 32;

 protected:
  // The keep-alive of a message of `version` (10 or 11) as its Connection
  // field says (RFC 9112 §9.3), and the field that makes it `keep_alive`.
  bool KeepAlive(unsigned version) const;
  void SetKeepAlive(unsigned version, bool keep_alive);

 private:
  // `s` copied into the chunks.
  std::string_view Keep(std::string_view s);
  // The positions in fields_ of the fields named `name`, first to last,
  // from index_ (built if stale). REQUIRES: fields_.size() > kScanned.
  std::span<const uint32_t> Indexed(std::string_view name) const;

  std::vector<Field> fields_;
  // Positions of fields_ ordered by case-folded name, then position; valid
  // while index_valid_ (a change to the fields makes it stale).
  mutable std::vector<uint32_t> index_;
  mutable bool index_valid_ = false;
  // The first chunk, which holds a typical message's bytes (one allocation),
  // and any after it.
  std::unique_ptr<char[]> first_chunk_;
  std::vector<std::unique_ptr<char[]>> chunks_;
  char* next_ = nullptr;  // the free bytes of the last chunk
  size_t free_ = 0;
};

class Request : public Fields {
 public:
  Request() = default;
  Request(verb method, std::string_view target, unsigned version);

  verb method() const { return method_; }
  // Sets the method and its name.
  void method(verb v);
  std::string_view method_string() const { return method_string_; }
  // Sets the method by name: a verb above if it names one, else unknown.
  void method_string(std::string_view name);
  std::string_view target() const { return target_; }
  void target(std::string_view t) { target_.assign(t); }
  // 10 for HTTP/1.0, 11 for HTTP/1.1.
  unsigned version() const { return version_; }
  void version(unsigned v) { version_ = v; }
  bool keep_alive() const { return KeepAlive(version_); }
  void keep_alive(bool k) { SetKeepAlive(version_, k); }
  std::string& body() { return body_; }
  const std::string& body() const { return body_; }
  // Sets Content-Length to the body's size, or removes it for an empty
  // body of a method that sends none (every one but OPTIONS, PUT, POST).
  void prepare_payload();

 private:
  verb method_ = verb::unknown;
  std::string method_string_;
  std::string target_;
  unsigned version_ = 11;
  std::string body_;
};

class Response : public Fields {
 public:
  Response() = default;
  Response(status s, unsigned version) : status_(static_cast<unsigned>(s)), version_(version) {}

  status result() const { return static_cast<status>(status_); }
  unsigned result_int() const { return status_; }
  void result(status s) { status_ = static_cast<unsigned>(s); }
  void result(unsigned code) { status_ = code; }
  unsigned version() const { return version_; }
  void version(unsigned v) { version_ = v; }
  bool keep_alive() const { return KeepAlive(version_); }
  void keep_alive(bool k) { SetKeepAlive(version_, k); }
  // True iff the connection closes after this response.
  bool need_eof() const { return !keep_alive(); }
  std::string& body() { return body_; }
  const std::string& body() const { return body_; }
  // Sets Content-Length to the body's size; removes it for a status that
  // has no body (1xx, 204, 304), whose body must then be empty.
  void prepare_payload();

 private:
  unsigned status_ = 200;
  unsigned version_ = 11;
  std::string body_;
};

}  // namespace cerulean::server::http

namespace cerulean::server {
using HttpRequest = http::Request;
using HttpResponse = http::Response;
}  // namespace cerulean::server
