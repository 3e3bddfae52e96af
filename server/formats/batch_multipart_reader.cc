// The reading half of the $batch codec (batch_multipart.h): a multipart/mixed
// body split into its change set's embedded HTTP requests.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <functional>

#include "server/formats/ascii.h"
#include "server/formats/batch_multipart.h"

namespace cerulean::server {

namespace {

using Headers = std::vector<BatchHeader>;
using storage::Result;
using storage::Status;

// RFC 2046 §5.1.1: a boundary is 1 to 70 characters.
constexpr size_t kMaxBoundaryLength = 70;

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

bool IsSpaceOrBreak(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// True iff `c` is a control character other than HT.
bool IsControl(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u < 0x20 && c != '\t') || u == 0x7f;
}

// RFC 9110 tchar, as a table (every header name's every byte is checked).
constexpr std::array<bool, 256> kTokenChars = [] {
  std::array<bool, 256> t{};
  for (int c = 0x21; c < 0x7f; ++c) {
    t[c] = std::string_view("()<>@,;:\\\"/[]?={}").find(static_cast<char>(c)) ==
           std::string_view::npos;
  }
  return t;
}();

bool IsTokenChar(char c) { return kTokenChars[static_cast<unsigned char>(c)]; }

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

// `s` without leading and trailing spaces, tabs, CRs and LFs.
std::string_view TrimSpaceAndBreaks(std::string_view s) {
  while (!s.empty() && IsSpaceOrBreak(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpaceOrBreak(s.back())) s.remove_suffix(1);
  return s;
}

// Splits the next line off `*text` into `*line`, without its LF or CRLF.
// Returns false iff `*text` is empty.
bool NextLine(std::string_view* text, std::string_view* line) {
  if (text->empty()) return false;
  const size_t lf = text->find('\n');
  if (lf == std::string_view::npos) {
    *line = *text;
    text->remove_prefix(text->size());
  } else {
    *line = text->substr(0, lf);
    text->remove_prefix(lf + 1);
  }
  if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
  return true;
}

std::optional<std::string_view> FindHeader(std::span<const BatchHeader> headers,
                                           std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (IEquals(key, name)) return value;
  }
  return std::nullopt;
}

// The media type of a Content-Type value ("type/subtype", parameters and
// surrounding blanks removed).
std::string_view MediaType(std::string_view content_type) {
  return Trim(content_type.substr(0, content_type.find(';')));
}

// The boundary parameter of a `multipart/mixed` Content-Type value, unquoted.
Result<std::string> MultipartBoundary(std::string_view content_type) {
  if (!IEquals(MediaType(content_type), "multipart/mixed")) {
    return Status::InvalidArgument("batch Content-Type must be multipart/mixed");
  }
  std::optional<std::string> boundary;
  size_t pos = content_type.find(';');
  while (pos != std::string_view::npos && pos < content_type.size()) {
    ++pos;  // past ';'
    const size_t eq = content_type.find_first_of("=;", pos);
    if (eq == std::string_view::npos || content_type[eq] == ';') {
      pos = eq;  // a parameter without a value: ignored
      continue;
    }
    const std::string_view name = Trim(content_type.substr(pos, eq - pos));
    size_t v = eq + 1;
    while (v < content_type.size() && IsBlank(content_type[v])) ++v;
    std::string value;
    if (v < content_type.size() && content_type[v] == '"') {
      ++v;
      bool closed = false;
      for (; v < content_type.size(); ++v) {
        char c = content_type[v];
        if (c == '"') {
          closed = true;
          ++v;
          break;
        }
        if (c == '\\' && v + 1 < content_type.size()) c = content_type[++v];
        value.push_back(c);
      }
      if (!closed) return Status::InvalidArgument("unterminated quoted string in Content-Type");
      pos = content_type.find(';', v);
      if (!Trim(content_type.substr(v, pos == std::string_view::npos ? pos : pos - v)).empty()) {
        return Status::InvalidArgument("unexpected text after quoted parameter in Content-Type");
      }
    } else {
      pos = content_type.find(';', v);
      value =
          std::string(Trim(content_type.substr(v, pos == std::string_view::npos ? pos : pos - v)));
    }
    if (!boundary && IEquals(name, "boundary")) boundary = std::move(value);
  }
  if (!boundary) return Status::InvalidArgument("multipart/mixed Content-Type has no boundary");
  if (boundary->empty() || boundary->size() > kMaxBoundaryLength || boundary->back() == ' ') {
    return Status::InvalidArgument("invalid multipart boundary");
  }
  for (char c : *boundary) {
    if (IsControl(c) || c == '\t') return Status::InvalidArgument("invalid multipart boundary");
  }
  return std::move(*boundary);
}

// A delimiter line found in a multipart body.
struct Delimiter {
  size_t content_end;  // end of the preceding part: before the line break that precedes the line
  size_t after;        // first byte after the delimiter line and its line break
  bool close;          // `--boundary--`
};

// Finds the first delimiter line `--boundary` (at the start of a line) at or
// after `from`, or nullopt. `dash_boundary` is "--" + boundary.
std::optional<Delimiter> FindDelimiter(std::string_view text, size_t from,
                                       std::string_view dash_boundary) {
  // memmem rather than string_view::find: the latter stops at every '-'
  // (the first byte of any dash-boundary), and entity bodies are full of them.
  auto find = [&](size_t at) -> size_t {
    // Also when `text` is empty: its data() may be null, which memmem must
    // not be given.
    if (at >= text.size()) return std::string_view::npos;
#if defined(_WIN32)
    // Windows' C library has no memmem.
    const auto hit =
        std::search(text.begin() + at, text.end(),
                    std::boyer_moore_horspool_searcher(dash_boundary.begin(), dash_boundary.end()));
    return hit == text.end() ? std::string_view::npos : static_cast<size_t>(hit - text.begin());
#else
    const void* hit =
        memmem(text.data() + at, text.size() - at, dash_boundary.data(), dash_boundary.size());
    return hit == nullptr ? std::string_view::npos
                          : static_cast<size_t>(static_cast<const char*>(hit) - text.data());
#endif
  };
  for (size_t p = find(from); p != std::string_view::npos; p = find(p + 1)) {
    if (p != 0 && text[p - 1] != '\n') continue;
    size_t content_end = p;
    if (content_end > from && text[content_end - 1] == '\n') --content_end;
    if (content_end > from && text[content_end - 1] == '\r') --content_end;
    size_t q = p + dash_boundary.size();
    if (text.substr(q, 2) == "--") {
      // Close delimiter: whatever follows is epilogue and ignored.
      return Delimiter{content_end, text.size(), true};
    }
    // Transport padding, then the line break (or the end of the body).
    while (q < text.size() && IsBlank(text[q])) ++q;
    if (q == text.size()) return Delimiter{content_end, q, false};
    if (text[q] == '\n') return Delimiter{content_end, q + 1, false};
    if (text[q] == '\r' && (q + 1 == text.size() || text[q + 1] == '\n')) {
      return Delimiter{content_end, std::min(q + 2, text.size()), false};
    }
    // The boundary is only a prefix of this line: not a delimiter.
  }
  return std::nullopt;
}

// Parses one batch body; error offsets are relative to the body's start.
class BatchParser {
 public:
  explicit BatchParser(std::string_view body) : body_(body) {}

