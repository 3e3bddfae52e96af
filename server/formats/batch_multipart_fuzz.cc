// libFuzzer entry for the `$batch` multipart codec. The input's first line is
// the outer Content-Type value, the rest the body; whatever parses is
// serialized back as sub-responses. Seeds (server/fuzz_seeds/batch_multipart/):
// bodies of spec/batch.md §2 prefixed with "multipart/mixed; boundary=<its
// boundary>\n". Build and run: scripts/fuzz.sh (README, "Fuzzing").
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/formats/batch_multipart.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using cerulean::server::BatchSubResponse;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t lf = input.find('\n');
  const std::string_view content_type = input.substr(0, lf);
  const std::string_view body =
      lf == std::string_view::npos ? std::string_view() : input.substr(lf + 1);
  auto batch = cerulean::server::ParseBatch(content_type, body);
  if (!batch.ok()) {
    if (batch.status().code() != cerulean::storage::StatusCode::kInvalidArgument) std::abort();
    return 0;
  }
  if (!batch->changeset && batch->parts.size() != 1) std::abort();
  std::vector<BatchSubResponse> subs;
  for (const cerulean::server::BatchPart& part : batch->parts) {
    if (part.method.empty() || part.url.empty()) std::abort();
    BatchSubResponse sub;
    sub.status = static_cast<int>(part.body.size() % 1000);
    sub.content_id = part.content_id;
    for (const auto& [name, value] : part.headers) sub.headers.emplace_back(name, value);
    sub.body = part.body;
    subs.push_back(std::move(sub));
  }
  std::string response_type;
  const std::string response =
      cerulean::server::SerializeBatchResponse(subs, batch->changeset, &response_type);
  if (response.rfind("--batchresponse_", 0) != 0) std::abort();
  return 0;
}
