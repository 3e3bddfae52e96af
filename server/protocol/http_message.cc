#include "server/protocol/http_message.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "server/formats/ascii.h"

namespace cerulean::server::http {

namespace {

// The first chunk holds a typical request's or response's fields, and the
// field list room for as many as a typical message has: a message's fields
// then cost two allocations, not one per doubling.
constexpr size_t kChunkBytes = 1024;
constexpr size_t kReservedFields = 16;

unsigned char FoldCase(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u >= 'A' && u <= 'Z' ? static_cast<unsigned char>(u + ('a' - 'A')) : u;
}

struct VerbEntry {
  verb v;
  std::string_view name;
};
constexpr VerbEntry kVerbs[] = {
    {verb::delete_, "DELETE"}, {verb::get, "GET"},     {verb::head, "HEAD"},
    {verb::post, "POST"},      {verb::put, "PUT"},     {verb::options, "OPTIONS"},
    {verb::patch, "PATCH"},    {verb::merge, "MERGE"},
};

// a < b, comparing ASCII letters case-insensitively.
bool LessFolded(std::string_view a, std::string_view b) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = FoldCase(a[i]);
    const unsigned char y = FoldCase(b[i]);
    if (x != y) return x < y;
  }
  return a.size() < b.size();
}

// True iff the comma-separated list `value` holds `token` (case-insensitive).
bool HasToken(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    size_t comma = value.find(',');
    std::string_view item = Trim(value.substr(0, comma));
    if (IEquals(item, token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

verb StringToVerb(std::string_view name) {
  for (const auto& v : kVerbs) {
    if (v.name == name) return v.v;
  }
  return verb::unknown;
}

std::string_view VerbName(verb v) {
  for (const auto& entry : kVerbs) {
    if (entry.v == v) return entry.name;
  }
  return {};
}

Fields::Fields(const Fields& other) {
  for (const Field& f : other.fields_) insert(f.name_, f.value_);
}

Fields& Fields::operator=(const Fields& other) {
  if (this != &other) {
    Fields copy(other);
    *this = std::move(copy);
  }
  return *this;
}

Fields::Fields(Fields&& other) noexcept { *this = std::move(other); }

Fields& Fields::operator=(Fields&& other) noexcept {
  if (this != &other) {
    fields_ = std::move(other.fields_);
    index_ = std::move(other.index_);
    index_valid_ = std::exchange(other.index_valid_, false);
    first_chunk_ = std::move(other.first_chunk_);
    chunks_ = std::move(other.chunks_);
    next_ = std::exchange(other.next_, nullptr);
    free_ = std::exchange(other.free_, 0);
    other.fields_.clear();
    other.index_.clear();
    other.chunks_.clear();
  }
  return *this;
}

std::string_view Fields::Keep(std::string_view s) {
  if (s.empty()) return {};
  if (s.size() > free_) {
    size_t n = std::max(kChunkBytes, s.size());
    auto& chunk = first_chunk_ ? chunks_.emplace_back() : first_chunk_;
    chunk = std::make_unique_for_overwrite<char[]>(n);
    next_ = chunk.get();
    free_ = n;
  }
  std::memcpy(next_, s.data(), s.size());
  std::string_view kept(next_, s.size());
  next_ += s.size();
  free_ -= s.size();
  return kept;
}

std::string_view Fields::operator[](std::string_view name) const {
  auto it = find(name);
  return it == end() ? std::string_view() : it->value_;
}

std::span<const uint32_t> Fields::Indexed(std::string_view name) const {
  if (!index_valid_) {
    index_.resize(fields_.size());
    for (uint32_t i = 0; i < index_.size(); ++i) index_[i] = i;
    std::stable_sort(index_.begin(), index_.end(), [this](uint32_t a, uint32_t b) {
      return LessFolded(fields_[a].name_, fields_[b].name_);
    });
    index_valid_ = true;
  }
  const auto first = std::lower_bound(
      index_.begin(), index_.end(), name,
      [this](uint32_t i, std::string_view n) { return LessFolded(fields_[i].name_, n); });
  const auto last = std::upper_bound(
      first, index_.end(), name,
      [this](std::string_view n, uint32_t i) { return LessFolded(n, fields_[i].name_); });
  return {first, last};
}

Fields::const_iterator Fields::find(std::string_view name) const {
  if (fields_.size() > kScanned) {
    const auto named = Indexed(name);
    return named.empty() ? fields_.end() : fields_.begin() + named.front();
  }
  return std::find_if(fields_.begin(), fields_.end(),
                      [name](const Field& f) { return IEquals(f.name_, name); });
}

size_t Fields::count(std::string_view name) const {
  if (fields_.size() > kScanned) {
    return Indexed(name).size();
  }
  return static_cast<size_t>(std::count_if(
      fields_.begin(), fields_.end(), [name](const Field& f) { return IEquals(f.name_, name); }));
}

void Fields::insert(std::string_view name, std::string_view value) {
  Field f;
  f.name_ = Keep(name);
  f.value_ = Keep(value);
  if (fields_.capacity() == 0) fields_.reserve(kReservedFields);
  fields_.push_back(f);
  index_valid_ = false;
}

void Fields::set(std::string_view name, std::string_view value) {
  auto first = std::find_if(fields_.begin(), fields_.end(),
                            [name](const Field& f) { return IEquals(f.name_, name); });
  if (first == fields_.end()) {
    insert(name, value);
    return;
  }
  first->value_ = Keep(value);
  index_valid_ = false;
  fields_.erase(std::remove_if(first + 1, fields_.end(),
                               [name](const Field& f) { return IEquals(f.name_, name); }),
                fields_.end());
}

size_t Fields::erase(std::string_view name) {
  size_t before = fields_.size();
  index_valid_ = false;
  fields_.erase(std::remove_if(fields_.begin(), fields_.end(),
                               [name](const Field& f) { return IEquals(f.name_, name); }),
                fields_.end());
  return before - fields_.size();
}

bool Fields::KeepAlive(unsigned version) const {
  std::string_view connection = (*this)["Connection"];
  if (version >= 11) return !HasToken(connection, "close");
  return HasToken(connection, "keep-alive");
}

void Fields::SetKeepAlive(unsigned version, bool keep_alive) {
  if (KeepAlive(version) == keep_alive) return;
  // The server never writes other Connection tokens, so the field is
  // replaced, not edited.
  if (version >= 11) {
    if (keep_alive) {
      erase("Connection");
    } else {
      set("Connection", "close");
    }
  } else {
    if (keep_alive) {
      set("Connection", "keep-alive");
    } else {
      erase("Connection");
    }
  }
}

Request::Request(verb method_verb, std::string_view request_target, unsigned http_version)
    : target_(request_target), version_(http_version) {
  method(method_verb);
}

void Request::method(verb v) {
  method_ = v;
  method_string_.assign(VerbName(v));
}

void Request::method_string(std::string_view name) {
  method_ = StringToVerb(name);
  method_string_.assign(name);
}

void Request::prepare_payload() {
  if (!body_.empty() || method_ == verb::options || method_ == verb::put || method_ == verb::post) {
    set("Content-Length", std::to_string(body_.size()));
  } else {
    erase("Content-Length");
  }
}

void Response::prepare_payload() {
  if (status_ < 200 || status_ == 204 || status_ == 304) {
    erase("Content-Length");
    body_.clear();
    return;
  }
  set("Content-Length", std::to_string(body_.size()));
}

}  // namespace cerulean::server::http
