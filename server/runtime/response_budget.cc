#include "server/runtime/response_budget.h"

#include <boost/algorithm/string/predicate.hpp>

#include "server/protocol/error_response.h"

namespace cerulean::server {

size_t ResponseBudget::Take(const ResponseHold& hold, size_t bytes, bool whole) {
  std::lock_guard lock(mu_);
  const size_t used = in_use_.load();
  size_t room = capacity_ - std::min(used, capacity_);
  room = std::min(room, share_ - std::min(hold.held(), share_));
  auto client = hold.client().empty() ? clients_.end() : clients_.find(hold.client());
  if (!hold.client().empty()) {
    const size_t client_held = client == clients_.end() ? 0 : client->second;
    room = std::min(room, share_ - std::min(client_held, share_));
  }
  const size_t take = std::min(bytes, room);
  if (take == 0 || (whole && take < bytes)) {
    if (whole) refused_.fetch_add(1);
    return 0;
  }
  in_use_.store(used + take);
  if (!hold.client().empty()) {
    if (client == clients_.end()) {
      clients_.emplace(hold.client(), take);
    } else {
      client->second += take;
    }
  }
  return take;
}

void ResponseBudget::Force(const ResponseHold& hold, size_t bytes) {
  std::lock_guard lock(mu_);
  in_use_.store(in_use_.load() + bytes);
  if (!hold.client().empty()) clients_[hold.client()] += bytes;
}

void ResponseBudget::Release(const ResponseHold& hold, size_t bytes) {
  std::lock_guard lock(mu_);
  in_use_.store(in_use_.load() - bytes);
  if (hold.client().empty()) return;
  auto it = clients_.find(hold.client());
  if (it == clients_.end()) return;
  it->second -= std::min(bytes, it->second);
  if (it->second == 0) clients_.erase(it);
}

size_t ResponseBudget::client_held(const std::string& client) const {
  std::lock_guard lock(mu_);
  auto it = clients_.find(client);
  return it == clients_.end() ? 0 : it->second;
}

void ResponseHold::SetClient(std::string_view client) {
  if (client == client_) return;
  Clear();
  client_.assign(client);
}

bool ResponseHold::GrowTo(size_t bytes, size_t ahead) {
  if (bytes <= held_) return true;
  held_ += budget_->Take(*this, bytes - held_ + ahead, false);
  return bytes <= held_;
}

bool ResponseHold::ReserveForWrite(size_t bytes) {
  if (!SetTo(bytes)) {
    budget_->write_refused_.fetch_add(1);
    return false;
  }
  budget_->write_reserved_.fetch_add(1);
  for_write_ = true;
  return true;
}

bool ResponseHold::SetTo(size_t bytes) {
  if (bytes <= held_) {
    budget_->Release(*this, held_ - bytes);
    held_ = bytes;
    return true;
  }
  if (for_write_) {
    // The write has committed: its answer goes out whatever it costs.
    budget_->write_overdrawn_.fetch_add(1);
    budget_->Force(*this, bytes - held_);
    held_ = bytes;
    for_write_ = false;
    return true;
  }
  if (budget_->Take(*this, bytes - held_, true) > 0) {
    held_ = bytes;
    return true;
  }
  Clear();
  return false;
}

void ResponseHold::Clear() {
  if (held_ > 0) budget_->Release(*this, held_);
  held_ = 0;
  for_write_ = false;
}

std::string ResponseBudget::RenderMetrics() const {
  auto counter = [](std::string_view name, std::string_view help, std::uint64_t value) {
    return "# HELP " + std::string(name) + " " + std::string(help) + "\n# TYPE " +
           std::string(name) + " counter\n" + std::string(name) + " " + std::to_string(value) +
           "\n";
  };
  return "# HELP cerulean_response_body_bytes Bytes of response bodies held for writing or "
         "rendering.\n# TYPE cerulean_response_body_bytes gauge\ncerulean_response_body_bytes " +
         std::to_string(in_use()) +
         "\n# HELP cerulean_response_body_budget_bytes The most response bodies may hold at "
         "once.\n# TYPE cerulean_response_body_budget_bytes gauge\n"
         "cerulean_response_body_budget_bytes " +
         std::to_string(capacity_) +
         "\n# HELP cerulean_response_body_share_bytes The most one connection, or one client, "
         "may hold.\n# TYPE cerulean_response_body_share_bytes gauge\n"
         "cerulean_response_body_share_bytes " +
         std::to_string(share_) + "\n" +
         counter("cerulean_response_body_refused_total",
                 "Answers replaced by 503 ServerBusy because their body did not fit.",
                 refused_.load()) +
         counter("cerulean_response_write_reserved_total",
                 "Writes that reserved room for their answer before committing.",
                 write_reserved_.load()) +
         counter("cerulean_response_write_refused_total",
                 "Writes refused with 503 ServerBusy before committing: no room for their answer.",
                 write_refused_.load()) +
         counter("cerulean_response_write_overdrawn_total",
                 "Answers of committed writes longer than their reservation, sent all the same.",
                 write_overdrawn_.load());
}

HttpResponse ServerBusyInstead(const HttpResponse& res) {
  ErrorForm form;
  const std::string_view type = res["Content-Type"];
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
  for (const auto& field : res) {
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
    busy.set(name, std::move(value));
  }
  busy.body() = std::move(answer.body);
  busy.keep_alive(res.keep_alive());
  busy.prepare_payload();
  return busy;
}

}  // namespace cerulean::server
