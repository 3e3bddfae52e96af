#include "server/protocol/response_budget.h"

#include <boost/algorithm/string/predicate.hpp>

#include "server/protocol/error_response.h"

namespace cerulean::server {

bool ResponseBudget::TryTake(size_t bytes) {
  size_t used = in_use_.load();
  do {
    if (bytes > capacity_ - std::min(used, capacity_)) {
      refused_.fetch_add(1);
      return false;
    }
  } while (!in_use_.compare_exchange_weak(used, used + bytes));
  return true;
}

size_t ResponseBudget::TakeUpTo(size_t bytes) {
  size_t used = in_use_.load();
  size_t take = 0;
  do {
    const size_t free = capacity_ - std::min(used, capacity_);
    take = std::min(bytes, free);
    if (take == 0) return 0;
  } while (!in_use_.compare_exchange_weak(used, used + take));
  return take;
}

void ResponseBudget::Release(size_t bytes) { in_use_.fetch_sub(bytes); }

bool ResponseHold::GrowTo(size_t bytes, size_t ahead) {
  if (bytes <= held_) return true;
  held_ += budget_->TakeUpTo(bytes - held_ + ahead);
  return bytes <= held_;
}

bool ResponseHold::SetTo(size_t bytes) {
  if (bytes <= held_) {
    budget_->Release(held_ - bytes);
    held_ = bytes;
    return true;
  }
  if (budget_->TryTake(bytes - held_)) {
    held_ = bytes;
    return true;
  }
  Clear();
  return false;
}

void ResponseHold::Clear() {
  if (held_ > 0) budget_->Release(held_);
  held_ = 0;
}

std::string ResponseBudget::RenderMetrics() const {
  return "# HELP cerulean_response_body_bytes Bytes of response bodies held for writing or "
         "rendering.\n# TYPE cerulean_response_body_bytes gauge\ncerulean_response_body_bytes " +
         std::to_string(in_use()) +
         "\n# HELP cerulean_response_body_budget_bytes The most response bodies may hold at "
         "once.\n# TYPE cerulean_response_body_budget_bytes gauge\n"
         "cerulean_response_body_budget_bytes " +
         std::to_string(capacity_) +
         "\n# HELP cerulean_response_body_refused_total Answers replaced by 503 ServerBusy "
         "because their body did not fit.\n# TYPE cerulean_response_body_refused_total counter\n"
         "cerulean_response_body_refused_total " +
         std::to_string(refused_.load()) + "\n";
}

HttpResponse ServerBusyInstead(const HttpResponse& res) {
  namespace http = boost::beast::http;
  ErrorForm form;
  const std::string_view type = res[http::field::content_type];
  form.xml = type.find("json") == std::string_view::npos;
  if (type.find("odata=nometadata") != std::string_view::npos) {
    form.metadata = Metadata::kNone;
  } else if (type.find("odata=fullmetadata") != std::string_view::npos) {
    form.metadata = Metadata::kFull;
  }
  const std::string request_id(res["x-ms-request-id"]);
  form.request_id = request_id;
  ErrorAnswer answer = RenderError(ErrorReply(AzureError::kServerBusy), form);
  HttpResponse busy{static_cast<http::status>(answer.status), res.version()};
  for (const auto& field : res.base()) {
    const std::string_view name = field.name_string();
    // What described the refused body goes with it.
    if (boost::iequals(name, "Content-Type") || boost::iequals(name, "Content-Length") ||
        boost::iequals(name, "ETag") || boost::iequals(name, "Location") ||
        boost::iequals(name, "DataServiceId") || boost::iequals(name, "Preference-Applied") ||
        boost::istarts_with(name, "x-ms-continuation-") ||
        boost::istarts_with(name, "x-cerulean-")) {
      continue;
    }
    busy.insert(field.name_string(), field.value());
  }
  for (auto& [name, value] : answer.headers) {
    busy.set(boost::beast::string_view(name.data(), name.size()), std::move(value));
  }
  busy.body() = std::move(answer.body);
  busy.keep_alive(res.keep_alive());
  busy.prepare_payload();
  return busy;
}

}  // namespace cerulean::server
