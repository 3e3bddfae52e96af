// Where the error paths of entity writes and $batch read the store: the
// thread that reads a request never reads the store for them (whether the
// table of an invalid write exists, the single retrieve's entity), and their
// answers are those of the same server over the store unwatched.
#include <doctest/doctest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/http/test_server.h"
#include "storage/store_wrapper.h"

namespace cerulean::server {
namespace {

using storage::Result;
using storage::Status;
using testing::HeaderOf;
using testing::Normalized;
using testing::TestServer;

// A store that forwards to another and counts the reads made on the
// server's I/O thread (Watch).
class WatchedStore final : public storage::StoreWrapper {
 public:
  explicit WatchedStore(storage::Store& inner) : StoreWrapper(&inner) {}
  // `on_io_thread` tells whether the calling thread is the I/O thread.
  void Watch(std::function<bool()> on_io_thread) { on_io_thread_ = std::move(on_io_thread); }
  int reads_on_io_thread() const { return reads_.load(); }

  Result<std::string> GetTable(const std::string& a, const std::string& t) override {
    Note();
    return StoreWrapper::GetTable(a, t);
  }
  Status ScanTables(const std::string& a, const std::string& start,
                    const std::function<bool(const std::string&)>& visit) override {
    Note();
    return StoreWrapper::ScanTables(a, start, visit);
  }
  Result<std::string> GetTableAcl(const std::string& a, const std::string& t) override {
    Note();
    return StoreWrapper::GetTableAcl(a, t);
  }
  Result<std::string> GetServiceProperties(const std::string& a) override {
    Note();
    return StoreWrapper::GetServiceProperties(a);
  }
  Status GetEntityRow(const std::string& a, const std::string& t, const std::string& pk,
                      const std::string& rk, const storage::RowVisitor& visit) override {
    Note();
    return StoreWrapper::GetEntityRow(a, t, pk, rk, visit);
  }
  Status ScanRows(const std::string& a, const std::string& t, const storage::ScanRequest& request,
                  const storage::RowVisitor& visit,
                  std::optional<storage::EntityKey>* next) override {
    Note();
    return StoreWrapper::ScanRows(a, t, request, visit, next);
  }

 private:
  void Note() {
    if (on_io_thread_ && on_io_thread_()) reads_.fetch_add(1);
  }

  std::function<bool()> on_io_thread_;
  std::atomic<int> reads_{0};
};

// Two servers over the same data: one over a WatchedStore, one over the
// plain store, both driven through the production entry path (TestServer).
struct ServedServer {
  ServedServer()
      : inner(testing::OpenMemoryStore()), watched(*inner), server(&watched), plain(inner.get()) {
    watched.Watch([this] { return server.OnIoThread(); });
    REQUIRE(plain.Send(http::verb::post, "/devstoreaccount1/Tables", R"({"TableName":"items"})")
                .result_int() == 201);
    REQUIRE(plain
                .Send(http::verb::post, "/devstoreaccount1/items",
                      R"({"PartitionKey":"p","RowKey":"existing"})")
                .result_int() == 201);
  }

  // Checks that `verb target` reads nothing on the I/O thread of the watched
  // server, and answers there as the plain server answers.
  void CheckServedLikeSent(http::verb verb, const std::string& target, const std::string& body,
                           const testing::Headers& headers = {}) {
    const int reads_before = watched.reads_on_io_thread();
    HttpResponse served_answer = server.Send(verb, target, body, headers);
    CHECK(watched.reads_on_io_thread() == reads_before);
    HttpResponse sent = plain.Send(verb, target, body, headers);
    CHECK(served_answer.result_int() == sent.result_int());
    CHECK(HeaderOf(served_answer, "x-ms-error-code") == HeaderOf(sent, "x-ms-error-code"));
    CHECK(Normalized(HeaderOf(served_answer, "Content-Type")) ==
          Normalized(HeaderOf(sent, "Content-Type")));
    CHECK(Normalized(served_answer.body()) == Normalized(sent.body()));
  }

  std::unique_ptr<storage::SqliteStore> inner;
  WatchedStore watched;
  TestServer server;
  TestServer plain;
};

const testing::Headers kBatch = {{"Content-Type", "multipart/mixed; boundary=batch_b"}};

// A $batch body of one change set holding `part` (method, URL after the
// account and body), or the single retrieve of `url`.
std::string ChangeSet(const std::string& method, const std::string& url, const std::string& body) {
  return "--batch_b\r\nContent-Type: multipart/mixed; boundary=changeset_c\r\n\r\n"
         "--changeset_c\r\nContent-Type: application/http\r\n"
         "Content-Transfer-Encoding: binary\r\nContent-ID: 1\r\n\r\n" +
         method + " http://127.0.0.1:10002/devstoreaccount1/" + url +
         " HTTP/1.1\r\nAccept: application/json;odata=minimalmetadata\r\n"
         "Content-Type: application/json\r\n\r\n" +
         body + "\r\n--changeset_c--\r\n--batch_b--\r\n";
}
std::string Retrieve(const std::string& url) {
  return "--batch_b\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
         "GET http://127.0.0.1:10002/devstoreaccount1/" +
         url +
         " HTTP/1.1\r\nAccept: application/json;odata=minimalmetadata\r\n\r\n\r\n--batch_b--\r\n";
}

TEST_CASE("an entity write with an invalid body: the table lookup is not on the I/O thread") {
  ServedServer s;
  for (const std::string table : {"items", "nothere"}) {
    CAPTURE(table);
    s.CheckServedLikeSent(http::verb::post, "/devstoreaccount1/" + table,
                          R"({"PartitionKey":"p"})");
    s.CheckServedLikeSent(http::verb::put,
                          "/devstoreaccount1/" + table + "(PartitionKey='p',RowKey='existing')",
                          "not json", {{"If-Match", "*"}});
  }
}

TEST_CASE("$batch: a refused change set and a single retrieve read the store off the I/O thread") {
  ServedServer s;
  for (const std::string table : {"items", "nothere"}) {
    CAPTURE(table);
    s.CheckServedLikeSent(http::verb::post, "/devstoreaccount1/$batch",
                          ChangeSet("POST", table, R"({"PartitionKey":"p"})"), kBatch);
  }
  for (const char* url :
       {"items(PartitionKey='p',RowKey='existing')", "items(PartitionKey='p',RowKey='absent')",
        "nothere(PartitionKey='p',RowKey='existing')"}) {
    CAPTURE(url);
    s.CheckServedLikeSent(http::verb::post, "/devstoreaccount1/$batch", Retrieve(url), kBatch);
  }
}

}  // namespace
}  // namespace cerulean::server