  Result<ParsedBatch> Parse(std::string_view boundary) {
    std::vector<std::string_view> outer;
    Status s = SplitMultipart(body_, boundary, &outer);
    if (!s.ok()) return s;
    if (outer.empty()) return Error("batch contains no parts", body_);

    ParsedBatch batch;
    joined_ = &batch.joined_values;
    headers_ = &batch.header_storage;
    // Each part's [begin, end) in header_storage, made spans at the end
    // (the vector grows meanwhile).
    std::vector<std::pair<size_t, size_t>> header_ranges;
    bool have_changeset = false;
    size_t direct_requests = 0;
    for (std::string_view part : outer) {
      std::string_view rest = part;
      Headers mime;
      s = ParseHeaderBlock(&rest, &mime, 0);
      if (!s.ok()) return s;
      const std::optional<std::string_view> type = FindHeader(mime, "Content-Type");
      if (!type) return Error("batch part has no Content-Type", part);
      const std::string_view media = MediaType(*type);
      if (IEquals(media, "multipart/mixed")) {
        if (have_changeset) return Error("batch contains more than one change set", part);
        if (direct_requests > 0) {
          return Error("batch mixes a change set with requests outside it", part);
        }
        have_changeset = true;
        Result<std::string> changeset_boundary = MultipartBoundary(*type);
        if (!changeset_boundary.ok()) {
          return Error(changeset_boundary.status().message() + " (change set)", part);
        }
        std::vector<std::string_view> operations;
        s = SplitMultipart(rest, *changeset_boundary, &operations);
        if (!s.ok()) return s;
        batch.parts.reserve(operations.size());
        header_ranges.reserve(operations.size());
        batch.header_storage.reserve(operations.size() * 6);
        for (std::string_view operation : operations) {
          BatchPart parsed;
          size_t first_header = batch.header_storage.size();
          s = ParseHttpPart(operation, &parsed);
          if (!s.ok()) return s;
          batch.parts.push_back(parsed);
          header_ranges.emplace_back(first_header, batch.header_storage.size());
        }
      } else if (IEquals(media, "application/http")) {
        if (have_changeset) {
          return Error("batch mixes a change set with requests outside it", part);
        }
        if (++direct_requests > 1) {
          return Error("batch contains more than one request outside a change set", part);
        }
        BatchPart parsed;
        size_t first_header = batch.header_storage.size();
        s = ParseHttpPart(part, &parsed);
        if (!s.ok()) return s;
        if (!IEquals(parsed.method, "GET")) {
          return Error("only a GET may appear outside a change set", part);
        }
        batch.parts.push_back(parsed);
        header_ranges.emplace_back(first_header, batch.header_storage.size());
      } else {
        return Error("batch part Content-Type must be multipart/mixed or application/http", part);
      }
    }
    batch.changeset = have_changeset;
    for (size_t i = 0; i < batch.parts.size(); ++i) {
      const auto [begin, end] = header_ranges[i];
      batch.parts[i].headers =
          std::span<const BatchHeader>(batch.header_storage.data() + begin, end - begin);
      // A Content-ID only among the inner headers (older Node clients).
      if (!batch.parts[i].content_id) {
        std::optional<std::string_view> id = batch.parts[i].Header("Content-ID");
        if (id && !id->empty()) batch.parts[i].content_id = id;
      }
    }
    return batch;
  }

