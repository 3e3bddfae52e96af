#include "server/devtools/logger.h"

#include "server/formats/ascii.h"
#include "server/formats/escape.h"
#include "server/protocol/routes.h"
#include "storage/edm_text.h"

namespace cerulean::server {

bool Logger::Open(bool access_log, bool json, const std::string& debug_path) {
  access_ = access_log;
  json_ = json;
  if (!debug_path.empty()) {
    debug_ = std::fopen(debug_path.c_str(), "a");
    if (debug_ == nullptr) return false;
  }
  return true;
}

Logger::~Logger() {
  if (debug_ != nullptr) std::fclose(debug_);
}

void Logger::Access(const Request& req, const HttpResponse& res, double ms) {
  if (!access_ && debug_ == nullptr) return;
  std::string time = storage::FormatDateTime(storage::NowTicks());
  std::string_view op = req.account.empty() ? std::string_view("Admin") : OperationName(req.op);
  std::string line;
  if (json_) {
    line = "{\"time\":";
    AppendJsonString(&line, time);
    line += ",\"requestId\":";
    AppendJsonString(&line, req.request_id);
    line += ",\"account\":";
    AppendJsonString(&line, req.account);
    line += ",\"operation\":";
    AppendJsonString(&line, op);
    line += ",\"method\":";
    AppendJsonString(
        &line, std::string_view(req.http.method_string().data(), req.http.method_string().size()));
    line += ",\"status\":" + std::to_string(res.result_int());
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", ms);
    line += ",\"latencyMs\":" + std::string(buf);
    if (!req.fault.empty()) {
      line += ",\"fault\":";
      AppendJsonString(&line, req.fault);
    }
    line += "}\n";
  } else {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3fms", ms);
    line = time + " " + req.request_id + " " + (req.account.empty() ? "-" : req.account) + " " +
           std::string(op) + " " + std::string(req.http.method_string()) + " " +
           std::to_string(res.result_int()) + " " + buf +
           (req.fault.empty() ? "" : " fault=" + std::string(req.fault)) + "\n";
  }
  std::lock_guard lock(mu_);
  if (access_) {
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fflush(stdout);
  }
  if (debug_ != nullptr) {
    std::string detail = "--- " + req.request_id + " request\n" +
                         std::string(req.http.method_string()) + " " +
                         std::string(req.http.target()) + "\n";
    for (const auto& f : req.http) {
      std::string_view name(f.name_string().data(), f.name_string().size());
      if (IEquals(name, "Authorization")) {
        detail += std::string(name) + ": <redacted>\n";
        continue;
      }
      detail += std::string(name) + ": " + std::string(f.value()) + "\n";
    }
    detail += "--- " + req.request_id + " response " + std::to_string(res.result_int()) + "\n";
    for (const auto& f : res)
      detail += std::string(f.name_string()) + ": " + std::string(f.value()) + "\n";
    std::fwrite(detail.data(), 1, detail.size(), debug_);
    std::fwrite(line.data(), 1, line.size(), debug_);
    std::fflush(debug_);
  }
}

void Logger::Debug(const Request& req, std::string_view what) {
  if (debug_ == nullptr) return;
  std::lock_guard lock(mu_);
  std::string line = "--- " + req.request_id + " " + std::string(what) + "\n";
  std::fwrite(line.data(), 1, line.size(), debug_);
  std::fflush(debug_);
}

}  // namespace cerulean::server
