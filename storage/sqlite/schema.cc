// SqliteStore: the on-disk schema and its migrations (storage/README.md,
// "Schema").
#include <string>

#include "storage/sqlite/sqlite_internal.h"

namespace cerulean::storage {

namespace {

// PRAGMA user_version of the schema below. persistent: never renumber; a
// schema change adds a version and a migration step in InitSchema().
constexpr int kSchemaVersion = 2;

// persistent: the on-disk schema of version 1 (storage/README.md).
constexpr const char* kSchemaV1[] = {
    // The catalog of live tables. AUTOINCREMENT guarantees an id is never
    // handed out twice, so rows of a dropped table that still await reaping
    // can never reappear under a new table of the same name.
    "CREATE TABLE tables("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  account TEXT NOT NULL,"
    "  name TEXT NOT NULL,"        // as created
    "  name_lower TEXT NOT NULL,"  // ASCII-lower-cased, for lookup
    "  name_key BLOB NOT NULL,"    // EncodeKey(name), for ordinal order
    "  acl TEXT NOT NULL DEFAULT '')",
    "CREATE UNIQUE INDEX tables_by_lower_name ON tables(account, name_lower)",
    "CREATE INDEX tables_by_name_key ON tables(account, name_key)",
    // Entities of every table, clustered by key so a key range is one index
    // range scan. pk and rk are EncodeKey() blobs, props an
    // EncodeProperties() blob, ts DateTime ticks.
    "CREATE TABLE entities("
    "  table_id INTEGER NOT NULL,"
    "  pk BLOB NOT NULL,"
    "  rk BLOB NOT NULL,"
    "  ts INTEGER NOT NULL,"
    "  props BLOB NOT NULL,"
    "  PRIMARY KEY(table_id, pk, rk)) WITHOUT ROWID",
    // Per-account documents.
    "CREATE TABLE accounts("
    "  account TEXT PRIMARY KEY,"
    "  service_properties TEXT NOT NULL) WITHOUT ROWID",
    // Ids of dropped tables whose entity rows are not yet all deleted.
    "CREATE TABLE doomed_tables(table_id INTEGER PRIMARY KEY)",
};

// persistent: added by version 2, snapshots (storage/README.md).
constexpr const char* kSchemaV2[] = {
    "CREATE TABLE snapshots("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  account TEXT NOT NULL,"
    "  name TEXT NOT NULL,"
    "  created INTEGER NOT NULL,"  // DateTime ticks
    "  service_properties TEXT)",  // NULL: the account had none
    "CREATE UNIQUE INDEX snapshots_by_name ON snapshots(account, name)",
    // One row per table saved; ord numbers the tables of a snapshot.
    // (live_id, live_writes, live_incarnation): the live table that still
    // holds exactly the saved rows while its write count is live_writes in
    // the store incarnation live_incarnation (SqliteStore::table_changes_).
    "CREATE TABLE snapshot_tables("
    "  snapshot_id INTEGER NOT NULL,"
    "  ord INTEGER NOT NULL,"
    "  name TEXT NOT NULL,"
    "  acl TEXT NOT NULL,"
    "  entities INTEGER NOT NULL,"
    "  live_id INTEGER NOT NULL,"
    "  live_writes INTEGER NOT NULL,"
    "  live_incarnation INTEGER NOT NULL,"
    "  PRIMARY KEY(snapshot_id, ord)) WITHOUT ROWID",
    "CREATE TABLE snapshot_entities("
    "  snapshot_id INTEGER NOT NULL,"
    "  ord INTEGER NOT NULL,"
    "  pk BLOB NOT NULL,"
    "  rk BLOB NOT NULL,"
    "  ts INTEGER NOT NULL,"
    "  props BLOB NOT NULL,"
    "  PRIMARY KEY(snapshot_id, ord, pk, rk)) WITHOUT ROWID",
};

}  // namespace

Status SqliteStore::InitSchema(Connection* w) {
  Status s;
  int version = 0;
  {
    Stmt stmt;
    s = w->Prepare("PRAGMA user_version", &stmt);
    if (!s.ok()) return s;
    int rc = stmt.Step();
    if (rc != SQLITE_ROW) return SqlStatus(w->db, rc, "user_version");
    version = static_cast<int>(stmt.ColumnInt64(0));
  }
  if (version > kSchemaVersion) {
    return Status::Corruption("database schema version " + std::to_string(version) +
                              " is newer than supported " + std::to_string(kSchemaVersion));
  }
  if (version < kSchemaVersion) {
    s = w->Exec("BEGIN IMMEDIATE");
    if (version < 1) {
      for (const char* sql : kSchemaV1) {
        if (s.ok()) s = w->Exec(sql);
      }
    }
    for (const char* sql : kSchemaV2) {
      if (s.ok()) s = w->Exec(sql);
    }
    if (s.ok()) s = w->Exec("PRAGMA user_version=" + std::to_string(kSchemaVersion));
    if (s.ok()) {
      s = w->Commit();
    } else {
      w->RollbackIfActive();
    }
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace cerulean::storage
