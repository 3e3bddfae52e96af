// libFuzzer entry for request authentication: Shared Key, Shared Key Lite,
// account and service SAS, and the URL and header handling before them,
// through the router's real entry (ServeRequest, then ServeBody if it asks
// for the body) over an in-memory store, without a blocking pool: every
// request is answered on the calling thread.
// Input: the method on the first line, the request target on the second,
// then header lines "Name: value" up to an empty line, then the body.
// Besides "no crash, no hang, no sanitizer report" it checks that every
// error answer carries x-ms-error-code. Seeds: server/fuzz_seeds/auth/;
// build and run: scripts/fuzz.sh (README, "Fuzzing").
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "server/http/router.h"
#include "server/http/scheduler.h"
#include "storage/sqlite/sqlite_store.h"

namespace {

using cerulean::server::HttpRequest;
using cerulean::server::HttpResponse;

// A caller's side of one request: the body joins the head when the router
// asks for it; the answer must come at once, never later.
class FuzzExchange final : public cerulean::server::Exchange {
 public:
  FuzzExchange(HttpRequest& http, const cerulean::server::Arrival& arrival, std::string body)
      : Exchange(http, arrival), body_(std::move(body)) {}
  void NeedBody(size_t) override;
  void Answer(HttpResponse res) override { response.emplace(std::move(res)); }
  cerulean::server::Continuation AnswerLater() override { std::abort(); }

  std::optional<HttpResponse> response;

 private:
  std::string body_;
};

// The next line of *in (without its LF), consumed.
std::string_view NextLine(std::string_view* in) {
  const size_t lf = in->find('\n');
  std::string_view line = in->substr(0, lf);
  in->remove_prefix(lf == std::string_view::npos ? in->size() : lf + 1);
  if (line.ends_with('\r')) line.remove_suffix(1);
  return line;
}

const cerulean::server::ServerContext& Context() {
  static const auto* ctx = [] {
    cerulean::storage::SqliteStoreOptions options;
    options.in_memory = true;
    options.background_reaping = false;
    auto store = cerulean::storage::SqliteStore::Open(options);
    if (!store.ok()) std::abort();
    auto* c = new cerulean::server::ServerContext;
    c->store = std::move(store).value().release();
    if (!c->accounts.AddDefault()) std::abort();
    // Loose: no clock-skew check, so that seeds signed once stay valid.
    c->options.loose = true;
    // A table with stored access policies, for SAS with `si`.
    if (!c->store->CreateTable("devstoreaccount1", "acltable").ok()) std::abort();
    static_cast<void>(c->store->SetTableAcl(
        "devstoreaccount1", "acltable",
        "<SignedIdentifiers><SignedIdentifier><Id>p1</Id><AccessPolicy><Permission>r"
        "</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>"));
    return c;
  }();
  return *ctx;
}

void FuzzExchange::NeedBody(size_t) {
  http().body() = std::move(body_);
  cerulean::server::ServeBody(Context(), *this);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::string_view method = NextLine(&in);
  const std::string_view target = NextLine(&in);
  const auto verb = cerulean::server::http::StringToVerb(method);
  if (verb == cerulean::server::http::verb::unknown) return 0;
  HttpRequest http;
  for (char c : target) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return 0;  // not a request-target
  }
  http.method(verb);
  http.target(target);
  http.version(11);
  while (!in.empty()) {
    const std::string_view line = NextLine(&in);
    if (line.empty()) break;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return 0;
    std::string_view value = line.substr(colon + 1);
    while (value.starts_with(' ')) value.remove_prefix(1);
    // What the HTTP layer's parser would refuse never reaches the router.
    for (char c : line) {
      if (static_cast<unsigned char>(c) < 0x20 && c != '\t') return 0;
    }
    http.insert(line.substr(0, colon), value);
  }
  http.body().assign(in);
  http.prepare_payload();
  std::string body;
  body.swap(http.body());
  static const std::string kPeer = "127.0.0.1";
  // Without a pool nothing is answered later.
  const cerulean::server::Arrival arrival{kPeer, 1, !body.empty()};
  FuzzExchange exchange(http, arrival, std::move(body));
  cerulean::server::ServeRequest(Context(), exchange);
  if (!exchange.response) std::abort();
  const auto& res = *exchange.response;
  if (res.result_int() >= 400 && res.find("x-ms-error-code") == res.end()) std::abort();
  return 0;
}