 private:
  // InvalidArgument "<what> at <offset of at in the body>".
  Status Error(std::string_view what, std::string_view at) const {
    return Status::InvalidArgument(std::string(what) + " at " + std::to_string(Offset(at)));
  }

  // The offset of `at` in body_. REQUIRES: `at` is a view into body_.
  size_t Offset(std::string_view at) const {
    const std::less<const char*> before;
    if (before(at.data(), body_.data()) || before(body_.data() + body_.size(), at.data())) {
      return body_.size();  // not a view of the body: a bug, but report something
    }
    return static_cast<size_t>(at.data() - body_.data());
  }

  // Splits the multipart `text` into the contents of its parts, tolerating a
  // blank preamble and a final delimiter line instead of the close delimiter.
  Status SplitMultipart(std::string_view text, std::string_view boundary,
                        std::vector<std::string_view>* parts) const {
    const std::string dash_boundary = "--" + std::string(boundary);
    std::optional<Delimiter> delimiter = FindDelimiter(text, 0, dash_boundary);
    const std::string_view preamble =
        text.substr(0, delimiter ? delimiter->content_end : text.size());
    if (!TrimSpaceAndBreaks(preamble).empty() || !delimiter) {
      std::string_view at = text;
      while (!at.empty() && IsSpaceOrBreak(at.front())) at.remove_prefix(1);
      return Error("expected multipart delimiter '--" + std::string(boundary) + "'", at);
    }
    while (!delimiter->close) {
      const size_t begin = delimiter->after;
      std::optional<Delimiter> next = FindDelimiter(text, begin, dash_boundary);
      if (!next) {
        // A last delimiter line with nothing after it ends the body (JS).
        if (TrimSpaceAndBreaks(text.substr(begin)).empty()) return Status::Ok();
        return Error("truncated multipart body: part has no closing delimiter", text.substr(begin));
      }
      parts->push_back(text.substr(begin, std::max(next->content_end, begin) - begin));
      delimiter = next;
    }
    return Status::Ok();
  }

