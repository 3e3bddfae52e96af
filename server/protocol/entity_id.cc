#include "server/protocol/entity_id.h"

#include "server/formats/url.h"
#include "storage/edm_text.h"

namespace cerulean::server {

namespace {

// The date of an ETag as it appears in one: the DateTime with ':' written
// %3A ("2024-01-02T03%3A04%3A05.1234567Z").
void AppendETagDate(std::string* out, int64_t ticks) { storage::AppendDateTime(out, ticks, "%3A"); }

}  // namespace

void AppendETag(std::string* out, int64_t ticks) {
  // W/"datetime'2024-01-02T03%3A04%3A05.1234567Z'"
  out->append("W/\"datetime'");
  AppendETagDate(out, ticks);
  out->append("'\"");
}

std::string ETagFor(int64_t ticks) {
  std::string out;
  out.reserve(48);
  AppendETag(&out, ticks);
  return out;
}

std::optional<int64_t> ParseETag(std::string_view etag) {
  static constexpr std::string_view kPrefix = "/\"datetime'";  // after the W
  static constexpr std::string_view kSuffix = "'\"";
  if (etag.empty() || (etag[0] != 'W' && etag[0] != 'w')) return std::nullopt;
  etag.remove_prefix(1);
  if (!etag.starts_with(kPrefix) || !etag.ends_with(kSuffix) ||
      etag.size() < kPrefix.size() + kSuffix.size()) {
    return std::nullopt;
  }
  auto inner =
      PercentDecode(etag.substr(kPrefix.size(), etag.size() - kPrefix.size() - kSuffix.size()));
  if (!inner) return std::nullopt;
  auto ticks = storage::ParseDateTime(*inner);
  if (!ticks || std::string_view(ETagFor(*ticks)).substr(1) != etag) return std::nullopt;
  return ticks;
}

void AppendEntityPath(std::string* out, std::string_view table, std::string_view pk,
                      std::string_view rk) {
  auto quoted = [out](std::string_view v) {
    out->push_back('\'');
    for (size_t quote; (quote = v.find('\'')) != std::string_view::npos;) {
      out->append(v.substr(0, quote + 1)).push_back('\'');
      v.remove_prefix(quote + 1);
    }
    out->append(v).push_back('\'');
  };
  out->append(table).append("(PartitionKey=");
  quoted(pk);
  out->append(",RowKey=");
  quoted(rk);
  out->push_back(')');
}

std::string EntityPath(std::string_view table, std::string_view pk, std::string_view rk) {
  std::string out;
  out.reserve(table.size() + pk.size() + rk.size() + 32);
  AppendEntityPath(&out, table, pk, rk);
  return out;
}

}  // namespace cerulean::server
