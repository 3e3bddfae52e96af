#include "storage/status.h"

namespace cerulean::storage {

std::string Status::ToString() const {
  const char* name = "OK";
  switch (code_) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kNotFound:
      name = "NotFound";
      break;
    case StatusCode::kTableNotFound:
      name = "TableNotFound";
      break;
    case StatusCode::kAlreadyExists:
      name = "AlreadyExists";
      break;
    case StatusCode::kTableAlreadyExists:
      name = "TableAlreadyExists";
      break;
    case StatusCode::kConditionFailed:
      name = "ConditionFailed";
      break;
    case StatusCode::kInvalidArgument:
      name = "InvalidArgument";
      break;
    case StatusCode::kIOError:
      name = "IOError";
      break;
    case StatusCode::kCorruption:
      name = "Corruption";
      break;
    case StatusCode::kBusy:
      name = "Busy";
      break;
    case StatusCode::kNotSupported:
      name = "NotSupported";
      break;
    case StatusCode::kTooManyProperties:
      name = "TooManyProperties";
      break;
    case StatusCode::kOutcomeUnknown:
      name = "OutcomeUnknown";
      break;
  }
  return message_.empty() ? std::string(name) : std::string(name) + ": " + message_;
}

}  // namespace cerulean::storage
