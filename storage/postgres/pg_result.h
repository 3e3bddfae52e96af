// PgParams and PgResult: the values a statement is given (bound, never
// spliced into SQL text) and the rows it returns (binary format).
// Thread-safety: each object is used by one thread at a time.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

struct pg_result;

namespace cerulean::storage {

class PgConnection;

// Bound parameters of one statement, with their types (which also make the
// statement's text valid where a parameter is not referenced).
class PgParams {
 public:
  PgParams() = default;
  // Movable, not copyable: values_ point into owned_ (whose elements a
  // move does not relocate).
  PgParams(PgParams&&) = default;
  PgParams& operator=(PgParams&&) = default;
  PgParams(const PgParams&) = delete;
  PgParams& operator=(const PgParams&) = delete;

  // A text value (viewed: must outlive the statement's execution).
  PgParams& Text(std::string_view v);
  // A bytea value (viewed likewise).
  PgParams& Bytes(std::string_view v);
  PgParams& Int64(int64_t v);
  // An unused slot of bytea type (SQL NULL).
  PgParams& NullBytes();

  size_t size() const { return values_.size(); }

 private:
  friend class PgConnection;
  void Add(const char* data, size_t len, int format, unsigned oid);
  std::vector<const char*> values_;
  std::vector<int> lengths_;
  std::vector<int> formats_;
  std::vector<unsigned> types_;
  std::deque<std::string> owned_;  // int64 texts; a deque keeps their addresses
};

// The result of one statement; rows in binary format.
class PgResult {
 public:
  PgResult() = default;
  ~PgResult();
  PgResult(const PgResult&) = delete;
  PgResult& operator=(const PgResult&) = delete;
  PgResult(PgResult&& other) noexcept;
  PgResult& operator=(PgResult&& other) noexcept;

  int rows() const;
  bool IsNull(int row, int col) const;
  // Raw bytes of a text or bytea column, valid while this result lives.
  std::string_view View(int row, int col) const;
  // An int8 column (binary: 8 bytes big-endian).
  int64_t Int64(int row, int col) const;
  // A bool column (binary: 1 byte).
  bool Bool(int row, int col) const;
  // Rows changed by INSERT/UPDATE/DELETE.
  int64_t Affected() const;

 private:
  friend class PgConnection;
  pg_result* res_ = nullptr;
};

}  // namespace cerulean::storage
