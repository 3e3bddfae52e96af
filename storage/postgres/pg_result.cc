#include "storage/postgres/pg_result.h"

#include <cstdlib>
#include <string>
#include <utility>

#include "storage/postgres/libpq_api.h"

namespace cerulean::storage {

namespace {
// Type OIDs (pg_type.h): persistent in every PostgreSQL-protocol server.
constexpr unsigned kByteaOid = 17;
constexpr unsigned kInt8Oid = 20;
constexpr unsigned kTextOid = 25;
}  // namespace

void PgParams::Add(const char* data, size_t len, int format, unsigned oid) {
  values_.push_back(data);
  lengths_.push_back(static_cast<int>(len));
  formats_.push_back(format);
  types_.push_back(oid);
}

PgParams& PgParams::Text(std::string_view v) {
  static const char kEmpty = 0;
  Add(v.empty() ? &kEmpty : v.data(), v.size(), 1, kTextOid);
  return *this;
}

PgParams& PgParams::Bytes(std::string_view v) {
  static const char kEmpty = 0;
  Add(v.empty() ? &kEmpty : v.data(), v.size(), 1, kByteaOid);
  return *this;
}

PgParams& PgParams::Int64(int64_t v) {
  owned_.push_back(std::to_string(v));
  Add(owned_.back().c_str(), owned_.back().size(), 0, kInt8Oid);
  return *this;
}

PgParams& PgParams::NullBytes() {
  Add(nullptr, 0, 1, kByteaOid);
  return *this;
}

PgResult::~PgResult() {
  if (res_ != nullptr) Pq().PQclear(res_);
}
PgResult::PgResult(PgResult&& other) noexcept : res_(std::exchange(other.res_, nullptr)) {}
PgResult& PgResult::operator=(PgResult&& other) noexcept {
  if (this != &other) {
    if (res_ != nullptr) Pq().PQclear(res_);
    res_ = std::exchange(other.res_, nullptr);
  }
  return *this;
}

int PgResult::rows() const { return res_ != nullptr ? Pq().PQntuples(res_) : 0; }
bool PgResult::IsNull(int row, int col) const { return Pq().PQgetisnull(res_, row, col) != 0; }
std::string_view PgResult::View(int row, int col) const {
  return std::string_view(Pq().PQgetvalue(res_, row, col),
                          static_cast<size_t>(Pq().PQgetlength(res_, row, col)));
}
int64_t PgResult::Int64(int row, int col) const {
  const auto* p = reinterpret_cast<const unsigned char*>(Pq().PQgetvalue(res_, row, col));
  if (Pq().PQgetlength(res_, row, col) != 8) return 0;
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return static_cast<int64_t>(v);
}
bool PgResult::Bool(int row, int col) const {
  return Pq().PQgetlength(res_, row, col) == 1 && Pq().PQgetvalue(res_, row, col)[0] != 0;
}
int64_t PgResult::Affected() const {
  const char* n = res_ != nullptr ? Pq().PQcmdTuples(res_) : "";
  return *n != '\0' ? std::strtoll(n, nullptr, 10) : 0;
}

}  // namespace cerulean::storage
