// Status and Result<T>: the error vocabulary below HTTP.
// Thread-safety: value types; safe to copy across threads.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace cerulean::storage {

// What went wrong, independent of any wire format. The server maps these to
// Azure error codes (server/formats/azure_error.cc).
enum class StatusCode {
  kOk = 0,
  kNotFound,            // entity absent
  kTableNotFound,       // table absent
  kAlreadyExists,       // entity exists (insert)
  kTableAlreadyExists,  // table exists (create)
  kConditionFailed,     // If-Match ETag differs
  kInvalidArgument,     // caller error (e.g. bad continuation key)
  kIOError,             // SQLite or filesystem failure
  kCorruption,          // stored bytes do not decode
  kBusy,                // storage temporarily unusable
  kNotSupported,        // this backend does not offer the operation
  kTooManyProperties,   // a write leaves an entity over kMaxCustomProperties
  kOutcomeUnknown,      // a write that may or may not have taken effect
};

// The last StatusCode: a new code goes after it and this moves to it, so
// that tests can walk every code.
inline constexpr StatusCode kLastStatusCode = StatusCode::kOutcomeUnknown;

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status NotFound(std::string msg = {}) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status TableNotFound(std::string msg = {}) {
    return {StatusCode::kTableNotFound, std::move(msg)};
  }
  static Status AlreadyExists(std::string msg = {}) {
    return {StatusCode::kAlreadyExists, std::move(msg)};
  }
  static Status TableAlreadyExists(std::string msg = {}) {
    return {StatusCode::kTableAlreadyExists, std::move(msg)};
  }
  static Status ConditionFailed(std::string msg = {}) {
    return {StatusCode::kConditionFailed, std::move(msg)};
  }
  static Status InvalidArgument(std::string msg) {
    return {StatusCode::kInvalidArgument, std::move(msg)};
  }
  static Status IOError(std::string msg) { return {StatusCode::kIOError, std::move(msg)}; }
  static Status Corruption(std::string msg) { return {StatusCode::kCorruption, std::move(msg)}; }
  static Status Busy(std::string msg) { return {StatusCode::kBusy, std::move(msg)}; }
  static Status NotSupported(std::string msg) {
    return {StatusCode::kNotSupported, std::move(msg)};
  }
  static Status TooManyProperties(std::string msg = {}) {
    return {StatusCode::kTooManyProperties, std::move(msg)};
  }
  // The store lost sight of a write after sending it (a deadline passed, the
  // connection broke) and could not learn whether it took effect: unlike
  // kBusy, it may have.
  static Status OutcomeUnknown(std::string msg) {
    return {StatusCode::kOutcomeUnknown, std::move(msg)};
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  Status(StatusCode code, std::string msg) : code_(code), message_(std::move(msg)) {}
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Either a value or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  // REQUIRES: !status.ok() (an ok Result carries a value).
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    assert(!status_.ok());
  }
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace cerulean::storage
