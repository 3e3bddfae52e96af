// A damaged database file: CheckFile, check_at_open, and a store that meets
// the damage at run time (Healthy() false, one log line, writes refused).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "storage/sqlite/sqlite_store.h"
#include "storage/sqlite/sqlite_test_util.h"

namespace cerulean::storage {
namespace {

constexpr size_t kPage = 4096;

// A closed store at `path` holding `n` entities of ~2 KB in table "t".
void Fill(const std::string& path, int n) {
  SqliteStoreOptions options = TestOptions();
  options.path = path;
  auto store = SqliteStore::Open(options);
  REQUIRE_MESSAGE(store.ok(), store.status().ToString());
  REQUIRE((*store)->CreateTable("acct", "t").ok());
  for (int i = 0; i < n; i += 50) {
    std::vector<WriteOp> ops;
    for (int k = i; k < i + 50 && k < n; ++k) {
      ops.push_back(
          Insert("p", "r" + std::to_string(k), {{"s", Value::String(std::string(2000, 'x'))}}));
    }
    REQUIRE((*store)->Apply("acct", "t", ops, nullptr, nullptr).ok());
  }
}

// Zeroes a quarter of the file's pages: every other one of its second half
// (the catalog's pages, at the start, stay readable).
void ZeroQuarter(const std::string& path) {
  const size_t pages = std::filesystem::file_size(path) / kPage;
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  const std::string zeros(kPage, '\0');
  for (size_t page = pages / 2; page < pages; page += 2) {
    f.seekp(static_cast<std::streamoff>(page * kPage));
    f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  }
  REQUIRE(f.good());
}

TEST_CASE("sqlite damage: CheckFile finds a sound file sound and a damaged one damaged") {
  TempDir dir;
  const std::string path = dir.path() + "/store.db";
  std::vector<std::string> problems;
  CHECK(SqliteStore::CheckFile(path, &problems).code() == StatusCode::kNotFound);
  Fill(path, 400);
  REQUIRE(SqliteStore::CheckFile(path, &problems).ok());
  CHECK(problems.empty());
  ZeroQuarter(path);
  REQUIRE(SqliteStore::CheckFile(path, &problems).ok());
  CHECK(!problems.empty());
  CHECK(problems.size() <= 100);

  std::ofstream(dir.path() + "/junk.db") << std::string(3 * kPage, 'j');
  Status junk = SqliteStore::CheckFile(dir.path() + "/junk.db", &problems);
  CHECK((!junk.ok() || !problems.empty()));
}

TEST_CASE("sqlite damage: check_at_open refuses a damaged file") {
  TempDir dir;
  const std::string path = dir.path() + "/store.db";
  Fill(path, 400);
  SqliteStoreOptions options = TestOptions();
  options.path = path;
  options.check_at_open = true;
  {
    auto sound = SqliteStore::Open(options);
    REQUIRE_MESSAGE(sound.ok(), sound.status().ToString());
  }
  ZeroQuarter(path);
  auto damaged = SqliteStore::Open(options);
  REQUIRE(!damaged.ok());
  CHECK(damaged.status().code() == StatusCode::kCorruption);
  CHECK(damaged.status().message().find("quick_check") != std::string::npos);
}

TEST_CASE("sqlite damage: met at run time, it is logged once and every write is refused") {
  TempDir dir;
  const std::string path = dir.path() + "/store.db";
  Fill(path, 400);
  ZeroQuarter(path);
  std::mutex mu;
  std::vector<std::string> lines;
  SqliteStoreOptions options = TestOptions();
  options.path = path;
  options.log = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(mu);
    lines.push_back(line);
  };
  auto opened = SqliteStore::Open(options);
  REQUIRE_MESSAGE(opened.ok(), opened.status().ToString());
  SqliteStore& store = **opened;
  CHECK(store.Healthy());
  CHECK(store.HealthProblem().empty());

  // A full scan meets the zeroed pages.
  ScanResult rows;
  Status scan = store.Scan("acct", "t", ScanRequest{}, &rows);
  REQUIRE(scan.code() == StatusCode::kCorruption);
  CHECK(!store.Healthy());
  CHECK(store.HealthProblem().find("damaged") != std::string::npos);
  for (int i = 0; i < 3; ++i) {
    CHECK(store.Apply("acct", "t", {Insert("q", std::to_string(i))}, nullptr, nullptr).code() ==
          StatusCode::kCorruption);
  }
  CHECK(store.CreateTable("acct", "other").code() == StatusCode::kCorruption);
  static_cast<void>(store.Scan("acct", "t", ScanRequest{}, &rows));
  std::lock_guard<std::mutex> lock(mu);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find(std::filesystem::canonical(path).string()) != std::string::npos);
}

TEST_CASE("sqlite damage: another store's damage leaves this one healthy") {
  TempDir dir;
  Fill(dir.path() + "/a.db", 400);
  ZeroQuarter(dir.path() + "/a.db");
  SqliteStoreOptions options = TestOptions();
  options.path = dir.path() + "/a.db";
  auto damaged = SqliteStore::Open(options);
  REQUIRE(damaged.ok());
  options.path = dir.path() + "/b.db";
  auto sound = SqliteStore::Open(options);
  REQUIRE(sound.ok());
  REQUIRE((*sound)->CreateTable("acct", "t").ok());
  ScanResult rows;
  CHECK((*damaged)->Scan("acct", "t", ScanRequest{}, &rows).code() == StatusCode::kCorruption);
  CHECK(!(*damaged)->Healthy());
  CHECK((*sound)->Healthy());
  CHECK((*sound)->Apply("acct", "t", {Insert("p", "r")}, nullptr, nullptr).ok());
}

}  // namespace
}  // namespace cerulean::storage