  // Parses header lines off `*text` up to and including a blank line or the
  // end, appending them to `*headers` (whose first `first` entries belong to
  // earlier blocks), leaving `*text` at the content. Folded lines are joined
  // into joined_ (a header folded again is extended in place).
  Status ParseHeaderBlock(std::string_view* text, Headers* headers, size_t first) const {
    std::string_view line;
    while (NextLine(text, &line)) {
      if (Trim(line).empty()) return Status::Ok();
      if (HasControlChar(line)) return Error("control character in header", line);
      if (IsBlank(line.front())) {
        if (headers->size() == first) {
          return Error("header continuation without a header", line);
        }
        std::string_view& value = headers->back().second;
        if (joined_->empty() || value.data() != joined_->back().data()) {
          joined_->emplace_back(value);
        }
        std::string& joined = joined_->back();
        joined.push_back(' ');
        joined.append(Trim(line));
        value = joined;
        continue;
      }
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos) return Error("expected ':' in header", line);
      const std::string_view name = Trim(line.substr(0, colon));
      if (!IsToken(name)) return Error("invalid header name", line);
      headers->emplace_back(name, Trim(line.substr(colon + 1)));
    }
    return Status::Ok();
  }

  // Parses an application/http part (MIME headers, then an HTTP request).
  // Its inner headers are appended to headers_; the caller sets
  // out->headers, and out->content_id if the MIME headers have none.
  Status ParseHttpPart(std::string_view part, BatchPart* out) {
    std::string_view rest = part;
    Headers& mime = mime_;
    mime.clear();
    Status s = ParseHeaderBlock(&rest, &mime, 0);
    if (!s.ok()) return s;
    const std::optional<std::string_view> type = FindHeader(mime, "Content-Type");
    if (!type || !IEquals(MediaType(*type), "application/http")) {
      return Error("change set part Content-Type must be application/http", part);
    }
    const std::optional<std::string_view> encoding = FindHeader(mime, "Content-Transfer-Encoding");
    if (encoding && !IEquals(*encoding, "binary") && !IEquals(*encoding, "8bit") &&
        !IEquals(*encoding, "7bit")) {
      return Error("unsupported Content-Transfer-Encoding (expected binary)", part);
    }

    // Line breaks before the request line are ignored (RFC 9112 §2.2).
    while (!rest.empty() && (rest.front() == '\r' || rest.front() == '\n')) rest.remove_prefix(1);
    std::string_view line;
    if (!NextLine(&rest, &line)) return Error("missing request line in batch part", rest);
    s = ParseRequestLine(line, out);
    if (!s.ok()) return s;
    s = ParseHeaderBlock(&rest, headers_, headers_->size());
    if (!s.ok()) return s;
    out->body = TrimSpaceAndBreaks(rest);

    std::optional<std::string_view> content_id = FindHeader(mime, "Content-ID");
    if (content_id && !content_id->empty()) {
      // A folded MIME header's joined value lives in joined_ like the others.
      out->content_id = content_id;
    }
    return Status::Ok();
  }

  // Parses "METHOD SP request-target SP HTTP/1.x".
  Status ParseRequestLine(std::string_view line, BatchPart* out) const {
    std::string_view tokens[3];
    size_t count = 0;
    std::string_view rest = line;
    while (true) {
      while (!rest.empty() && IsBlank(rest.front())) rest.remove_prefix(1);
      if (rest.empty()) break;
      const size_t end = std::min(rest.find(' '), rest.find('\t'));
      if (count == 3) return Error("invalid request line in batch part", line);
      tokens[count++] = rest.substr(0, end);
      rest.remove_prefix(std::min(end, rest.size()));
    }
    if (count != 3) return Error("invalid request line in batch part", line);
    if (!IsToken(tokens[0])) return Error("invalid method in batch part", tokens[0]);
    // Control characters other than HT (which ends a token) are refused.
    if (HasControlChar(tokens[1])) {
      return Error("invalid request target in batch part", tokens[1]);
    }
    if (tokens[2] != "HTTP/1.1" && tokens[2] != "HTTP/1.0") {
      return Error("expected HTTP/1.1 in batch part request line", tokens[2]);
    }
    out->method = tokens[0];
    out->url = tokens[1];
    return Status::Ok();
  }

  std::string_view body_;
  std::list<std::string>* joined_ = nullptr;  // the ParsedBatch's joined_values
  Headers* headers_ = nullptr;                // the ParsedBatch's header_storage
  Headers mime_;                              // a part's MIME headers (reused)
};

}  // namespace

std::optional<std::string_view> BatchPart::Header(std::string_view name) const {
  return FindHeader(headers, name);
}

storage::Result<ParsedBatch> ParseBatch(std::string_view content_type, std::string_view body) {
  Result<std::string> boundary = MultipartBoundary(content_type);
  if (!boundary.ok()) return boundary.status();
  return BatchParser(body).Parse(*boundary);
}

}  // namespace cerulean::server
