// SqliteStore: entity reads, the point read (GetEntityRow) and key-range
// scans (ScanRows, and the in-memory store's usage counts), and the SQL
// that turns a KeyRange into a seek.
#include <string>

#include "storage/codec.h"
#include "storage/row_visit.h"
#include "storage/sqlite/sqlite_internal.h"

namespace cerulean::storage {

namespace {

// SQL condition for one bound; parameters ?first (pk) and ?first+1 (rk).
std::string BoundSql(const KeyBound& b, bool lower, int first) {
  std::string op = lower ? (b.inclusive ? ">=" : ">") : (b.inclusive ? "<=" : "<");
  std::string p = "?" + std::to_string(first);
  if (!b.row_key) return " AND pk " + op + " " + p;
  return " AND (pk, rk) " + op + " (" + p + ", ?" + std::to_string(first + 1) + ")";
}

void BindBound(Stmt* stmt, const KeyBound& b, int first) {
  stmt->BindBlob(first, EncodeKey(b.partition_key));
  if (b.row_key) stmt->BindBlob(first + 1, EncodeKey(*b.row_key));
}

// The key conditions of a scan from `lower` to `upper` (either may be
// absent), appended to `*sql` and bound by BindRange: ?2/?3 the lower
// bound's keys, ?4/?5 the upper's. Bounds within one partition are written
// as "pk = ?2 AND rk ..." so that SQLite seeks to the lower row key and
// stops at the upper one; row values "(pk, rk) >= (?, ?)" are re-checked on
// every row (20 VDBE opcodes per row instead of 7 for a RowKey range).
void AppendRangeSql(const std::optional<KeyBound>& lower, const std::optional<KeyBound>& upper,
                    std::string* sql) {
  if (SinglePartition(lower, upper)) {
    *sql += " AND pk = ?2";
    if (lower->row_key) *sql += lower->inclusive ? " AND rk >= ?3" : " AND rk > ?3";
    if (upper->row_key) *sql += upper->inclusive ? " AND rk <= ?5" : " AND rk < ?5";
    return;
  }
  if (lower) *sql += BoundSql(*lower, /*lower=*/true, 2);
  if (upper) *sql += BoundSql(*upper, /*lower=*/false, 4);
}

void BindRange(Stmt* stmt, const std::optional<KeyBound>& lower,
               const std::optional<KeyBound>& upper) {
  if (SinglePartition(lower, upper)) {
    stmt->BindBlob(2, EncodeKey(lower->partition_key));
    if (lower->row_key) stmt->BindBlob(3, EncodeKey(*lower->row_key));
    if (upper->row_key) stmt->BindBlob(5, EncodeKey(*upper->row_key));
    return;
  }
  if (lower) BindBound(stmt, *lower, 2);
  if (upper) BindBound(stmt, *upper, 4);
}

}  // namespace

Status SqliteStore::GetEntityRow(const std::string& account, const std::string& table,
                                 const std::string& partition_key, const std::string& row_key,
                                 const RowVisitor& visit) {
  ReadLease lease(this, ReadLease::kPoint);
  Connection* c = lease.conn();
  if (!IsEncodableKey(partition_key) || !IsEncodableKey(row_key)) {
    // Such keys are never stored; their encodings would alias others.
    int64_t id = 0;
    Status s = LookupTable(c, account, table, &id);
    if (!s.ok()) return s;
    return Status::NotFound();
  }
  // One statement, so one snapshot for the table lookup and the row read:
  // no row means no table, a NULL ts means no entity (ts is NOT NULL).
  // Bound without copies (the statement goes before these).
  const std::string lower = LowerAscii(table);
  const std::string pk = EncodeKey(partition_key);
  const std::string rk = EncodeKey(row_key);
  Stmt stmt;
  Status s = c->Prepare(
      "SELECT e.ts, e.props FROM tables t LEFT JOIN entities e "
      "ON e.table_id = t.id AND e.pk = ?3 AND e.rk = ?4 "
      "WHERE t.account = ?1 AND t.name_lower = ?2",
      &stmt);
  if (!s.ok()) return s;
  stmt.BindTextNoCopy(1, account);
  stmt.BindTextNoCopy(2, lower);
  stmt.BindBlobNoCopy(3, pk);
  stmt.BindBlobNoCopy(4, rk);
  int rc = stmt.Step();
  if (rc == SQLITE_DONE) return Status::TableNotFound(table);
  if (rc != SQLITE_ROW) return SqlStatus(c->db, rc, "get entity");
  if (stmt.ColumnType(0) == SQLITE_NULL) return Status::NotFound();
  EntityRow row;
  row.partition_key = partition_key;
  row.row_key = row_key;
  row.timestamp = stmt.ColumnInt64(0);
  row.properties = stmt.ColumnBlob(1);
  return visit(row);
}

template <typename OnRow>
Status SqliteStore::ReadRange(ReadLease* lease, const std::string& account,
                              const std::string& table, int64_t id, std::string_view columns,
                              std::optional<KeyBound> lower, std::optional<KeyBound> upper,
                              OnRow&& on_row) {
  Connection* c = lease->conn();
  // After a hand-over, the partitions after the one it stopped in, when the
  // range goes on past it.
  std::optional<KeyRange> later;
  while (true) {
    std::optional<EntityKey> stopped;  // the row a hand-over came after
    {
      std::string sql = "SELECT ";
      sql += columns;
      sql += " FROM entities WHERE table_id = ?1";
      AppendRangeSql(lower, upper, &sql);
      sql += " ORDER BY pk, rk";
      Stmt stmt;
      Status s = c->Prepare(sql, &stmt);
      if (!s.ok()) return s;
      stmt.BindInt64(1, id);
      BindRange(&stmt, lower, upper);
      int rc;
      while ((rc = stmt.Step()) == SQLITE_ROW) {
        bool done = false;
        s = on_row(stmt, &done);
        if (!s.ok() || done) return s;
        if (lease->ShouldHandOver()) {
          stopped.emplace();
          s = DecodeKeyInto(stmt.ColumnBlob(0), &stopped->partition_key);
          if (s.ok()) s = DecodeKeyInto(stmt.ColumnBlob(1), &stopped->row_key);
          if (!s.ok()) return s;
          break;
        }
      }
      if (!stopped && rc != SQLITE_DONE) return SqlStatus(c->db, rc, "scan");
    }  // the statement is reset: none runs while others use the connection
    if (stopped) {
      // In memory, others wait for the one connection: they go first
      // (ReadLease's turns). The rest of the range is read as the table is
      // then: each row once, in key order (store.h). The table must still
      // be the one the read began in, not one dropped and created again
      // meanwhile.
      lease->HandOver();
      int64_t now_id = 0;
      Status s = c->Exec("BEGIN");
      if (s.ok()) s = LookupTable(c, account, table, &now_id);
      if (!s.ok()) return s;
      if (now_id != id) return Status::TableNotFound(table);
      // The rest of the stopped row's partition ("pk = ? AND rk > ?"), then
      // the partitions after it ("pk > ?"): a row value bound
      // "(pk, rk) > (?, ?)" would be checked on every row that follows.
      if (!upper || upper->partition_key != stopped->partition_key) {
        later = KeyRange{KeyBound{stopped->partition_key, std::nullopt, false}, std::move(upper)};
        upper = KeyBound{stopped->partition_key, std::nullopt, true};
      }
      lower = KeyBound{std::move(stopped->partition_key), std::move(stopped->row_key), false};
      continue;
    }
    if (!later) return Status::Ok();
    lower = std::move(later->lower);
    upper = std::move(later->upper);
    later.reset();
  }
}

Status SqliteStore::ScanRows(const std::string& account, const std::string& table,
                             const ScanRequest& request, const RowVisitor& visit,
                             std::optional<EntityKey>* next) {
  next->reset();
  ReadLease lease(this, request.point_reader ? ReadLease::kShortScan : ReadLease::kScan);
  Connection* c = lease.conn();
  // One read transaction: every range of the page sees one snapshot. In
  // memory, one per turn on the connection (ReadRange).
  Status s = c->Exec("BEGIN");
  int64_t id = 0;
  if (s.ok()) s = LookupTable(c, account, table, &id);
  if (!s.ok()) return s;

  RowPage page(request, visit, next);
  for (const KeyRange& range : request.ranges) {
    s = ReadRange(&lease, account, table, id, "pk, rk, ts, props",
                  EffectiveLower(range.lower, request.start), range.upper,
                  [&page](Stmt& row, bool* done) {
                    Status st = page.Offer(row.ColumnBlob(0), row.ColumnBlob(1), row.ColumnInt64(2),
                                           row.ColumnBlob(3));
                    *done = page.full();
                    return st;
                  });
    if (!s.ok() || page.full()) return s;
  }
  return Status::Ok();
}

Status SqliteStore::GetUsageInMemory(std::vector<AccountUsage>* accounts) {
  // Counted in one statement, the rows would hold the one connection for
  // the whole count: each table's rows are counted by a scan of their keys,
  // which hands the connection over to requests.
  ReadLease lease(this, ReadLease::kScan);
  Connection* c = lease.conn();
  Status s = c->Exec("BEGIN");
  if (!s.ok()) return s;
  struct Table {
    std::string account, name;
    int64_t id;
  };
  std::vector<Table> tables;
  s = Query(c, "SELECT account, name, id FROM tables ORDER BY account", [&](Stmt& row) {
    tables.push_back(
        Table{std::string(row.ColumnText(0)), std::string(row.ColumnText(1)), row.ColumnInt64(2)});
  });
  if (!s.ok()) return s;
  for (const Table& t : tables) {
    // After a hand-over the table may have been dropped since it was listed.
    int64_t id = 0;
    s = LookupTable(c, t.account, t.name, &id);
    uint64_t rows = 0;
    if (s.ok() && id == t.id) {
      s = ReadRange(&lease, t.account, t.name, t.id, "pk, rk", std::nullopt, std::nullopt,
                    [&rows](Stmt&, bool*) {
                      ++rows;
                      return Status::Ok();
                    });
    } else if (s.ok()) {
      s = Status::TableNotFound(t.name);
    }
    if (s.code() == StatusCode::kTableNotFound) continue;  // dropped meanwhile
    if (!s.ok()) return s;
    if (accounts->empty() || accounts->back().account != t.account) {
      accounts->push_back(AccountUsage{t.account, 0, 0});
    }
    ++accounts->back().tables;
    accounts->back().entities += rows;
  }
  return Status::Ok();
}

}  // namespace cerulean::storage
