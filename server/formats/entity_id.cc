#include "server/formats/entity_id.h"

#include <array>

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

namespace {

// The bytes that stand for themselves in a key of an entity path: the
// characters a URI leaves unescaped in data (RFC 2396's "unreserved":
// letters, digits and -_.!~*'()), the quote aside (doubled). Every other
// byte is percent-encoded, as Azure writes keys in Location, DataServiceId,
// odata.id and editLink: its response for the keys A'aaa_bbbb2" and
// "A'aaa_bbbb2 reads (PartitionKey='A''aaa_bbbb2%22',RowKey='%22A''aaa_bbbb2'),
// and the ETag's datetime literal has its ':' written %3A by the same rule.
constexpr std::array<bool, 256> kPlainInKey = [] {
  std::array<bool, 256> plain{};
  for (int c = 0; c < 256; ++c) {
    plain[static_cast<size_t>(c)] =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
        std::string_view("-_.!~*()").find(static_cast<char>(c)) != std::string_view::npos;
  }
  return plain;
}();

// Appends 'key' to *out, written as above.
void AppendQuotedKey(std::string* out, std::string_view key) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  out->push_back('\'');
  size_t i = 0;
  while (i < key.size()) {
    size_t plain = i;
    while (plain < key.size() && kPlainInKey[static_cast<unsigned char>(key[plain])]) ++plain;
    out->append(key.data() + i, plain - i);
    if (plain == key.size()) break;
    const auto c = static_cast<unsigned char>(key[plain]);
    if (c == '\'') {
      out->append("''");
    } else {
      const char escaped[] = {'%', kHex[c >> 4], kHex[c & 15]};
      out->append(escaped, 3);
    }
    i = plain + 1;
  }
  out->push_back('\'');
}

}  // namespace

void AppendEntityPath(std::string* out, std::string_view table, std::string_view pk,
                      std::string_view rk) {
  out->append(table).append("(PartitionKey=");
  AppendQuotedKey(out, pk);
  out->append(",RowKey=");
  AppendQuotedKey(out, rk);
  out->push_back(')');
}

std::string EntityPath(std::string_view table, std::string_view pk, std::string_view rk) {
  std::string out;
  out.reserve(table.size() + pk.size() + rk.size() + 32);
  AppendEntityPath(&out, table, pk, rk);
  return out;
}

}  // namespace cerulean::server
