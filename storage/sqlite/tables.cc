// SqliteStore: tables, their ACLs, service properties, ResetAccount and
// GetUsage.
#include <filesystem>
#include <map>
#include <system_error>

#include "storage/codec.h"
#include "storage/sqlite/sqlite_internal.h"

namespace cerulean::storage {

Status SqliteStore::CreateTable(const std::string& account, const std::string& table) {
  return WriteTransaction([&](Connection* w) {
    Stmt stmt;
    Status s = w->Prepare(
        "INSERT INTO tables(account, name, name_lower, name_key) VALUES (?1, ?2, ?3, ?4)", &stmt);
    if (!s.ok()) return s;
    stmt.BindText(1, account);
    stmt.BindText(2, table);
    stmt.BindText(3, LowerAscii(table));
    stmt.BindBlob(4, EncodeKey(table));
    int rc = stmt.Step();
    if (rc == SQLITE_CONSTRAINT_UNIQUE) return Status::TableAlreadyExists(table);
    if (rc != SQLITE_DONE) return SqlStatus(w->db, rc, "create table");
    return Status::Ok();
  });
}

Status SqliteStore::DeleteTable(const std::string& account, const std::string& table) {
  Status status = WriteTransaction([&](Connection* w) {
    int64_t id = 0;
    Status s = LookupTable(w, account, table, &id);
    if (!s.ok()) return s;
    Stmt doom;
    s = w->Prepare("INSERT INTO doomed_tables(table_id) VALUES (?1)", &doom);
    if (!s.ok()) return s;
    doom.BindInt64(1, id);
    int rc = doom.Step();
    if (rc != SQLITE_DONE) return SqlStatus(w->db, rc, "doom table");
    Stmt drop;
    s = w->Prepare("DELETE FROM tables WHERE id = ?1", &drop);
    if (!s.ok()) return s;
    drop.BindInt64(1, id);
    rc = drop.Step();
    if (rc != SQLITE_DONE) return SqlStatus(w->db, rc, "drop table");
    doomed_in_transaction_.push_back(id);
    return Status::Ok();
  });
  if (status.ok()) WakeReaper();
  return status;
}

Result<std::string> SqliteStore::GetTable(const std::string& account, const std::string& table) {
  ReadLease lease(this);
  int64_t id = 0;
  std::string name;
  Status s = LookupTable(lease.conn(), account, table, &id, &name);
  if (!s.ok()) return s;
  return name;
}

Status SqliteStore::ScanTables(const std::string& account, const std::string& start,
                               const std::function<bool(const std::string&)>& visit) {
  // Pages of names are read with a connection held and visited without, so
  // `visit` may call back into the store.
  constexpr int kPage = 256;
  std::string from = EncodeKey(start);
  bool inclusive = true;
  while (true) {
    std::vector<std::string> names;
    {
      ReadLease lease(this);
      Connection* c = lease.conn();
      Stmt stmt;
      Status s = c->Prepare(inclusive ? "SELECT name, name_key FROM tables WHERE account = ?1 AND "
                                        "name_key >= ?2 ORDER BY name_key LIMIT ?3"
                                      : "SELECT name, name_key FROM tables WHERE account = ?1 AND "
                                        "name_key > ?2 ORDER BY name_key LIMIT ?3",
                            &stmt);
      if (!s.ok()) return s;
      stmt.BindText(1, account);
      stmt.BindBlob(2, from);
      stmt.BindInt64(3, kPage);
      int rc;
      while ((rc = stmt.Step()) == SQLITE_ROW) {
        names.emplace_back(stmt.ColumnText(0));
        from = std::string(stmt.ColumnBlob(1));
      }
      if (rc != SQLITE_DONE) return SqlStatus(c->db, rc, "scan tables");
    }
    inclusive = false;
    for (const auto& name : names) {
      if (!visit(name)) return Status::Ok();
    }
    if (names.size() < static_cast<size_t>(kPage)) return Status::Ok();
  }
}

Result<std::string> SqliteStore::GetTableAcl(const std::string& account, const std::string& table) {
  ReadLease lease(this);
  Connection* c = lease.conn();
  Stmt stmt;
  Status s = c->Prepare("SELECT acl FROM tables WHERE account = ?1 AND name_lower = ?2", &stmt);
  if (!s.ok()) return s;
  stmt.BindText(1, account);
  stmt.BindText(2, LowerAscii(table));
  int rc = stmt.Step();
  if (rc == SQLITE_DONE) return Status::TableNotFound(table);
  if (rc != SQLITE_ROW) return SqlStatus(c->db, rc, "get acl");
  return std::string(stmt.ColumnText(0));
}

Status SqliteStore::SetTableAcl(const std::string& account, const std::string& table,
                                const std::string& acl) {
  return WriteTransaction([&](Connection* w) {
    Stmt stmt;
    Status s =
        w->Prepare("UPDATE tables SET acl = ?3 WHERE account = ?1 AND name_lower = ?2", &stmt);
    if (!s.ok()) return s;
    stmt.BindText(1, account);
    stmt.BindText(2, LowerAscii(table));
    stmt.BindText(3, acl);
    int rc = stmt.Step();
    if (rc != SQLITE_DONE) return SqlStatus(w->db, rc, "set acl");
    if (sqlite3_changes(w->db) == 0) return Status::TableNotFound(table);
    return Status::Ok();
  });
}

Result<std::string> SqliteStore::GetServiceProperties(const std::string& account) {
  ReadLease lease(this);
  Connection* c = lease.conn();
  Stmt stmt;
  Status s = c->Prepare("SELECT service_properties FROM accounts WHERE account = ?1", &stmt);
  if (!s.ok()) return s;
  stmt.BindText(1, account);
  int rc = stmt.Step();
  if (rc == SQLITE_DONE) return std::string();
  if (rc != SQLITE_ROW) return SqlStatus(c->db, rc, "get service properties");
  return std::string(stmt.ColumnText(0));
}

Status SqliteStore::SetServiceProperties(const std::string& account, const std::string& props) {
  return WriteTransaction([&](Connection* w) {
    Stmt stmt;
    Status s = w->Prepare(
        "INSERT INTO accounts(account, service_properties) VALUES (?1, ?2) "
        "ON CONFLICT(account) DO UPDATE SET service_properties = excluded.service_properties",
        &stmt);
    if (!s.ok()) return s;
    stmt.BindText(1, account);
    stmt.BindText(2, props);
    int rc = stmt.Step();
    if (rc != SQLITE_DONE) return SqlStatus(w->db, rc, "set service properties");
    return Status::Ok();
  });
}

Status SqliteStore::ResetAccount(const std::string& account) {
  Status status = WriteTransaction([&](Connection* w) {
    Status s = Query(
        w, "SELECT id FROM tables WHERE account = ?1",
        [&](Stmt& row) { doomed_in_transaction_.push_back(row.ColumnInt64(0)); },
        std::string_view(account));
    if (!s.ok()) return s;
    const char* kSteps[] = {
        "INSERT INTO doomed_tables(table_id) SELECT id FROM tables WHERE account = ?1",
        "DELETE FROM tables WHERE account = ?1",
        "DELETE FROM accounts WHERE account = ?1",
    };
    for (const char* sql : kSteps) {
      Stmt stmt;
      s = w->Prepare(sql, &stmt);
      if (!s.ok()) return s;
      stmt.BindText(1, account);
      int rc = stmt.Step();
      if (rc != SQLITE_DONE) return SqlStatus(w->db, rc, "reset account");
    }
    return Status::Ok();
  });
  if (status.ok()) WakeReaper();
  return status;
}

Status SqliteStore::GetUsage(std::vector<AccountUsage>* accounts, uint64_t* bytes) {
  accounts->clear();
  *bytes = 0;
  if (options_.in_memory) return GetUsageInMemory(accounts);
  ReadLease lease(this);
  Connection* c = lease.conn();
  // One snapshot for both counts.
  Status s = c->Exec("BEGIN");
  std::map<std::string, AccountUsage> by_account;
  if (s.ok()) {
    Stmt tables;
    s = c->Prepare("SELECT account, COUNT(*) FROM tables GROUP BY account", &tables);
    int rc = SQLITE_DONE;
    while (s.ok() && (rc = tables.Step()) == SQLITE_ROW) {
      std::string account(tables.ColumnText(0));
      AccountUsage& u = by_account[account];
      u.account = account;
      u.tables = static_cast<uint64_t>(tables.ColumnInt64(1));
    }
    if (s.ok() && rc != SQLITE_DONE) s = SqlStatus(c->db, rc, "count tables");
  }
  if (s.ok()) {
    // Rows of dropped tables awaiting the reaper have no `tables` row.
    Stmt entities;
    s = c->Prepare(
        "SELECT t.account, COUNT(*) FROM tables t JOIN entities e ON e.table_id = t.id GROUP BY "
        "t.account",
        &entities);
    int rc = SQLITE_DONE;
    while (s.ok() && (rc = entities.Step()) == SQLITE_ROW) {
      by_account[std::string(entities.ColumnText(0))].entities =
          static_cast<uint64_t>(entities.ColumnInt64(1));
    }
    if (s.ok() && rc != SQLITE_DONE) s = SqlStatus(c->db, rc, "count entities");
  }
  c->RollbackIfActive();
  if (!s.ok()) return s;
  for (auto& [name, usage] : by_account) accounts->push_back(std::move(usage));
  if (!options_.in_memory) {
    for (const char* suffix : {"", "-wal", "-shm"}) {
      std::error_code ec;
      auto size = std::filesystem::file_size(options_.path + suffix, ec);
      if (!ec) *bytes += size;
    }
  }
  return Status::Ok();
}

}  // namespace cerulean::storage
