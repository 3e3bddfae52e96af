#include "server/protocol/content_negotiation.h"

#include "server/formats/ascii.h"

namespace cerulean::server {

std::optional<ErrorReply> NegotiateFormat(std::string_view format_param, std::string_view accept,
                                          std::string_view version, Metadata* out, bool* atom) {
  *out = Metadata::kMinimal;
  *atom = false;
  auto choose_atom = [&]() -> std::optional<ErrorReply> {
    if (version >= kFirstAtomlessVersion) return ErrorReply(AzureError::kAtomFormatNotSupported);
    *atom = true;
    return std::nullopt;
  };
  std::string_view value = format_param.empty() ? accept : format_param;
  // No Accept means Atom, the documented default (payload.md §1.1).
  if (value.empty()) return choose_atom();
  // The first recognized media range decides.
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    if (comma == std::string_view::npos) comma = value.size();
    std::string_view range = Trim(value.substr(start, comma - start));
    start = comma + 1;
    size_t semi = range.find(';');
    std::string_view type = Trim(range.substr(0, semi));
    std::string odata;
    while (semi != std::string_view::npos) {
      size_t next = range.find(';', semi + 1);
      std::string_view param =
          Trim(range.substr(semi + 1, next == std::string_view::npos ? next : next - semi - 1));
      size_t eq = param.find('=');
      if (eq != std::string_view::npos && IEquals(Trim(param.substr(0, eq)), "odata")) {
        odata = ToLower(Trim(param.substr(eq + 1)));
      }
      semi = next;
    }
    if (IEquals(type, "application/json") || IEquals(type, "json")) {
      if (odata == "verbose") return ErrorReply(AzureError::kJsonVerboseFormatNotSupported);
      if (odata.empty() || odata == "minimalmetadata")
        *out = Metadata::kMinimal;
      else if (odata == "nometadata")
        *out = Metadata::kNone;
      else if (odata == "fullmetadata")
        *out = Metadata::kFull;
      else
        continue;
      if (version < kFirstJsonVersion) return ErrorReply(AzureError::kJsonFormatNotSupported);
      return std::nullopt;
    }
    if (IEquals(type, "application/atom+xml") || IEquals(type, "application/xml") ||
        IEquals(type, "atom")) {
      return choose_atom();
    }
    // Any type: the service's default while it had Atom, JSON after.
    if (type == "*/*" || IEquals(type, "application/*")) {
      if (version < kFirstAtomlessVersion) *atom = true;
      return std::nullopt;
    }
  }
  return ErrorReply(AzureError::kMediaTypeNotSupported);
}

}  // namespace cerulean::server
