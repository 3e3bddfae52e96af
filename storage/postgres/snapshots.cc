// PostgresStore's snapshots (storage/README.md, "PostgreSQL backend"): saved
// rows live in cerulean_entities under table ids no catalog row names, so
// they shard like live rows; save and restore are one transaction each.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "storage/codec.h"
#include "storage/edm_text.h"
#include "storage/postgres/postgres_internal.h"
#include "storage/postgres/postgres_store.h"
#include "storage/store_ops.h"

namespace cerulean::storage {

namespace {

// Makes Transaction run the body again: a concurrent transaction took a
// key (a snapshot's or a table's name) between this one's look and write.
Status RaceLost(std::string* sqlstate, const std::string& what) {
  *sqlstate = "40001";
  return Status::Busy("concurrent change to " + what);
}

// The id of snapshot `name` of `account`, locked against a concurrent save,
// restore or delete of it until the transaction ends; kNotFound if none.
Status LockSnapshot(PgConnection* c, const std::string& account, const std::string& name,
                    int64_t* id, std::string* sqlstate) {
  PgResult r;
  Status s =
      c->Exec("SELECT id FROM cerulean_snapshots WHERE account = $1 AND name = $2 FOR UPDATE",
              PgParams().Text(account).Text(name), &r, sqlstate);
  if (!s.ok()) return s;
  if (r.rows() == 0) return Status::NotFound("snapshot " + name);
  *id = r.Int64(0, 0);
  return Status::Ok();
}

// Deletes snapshot `id`; the reaper deletes its saved rows.
Status DropSnapshot(PgConnection* c, int64_t id, std::string* sqlstate) {
  const char* kSteps[] = {
      "INSERT INTO cerulean_doomed_tables(table_id) SELECT data_id FROM cerulean_snapshot_tables "
      "WHERE snapshot_id = $1",
      "DELETE FROM cerulean_snapshot_tables WHERE snapshot_id = $1",
      "DELETE FROM cerulean_snapshots WHERE id = $1",
  };
  for (const char* sql : kSteps) {
    Status s = c->Exec(sql, PgParams().Int64(id), nullptr, sqlstate);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

struct LiveTable {
  int64_t id = 0;
  std::string name, acl;
};

// Lists the account's live tables and locks their catalog rows until the
// transaction ends: writers (Apply reads the row FOR SHARE), Delete Table
// and reset wait, so every statement after this sees the tables' rows as
// they are now, and other nodes see the transaction's changes all at once.
Status LockAccountTables(PgConnection* c, const std::string& account, std::vector<LiveTable>* out,
                         std::string* sqlstate) {
  out->clear();
  PgResult r;
  Status s =
      c->Exec("SELECT id, name, acl FROM cerulean_tables WHERE account = $1 ORDER BY id FOR UPDATE",
              PgParams().Text(account), &r, sqlstate);
  if (!s.ok()) return s;
  for (int i = 0; i < r.rows(); ++i) {
    out->push_back({r.Int64(i, 0), std::string(r.View(i, 1)), std::string(r.View(i, 2))});
  }
  return Status::Ok();
}

// A fresh id from cerulean_table_ids.
Status NextTableId(PgConnection* c, int64_t* id, std::string* sqlstate) {
  PgResult r;
  Status s = c->Exec("SELECT nextval('cerulean_table_ids')", PgParams(), &r, sqlstate);
  if (s.ok()) *id = r.Int64(0, 0);
  return s;
}

// Copies every row of table `from` into table `to`; *rows: how many.
Status CopyRows(PgConnection* c, int64_t from, int64_t to, int64_t* rows, std::string* sqlstate) {
  PgResult r;
  Status s = c->Exec(
      "INSERT INTO cerulean_entities(table_id, pk, rk, ts, props) SELECT $1, pk, rk, ts, props "
      "FROM cerulean_entities WHERE table_id = $2",
      PgParams().Int64(to).Int64(from), &r, sqlstate);
  if (s.ok()) *rows = r.Affected();
  return s;
}

}  // namespace

Status PostgresStore::SaveSnapshot(const std::string& account, const std::string& name,
                                   SnapshotInfo* info) {
  SnapshotInfo saved;
  bool replaced = false;
  Status status = Transaction(PgDeadline::kLong, [&](PgConnection* c, std::string* sqlstate) {
    saved = SnapshotInfo{};
    saved.name = name;
    replaced = false;
    std::vector<LiveTable> tables;
    Status s = LockAccountTables(c, account, &tables, sqlstate);
    if (!s.ok()) return s;
    int64_t id = 0;
    s = LockSnapshot(c, account, name, &id, sqlstate);
    if (s.ok()) {
      s = DropSnapshot(c, id, sqlstate);
      replaced = true;
    }
    if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
    saved.created = NowTicks();
    PgResult r;
    s = c->Exec(
        "INSERT INTO cerulean_snapshots(account, name, id, created, service_properties) "
        "SELECT $1, $2, nextval('cerulean_snapshot_ids'), $3, (SELECT service_properties FROM "
        "cerulean_accounts WHERE account = $1) ON CONFLICT DO NOTHING RETURNING id",
        PgParams().Text(account).Text(name).Int64(saved.created), &r, sqlstate);
    if (!s.ok()) return s;
    if (r.rows() == 0) return RaceLost(sqlstate, "snapshot " + name);
    id = r.Int64(0, 0);
    for (size_t ord = 0; ord < tables.size(); ++ord) {
      const LiveTable& t = tables[ord];
      int64_t data_id = 0, rows = 0;
      s = NextTableId(c, &data_id, sqlstate);
      if (s.ok()) s = CopyRows(c, t.id, data_id, &rows, sqlstate);
      if (s.ok()) {
        s = c->Exec(
            "INSERT INTO cerulean_snapshot_tables(snapshot_id, ord, name, acl, entities, data_id, "
            "live_id) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            PgParams()
                .Int64(id)
                .Int64(static_cast<int64_t>(ord))
                .Text(t.name)
                .Text(t.acl)
                .Int64(rows)
                .Int64(data_id)
                .Int64(t.id),
            nullptr, sqlstate);
      }
      if (!s.ok()) return s;
      saved.tables += 1;
      saved.entities += static_cast<uint64_t>(rows);
    }
    return Status::Ok();
  });
  if (status.ok() && replaced) WakeReaper();
  if (status.ok() && info != nullptr) *info = std::move(saved);
  return status;
}

Status PostgresStore::RestoreSnapshot(const std::string& account, const std::string& name,
                                      RestoreStats* stats) {
  RestoreStats done;
  bool doomed = false;
  Status status = Transaction(PgDeadline::kLong, [&](PgConnection* c, std::string* sqlstate) {
    done = RestoreStats{};
    doomed = false;
    std::vector<LiveTable> tables;
    Status s = LockAccountTables(c, account, &tables, sqlstate);
    if (!s.ok()) return s;
    int64_t id = 0;
    s = LockSnapshot(c, account, name, &id, sqlstate);
    if (!s.ok()) return s;
    struct Saved {
      int64_t ord;
      std::string name, acl;
      int64_t data_id, live_id;
      bool kept = false;  // live table live_id is still this table: compared, not copied
    };
    std::vector<Saved> saved;
    PgResult r;
    s = c->Exec(
        "SELECT ord, name, acl, data_id, live_id FROM cerulean_snapshot_tables "
        "WHERE snapshot_id = $1 ORDER BY ord",
        PgParams().Int64(id), &r, sqlstate);
    if (!s.ok()) return s;
    for (int i = 0; i < r.rows(); ++i) {
      saved.push_back({r.Int64(i, 0), std::string(r.View(i, 1)), std::string(r.View(i, 2)),
                       r.Int64(i, 3), r.Int64(i, 4)});
    }
    std::map<int64_t, std::string> live;  // id -> name, of tables not kept
    for (const LiveTable& t : tables) live.emplace(t.id, t.name);
    for (Saved& t : saved) {
      auto it = live.find(t.live_id);
      t.kept = it != live.end() && it->second == t.name;
      if (t.kept) live.erase(it);
    }
    // Tables created, or dropped and created again, since: gone.
    for (const auto& [table_id, table_name] : live) {
      s = c->Exec("INSERT INTO cerulean_doomed_tables(table_id) VALUES ($1)",
                  PgParams().Int64(table_id), nullptr, sqlstate);
      if (s.ok()) {
        s = c->Exec("DELETE FROM cerulean_tables WHERE account = $1 AND name_lower = $2",
                    PgParams().Text(account).Text(LowerAscii(table_name)), nullptr, sqlstate);
      }
      if (!s.ok()) return s;
      doomed = true;
    }
    for (const Saved& t : saved) {
      const std::string lower = LowerAscii(t.name);
      if (t.kept) {
        // Rows that differ from the saved ones (timestamps and properties
        // compared) go; saved rows missing from the live table come back.
        // Both statements read the table; they write only what changed.
        PgResult removed, added;
        s = c->Exec("UPDATE cerulean_tables SET acl = $3 WHERE account = $1 AND name_lower = $2",
                    PgParams().Text(account).Text(lower).Text(t.acl), nullptr, sqlstate);
        if (s.ok()) {
          s = c->Exec(
              "DELETE FROM cerulean_entities e WHERE e.table_id = $1 AND NOT EXISTS (SELECT 1 "
              "FROM cerulean_entities s WHERE s.table_id = $2 AND s.pk = e.pk AND s.rk = e.rk "
              "AND s.ts = e.ts AND s.props = e.props)",
              PgParams().Int64(t.live_id).Int64(t.data_id), &removed, sqlstate);
        }
        if (s.ok()) {
          s = c->Exec(
              "INSERT INTO cerulean_entities(table_id, pk, rk, ts, props) SELECT $1, s.pk, s.rk, "
              "s.ts, s.props FROM cerulean_entities s WHERE s.table_id = $2 AND NOT EXISTS "
              "(SELECT 1 FROM cerulean_entities e WHERE e.table_id = $1 AND e.pk = s.pk AND "
              "e.rk = s.rk)",
              PgParams().Int64(t.live_id).Int64(t.data_id), &added, sqlstate);
        }
        if (!s.ok()) return s;
        if (removed.Affected() == 0 && added.Affected() == 0) {
          done.tables_kept += 1;
        } else {
          done.tables_patched += 1;
          done.entities_copied += static_cast<uint64_t>(added.Affected());
        }
        continue;
      }
      s = c->Exec(
          "INSERT INTO cerulean_tables(account, name_lower, id, name, name_key, acl) VALUES ($1, "
          "$2, nextval('cerulean_table_ids'), $3, $4, $5) ON CONFLICT DO NOTHING RETURNING id",
          PgParams().Text(account).Text(lower).Text(t.name).Bytes(EncodeKey(t.name)).Text(t.acl),
          &r, sqlstate);
      if (!s.ok()) return s;
      if (r.rows() == 0) return RaceLost(sqlstate, "table " + t.name);
      const int64_t table_id = r.Int64(0, 0);
      int64_t rows = 0;
      s = CopyRows(c, t.data_id, table_id, &rows, sqlstate);
      if (s.ok()) {
        // The next restore of this snapshot compares with the new table.
        s = c->Exec(
            "UPDATE cerulean_snapshot_tables SET live_id = $3 WHERE snapshot_id = $1 AND ord = $2",
            PgParams().Int64(id).Int64(t.ord).Int64(table_id), nullptr, sqlstate);
      }
      if (!s.ok()) return s;
      done.tables_copied += 1;
      done.entities_copied += static_cast<uint64_t>(rows);
    }
    s = c->Exec(
        "INSERT INTO cerulean_accounts(account, service_properties) SELECT $1, service_properties "
        "FROM cerulean_snapshots WHERE id = $2 AND service_properties IS NOT NULL "
        "ON CONFLICT (account) DO UPDATE SET service_properties = excluded.service_properties",
        PgParams().Text(account).Int64(id), &r, sqlstate);
    if (s.ok() && r.Affected() == 0) {
      s = c->Exec("DELETE FROM cerulean_accounts WHERE account = $1", PgParams().Text(account),
                  nullptr, sqlstate);
    }
    return s;
  });
  if (doomed) WakeReaper();
  if (status.ok() && stats != nullptr) *stats = done;
  return status;
}

Status PostgresStore::ListSnapshots(const std::string& account, std::vector<SnapshotInfo>* out) {
  out->clear();
  Timed timed(this);
  PgLease c(&pool_);
  if (!c.status().ok()) return c.status();
  PgResult r;
  Status s = c->Exec(
      "SELECT s.name, s.created, count(t.ord), COALESCE(sum(t.entities), 0)::bigint FROM "
      "cerulean_snapshots s LEFT JOIN cerulean_snapshot_tables t ON t.snapshot_id = s.id "
      "WHERE s.account = $1 GROUP BY s.id, s.name, s.created",
      PgParams().Text(account), &r);
  if (!s.ok()) return s;
  for (int i = 0; i < r.rows(); ++i) {
    out->push_back({std::string(r.View(i, 0)), r.Int64(i, 1), static_cast<uint64_t>(r.Int64(i, 2)),
                    static_cast<uint64_t>(r.Int64(i, 3))});
  }
  // Bytewise, as the embedded store orders them (not by the collation).
  std::sort(out->begin(), out->end(),
            [](const SnapshotInfo& a, const SnapshotInfo& b) { return a.name < b.name; });
  return Status::Ok();
}

Status PostgresStore::DeleteSnapshot(const std::string& account, const std::string& name) {
  Status status = Transaction([&](PgConnection* c, std::string* sqlstate) {
    int64_t id = 0;
    Status s = LockSnapshot(c, account, name, &id, sqlstate);
    if (s.ok()) s = DropSnapshot(c, id, sqlstate);
    return s;
  });
  if (status.ok()) WakeReaper();
  return status;
}

}  // namespace cerulean::storage
