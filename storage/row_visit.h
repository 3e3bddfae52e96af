// RowPage: what every backend's ScanRows does with the rows it reads. A
// backend reads a page's rows in key order, keys and properties still in
// their stored encoding (storage/codec.h), and offers each to a RowPage,
// which applies the ScanRequest (limit, max_examined, abandon, predicate),
// decodes what it must and hands the row to the caller's RowVisitor.
// Thread-safety: one RowPage per scan, used by the scanning thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "storage/codec.h"
#include "storage/store.h"

namespace cerulean::storage {

class RowPage {
 public:
  // `request`, `visit` and `next` must outlive this object. Resets `*next`.
  RowPage(const ScanRequest& request, const RowVisitor& visit, std::optional<EntityKey>* next)
      : request_(request), visit_(visit), next_(next) {
    next_->reset();
  }
  RowPage(const RowPage&) = delete;
  RowPage& operator=(const RowPage&) = delete;

  // Offers the next stored row in key order (`pk` and `rk` encoded, `props`
  // encoded). Returns Ok to go on; Ok with full() true once the page is
  // complete (this row was not visited: *next is its key, where the next
  // page starts); kBusy ("scan abandoned") when the request's abandon says
  // so; kCorruption for a row that does not decode; else what the visitor
  // returned. The backend stops reading at any status but Ok and when
  // full(). The views need to live only during the call.
  // Defined here, so that the compiler may inline it into the row loop.
  Status Offer(std::string_view pk, std::string_view rk, int64_t ts, std::string_view props) {
    if (examined_ >= request_.max_examined || visited_ >= request_.limit) {
      // Budget spent: this row is where the next page starts.
      EntityKey key;
      Status s = DecodeKeyInto(pk, &key.partition_key);
      if (s.ok()) s = DecodeKeyInto(rk, &key.row_key);
      if (!s.ok()) return s;
      *next_ = std::move(key);
      return Status::Ok();
    }
    if (request_.abandon && examined_ % ScanRequest::kRowsPerAbandonPoll == 0 &&
        request_.abandon()) {
      return Status::Busy("scan abandoned");
    }
    ++examined_;
    EntityRow row;
    row.timestamp = ts;
    row.properties = props;
    if (request_.predicate) {
      Status s = DecodeKeyInto(pk, &decoded_.partition_key);
      if (s.ok()) s = DecodeKeyInto(rk, &decoded_.row_key);
      if (!s.ok()) return s;
      decoded_.timestamp = ts;
      s = DecodeProperties(props, &decoded_.properties);
      if (!s.ok()) return s;
      if (!request_.predicate(decoded_)) return Status::Ok();
      row.partition_key = decoded_.partition_key;
      row.row_key = decoded_.row_key;
      row.decoded = &decoded_;
    } else {
      Status s = DecodeKeyInto(pk, &pk_);
      if (s.ok()) s = DecodeKeyInto(rk, &rk_);
      if (!s.ok()) return s;
      row.partition_key = pk_;
      row.row_key = rk_;
    }
    ++visited_;
    return visit_(row);
  }

  // True once a row was offered past the page's budget (*next is set).
  bool full() const { return next_->has_value(); }

 private:
  const ScanRequest& request_;
  const RowVisitor& visit_;
  std::optional<EntityKey>* next_;
  // Rows are decoded into these, reused row after row (no allocation once
  // they have grown to the page's largest keys and entity).
  std::string pk_, rk_;
  Entity decoded_;
  size_t examined_ = 0, visited_ = 0;
};

}  // namespace cerulean::storage
