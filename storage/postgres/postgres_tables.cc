// PostgresStore: tables, table ACLs and service properties (the catalog and
// the account documents), ResetAccount and GetUsage. See postgres_store.h;
// the schema is in postgres_store.cc.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "storage/codec.h"
#include "storage/postgres/postgres_internal.h"
#include "storage/postgres/postgres_store.h"
#include "storage/store_ops.h"

namespace cerulean::storage {

Status PostgresStore::CreateTable(const std::string& account, const std::string& table) {
  const std::string lower = LowerAscii(table);
  const std::string key = EncodeKey(table);
  return Transaction([&](PgConnection* c, std::string* sqlstate) {
    PgResult r;
    Status s = c->Exec(
        "INSERT INTO cerulean_tables(account, name_lower, id, name, name_key) "
        "VALUES ($1, $2, nextval('cerulean_table_ids'), $3, $4) ON CONFLICT DO NOTHING",
        PgParams().Text(account).Text(lower).Text(table).Bytes(key), &r, sqlstate);
    if (s.ok() && r.Affected() == 0) return Status::TableAlreadyExists(table);
    return s;
  });
}

Status PostgresStore::DeleteTable(const std::string& account, const std::string& table) {
  const std::string lower = LowerAscii(table);
  Status status = Transaction([&](PgConnection* c, std::string* sqlstate) {
    PgResult r;
    Status s =
        c->Exec("DELETE FROM cerulean_tables WHERE account = $1 AND name_lower = $2 RETURNING id",
                PgParams().Text(account).Text(lower), &r, sqlstate);
    if (!s.ok()) return s;
    if (r.rows() == 0) return Status::TableNotFound(table);
    return c->Exec("INSERT INTO cerulean_doomed_tables(table_id) VALUES ($1)",
                   PgParams().Int64(r.Int64(0, 0)), nullptr, sqlstate);
  });
  if (status.ok()) WakeReaper();
  return status;
}

Result<std::string> PostgresStore::GetTable(const std::string& account, const std::string& table) {
  Timed timed(this);
  PgLease c(&pool_);
  if (!c.status().ok()) return c.status();
  int64_t id = 0;
  std::string name;
  Status s = PgLookupTable(c.get(), account, table, &id, /*lock=*/false, &name);
  if (!s.ok()) return s;
  return name;
}

Status PostgresStore::ScanTables(const std::string& account, const std::string& start,
                                 const std::function<bool(const std::string&)>& visit) {
  // Pages of names are read with a connection held and visited without, so
  // `visit` may call back into the store.
  constexpr int64_t kPage = 256;
  std::string from = EncodeKey(start);
  bool inclusive = true;
  while (true) {
    std::vector<std::string> names;
    {
      Timed timed(this);
      PgLease c(&pool_);
      if (!c.status().ok()) return c.status();
      PgResult r;
      Status s = c->Exec(inclusive ? "SELECT name, name_key FROM cerulean_tables WHERE account = "
                                     "$1 AND name_key >= $2 ORDER BY name_key LIMIT $3"
                                   : "SELECT name, name_key FROM cerulean_tables WHERE account = "
                                     "$1 AND name_key > $2 ORDER BY name_key LIMIT $3",
                         PgParams().Text(account).Bytes(from).Int64(kPage), &r);
      if (!s.ok()) return s;
      for (int i = 0; i < r.rows(); ++i) {
        names.emplace_back(r.View(i, 0));
        from = std::string(r.View(i, 1));
      }
    }
    inclusive = false;
    for (const auto& name : names) {
      if (!visit(name)) return Status::Ok();
    }
    if (names.size() < static_cast<size_t>(kPage)) return Status::Ok();
  }
}

Result<std::string> PostgresStore::GetTableAcl(const std::string& account,
                                               const std::string& table) {
  Timed timed(this);
  PgLease c(&pool_);
  if (!c.status().ok()) return c.status();
  PgResult r;
  Status s = c->Exec("SELECT acl FROM cerulean_tables WHERE account = $1 AND name_lower = $2",
                     PgParams().Text(account).Text(LowerAscii(table)), &r);
  if (!s.ok()) return s;
  if (r.rows() == 0) return Status::TableNotFound(table);
  return std::string(r.View(0, 0));
}

Status PostgresStore::SetTableAcl(const std::string& account, const std::string& table,
                                  const std::string& acl) {
  const std::string lower = LowerAscii(table);
  return Transaction([&](PgConnection* c, std::string* sqlstate) {
    PgResult r;
    Status s = c->Exec("UPDATE cerulean_tables SET acl = $3 WHERE account = $1 AND name_lower = $2",
                       PgParams().Text(account).Text(lower).Text(acl), &r, sqlstate);
    if (s.ok() && r.Affected() == 0) return Status::TableNotFound(table);
    return s;
  });
}

Result<std::string> PostgresStore::GetServiceProperties(const std::string& account) {
  Timed timed(this);
  PgLease c(&pool_);
  if (!c.status().ok()) return c.status();
  PgResult r;
  Status s = c->Exec("SELECT service_properties FROM cerulean_accounts WHERE account = $1",
                     PgParams().Text(account), &r);
  if (!s.ok()) return s;
  if (r.rows() == 0) return std::string();
  return std::string(r.View(0, 0));
}

Status PostgresStore::SetServiceProperties(const std::string& account, const std::string& props) {
  return Transaction([&](PgConnection* c, std::string* sqlstate) {
    return c->Exec(
        "INSERT INTO cerulean_accounts(account, service_properties) VALUES ($1, $2) "
        "ON CONFLICT (account) DO UPDATE SET service_properties = excluded.service_properties",
        PgParams().Text(account).Text(props), nullptr, sqlstate);
  });
}

Status PostgresStore::ResetAccount(const std::string& account) {
  Status status = Transaction([&](PgConnection* c, std::string* sqlstate) {
    const char* kSteps[] = {
        "INSERT INTO cerulean_doomed_tables(table_id) SELECT id FROM cerulean_tables WHERE "
        "account = $1",
        "DELETE FROM cerulean_tables WHERE account = $1",
        "DELETE FROM cerulean_accounts WHERE account = $1",
    };
    for (const char* sql : kSteps) {
      Status s = c->Exec(sql, PgParams().Text(account), nullptr, sqlstate);
      if (!s.ok()) return s;
    }
    return Status::Ok();
  });
  if (status.ok()) WakeReaper();
  return status;
}

Status PostgresStore::GetUsage(std::vector<AccountUsage>* accounts, uint64_t* bytes) {
  accounts->clear();
  *bytes = 0;
  Timed timed(this);
  PgLease c(&pool_, PgDeadline::kLong);
  if (!c.status().ok()) return c.status();
  // One snapshot for both counts.
  Status s = c->Command("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  std::map<std::string, AccountUsage> by_account;
  PgResult r;
  if (s.ok()) {
    s = c->Exec("SELECT account, count(*) FROM cerulean_tables GROUP BY account", PgParams(), &r);
  }
  for (int i = 0; s.ok() && i < r.rows(); ++i) {
    std::string account(r.View(i, 0));
    AccountUsage& u = by_account[account];
    u.account = account;
    u.tables = static_cast<uint64_t>(r.Int64(i, 1));
  }
  if (s.ok()) {
    s = c->Exec(
        "SELECT t.account, count(*) FROM cerulean_tables t JOIN cerulean_entities e ON "
        "e.table_id = t.id GROUP BY t.account",
        PgParams(), &r);
  }
  for (int i = 0; s.ok() && i < r.rows(); ++i) {
    by_account[std::string(r.View(i, 0))].entities = static_cast<uint64_t>(r.Int64(i, 1));
  }
  c->RollbackIfActive();
  if (!s.ok()) return s;
  for (auto& [name, usage] : by_account) accounts->push_back(std::move(usage));
  // PostgreSQL and YugabyteDB; elsewhere the size stays 0.
  if (c->Exec("SELECT (pg_total_relation_size('cerulean_entities') + "
              "pg_total_relation_size('cerulean_tables'))::bigint",
              PgParams(), &r)
          .ok() &&
      r.rows() == 1) {
    *bytes = static_cast<uint64_t>(r.Int64(0, 0));
  }
  return Status::Ok();
}

}  // namespace cerulean::storage
