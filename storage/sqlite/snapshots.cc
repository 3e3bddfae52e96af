// SqliteStore: snapshots of an account (storage/README.md, "Snapshots"):
// save, restore (patching only what was written since), list, delete, and
// the per-table write counts and key log a restore relies on.
#include <algorithm>
#include <set>
#include <string_view>

#include "storage/codec.h"
#include "storage/sqlite/sqlite_internal.h"

namespace cerulean::storage {

namespace {

// The id of snapshot `name` of `account`, or kNotFound.
template <typename Conn>
Status LookupSnapshot(Conn* c, const std::string& account, const std::string& name, int64_t* id) {
  *id = 0;
  Status s = Query(
      c, "SELECT id FROM snapshots WHERE account = ?1 AND name = ?2",
      [&](Stmt& row) { *id = row.ColumnInt64(0); }, std::string_view(account),
      std::string_view(name));
  if (s.ok() && *id == 0) return Status::NotFound("snapshot " + name);
  return s;
}

// Deletes snapshot `id` and its rows.
template <typename Conn>
Status DropSnapshot(Conn* c, int64_t id) {
  Status s = Execute(c, "DELETE FROM snapshot_entities WHERE snapshot_id = ?1", id);
  if (s.ok()) s = Execute(c, "DELETE FROM snapshot_tables WHERE snapshot_id = ?1", id);
  if (s.ok()) s = Execute(c, "DELETE FROM snapshots WHERE id = ?1", id);
  return s;
}

}  // namespace

uint64_t SqliteStore::TableWrites(int64_t table_id) const {
  auto it = table_changes_.find(table_id);
  return it == table_changes_.end() ? 0 : it->second.writes;
}

void SqliteStore::LogKey(TableChanges* changes, std::string_view pk, std::string_view rk) {
  const size_t bytes_before = changes->LogBytes();
  const size_t keys_before = changes->keys.size();
  auto& keys = changes->keys;
  if (keys.size() >= kMaxLoggedKeys || changes->key_bytes >= kMaxLoggedKeyBytes) {
    // Drop the older half: a restore to a state before what remains copies
    // the table whole.
    const size_t drop = std::max<size_t>(1, keys.size() / 2);
    changes->logged_from = keys[drop - 1].write;
    for (size_t i = 0; i < drop; ++i) changes->key_bytes -= keys[i].pk.size() + keys[i].rk.size();
    keys.erase(keys.begin(), keys.begin() + static_cast<ptrdiff_t>(drop));
  }
  keys.push_back({changes->writes, std::string(pk), std::string(rk)});
  changes->key_bytes += pk.size() + rk.size();
  changes->last_logged = ++key_log_clock_;
  key_log_bytes_ = key_log_bytes_ - bytes_before + changes->LogBytes();
  key_log_keys_ = key_log_keys_ - keys_before + keys.size();
  if (key_log_bytes_ > kMaxKeyLogBytes) EvictKeyLogs(changes);
}

void SqliteStore::ClearKeyLog(TableChanges* changes) {
  key_log_bytes_ -= changes->LogBytes();
  key_log_keys_ -= changes->keys.size();
  std::vector<TableChanges::Key>().swap(changes->keys);  // frees the slots too
  changes->key_bytes = 0;
  changes->logged_from = changes->writes;
}

void SqliteStore::EvictKeyLogs(const TableChanges* keep) {
  std::vector<std::pair<uint64_t, TableChanges*>> logs;  // (last_logged, table)
  for (auto& [id, changes] : table_changes_) {
    if (&changes != keep && changes.keys.capacity() > 0) {
      logs.emplace_back(changes.last_logged, &changes);
    }
  }
  std::sort(logs.begin(), logs.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  // Down to 3/4 of the bound, so that the next eviction is ~16 MiB of keys
  // away: the sort is paid once per that much logging.
  for (const auto& [when, changes] : logs) {
    if (key_log_bytes_ <= kMaxKeyLogBytes / 4 * 3) break;
    ClearKeyLog(changes);
  }
}

void SqliteStore::ForgetDoomedTables() {
  for (int64_t id : doomed_in_transaction_) {
    auto it = table_changes_.find(id);
    if (it == table_changes_.end()) continue;
    ClearKeyLog(&it->second);
    table_changes_.erase(it);
  }
  doomed_in_transaction_.clear();
}

void SqliteStore::PublishKeyLogFigures() {
  key_log_bytes_figure_.store(key_log_bytes_, std::memory_order_relaxed);
  key_log_keys_figure_.store(key_log_keys_, std::memory_order_relaxed);
  // A node of the map is the key-value pair and the next pointer.
  using Node = std::pair<const int64_t, TableChanges>;
  write_counts_bytes_figure_.store(table_changes_.size() * (sizeof(Node) + sizeof(void*)) +
                                       table_changes_.bucket_count() * sizeof(void*),
                                   std::memory_order_relaxed);
  write_counts_tables_figure_.store(table_changes_.size(), std::memory_order_relaxed);
}

std::vector<StoreGauge> SqliteStore::Gauges() const {
  auto figure = [](std::string name, const char* description, const std::atomic<uint64_t>& value) {
    return StoreGauge{std::move(name), description, false, value.load(std::memory_order_relaxed)};
  };
  const std::string key_log = "key_log", write_counts = "write_counts";
  return {
      figure(key_log + std::string(kMemoryBytesSuffix),
             "Bytes of the keys written since the oldest snapshot, per table.",
             key_log_bytes_figure_),
      figure(key_log + std::string(kMemoryEntriesSuffix), "Keys logged.", key_log_keys_figure_),
      figure(write_counts + std::string(kMemoryBytesSuffix),
             "Bytes of the write counts of the live tables written.", write_counts_bytes_figure_),
      figure(write_counts + std::string(kMemoryEntriesSuffix), "Tables counted.",
             write_counts_tables_figure_),
  };
}

Status SqliteStore::UpdateKeyLogging(Connection* w) {
  bool any = false;
  Status s = Query(w, "SELECT 1 FROM snapshots LIMIT 1", [&](Stmt&) { any = true; });
  if (!s.ok()) return s;
  log_keys_ = any;
  if (!any) {
    for (auto& [id, changes] : table_changes_) ClearKeyLog(&changes);
  }
  return Status::Ok();
}

Status SqliteStore::SaveSnapshot(const std::string& account, const std::string& name,
                                 SnapshotInfo* info) {
  SnapshotInfo saved;
  saved.name = name;
  const std::string_view acct(account);
  Status status = WriteTransaction([&](Connection* w) {
    int64_t id = 0;
    Status s = LookupSnapshot(w, account, name, &id);
    if (s.ok()) s = DropSnapshot(w, id);
    if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
    saved.created = NowTicks();
    s = Execute(w,
                "INSERT INTO snapshots(account, name, created, service_properties) SELECT ?1, "
                "?2, ?3, (SELECT service_properties FROM accounts WHERE account = ?1)",
                acct, std::string_view(name), saved.created);
    if (!s.ok()) return s;
    id = sqlite3_last_insert_rowid(w->db);
    struct Table {
      int64_t id;
      std::string name, acl;
    };
    std::vector<Table> tables;
    s = Query(
        w, "SELECT id, name, acl FROM tables WHERE account = ?1 ORDER BY id",
        [&](Stmt& row) {
          tables.push_back(
              {row.ColumnInt64(0), std::string(row.ColumnText(1)), std::string(row.ColumnText(2))});
        },
        acct);
    for (int64_t ord = 0; s.ok() && ord < static_cast<int64_t>(tables.size()); ++ord) {
      const Table& t = tables[static_cast<size_t>(ord)];
      s = Execute(w,
                  "INSERT INTO snapshot_entities(snapshot_id, ord, pk, rk, ts, props) "
                  "SELECT ?1, ?2, pk, rk, ts, props FROM entities WHERE table_id = ?3",
                  id, ord, t.id);
      if (!s.ok()) break;
      const int64_t rows = sqlite3_changes64(w->db);
      s = Execute(w,
                  "INSERT INTO snapshot_tables(snapshot_id, ord, name, acl, entities, live_id, "
                  "live_writes, live_incarnation) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                  id, ord, std::string_view(t.name), std::string_view(t.acl), rows, t.id,
                  static_cast<int64_t>(TableWrites(t.id)), static_cast<int64_t>(incarnation_));
      saved.tables += 1;
      saved.entities += static_cast<uint64_t>(rows);
    }
    if (s.ok()) log_keys_ = true;
    return s;
  });
  if (status.ok() && info != nullptr) *info = std::move(saved);
  return status;
}

Status SqliteStore::RestoreSnapshot(const std::string& account, const std::string& name,
                                    RestoreStats* stats) {
  RestoreStats done;
  bool doomed = false;
  const std::string_view acct(account);
  Status status = WriteTransaction([&](Connection* w) {
    int64_t id = 0;
    Status s = LookupSnapshot(w, account, name, &id);
    if (!s.ok()) return s;
    struct Saved {
      int64_t ord;
      std::string name, acl;
      int64_t entities, live_id, live_writes, live_incarnation;
      bool kept = false;  // the live table live_id is this one, or is patched into it
    };
    std::vector<Saved> saved;
    s = Query(
        w,
        "SELECT ord, name, acl, entities, live_id, live_writes, live_incarnation "
        "FROM snapshot_tables WHERE snapshot_id = ?1 ORDER BY ord",
        [&](Stmt& row) {
          saved.push_back({row.ColumnInt64(0), std::string(row.ColumnText(1)),
                           std::string(row.ColumnText(2)), row.ColumnInt64(3), row.ColumnInt64(4),
                           row.ColumnInt64(5), row.ColumnInt64(6)});
        },
        id);
    // Live tables: kept iff still exactly the saved one, else dropped.
    std::unordered_map<int64_t, std::string> live;  // id -> name
    if (s.ok()) {
      s = Query(
          w, "SELECT id, name FROM tables WHERE account = ?1",
          [&](Stmt& row) { live.emplace(row.ColumnInt64(0), std::string(row.ColumnText(1))); },
          acct);
    }
    if (!s.ok()) return s;
    // A live table is kept (and patched if written) iff it is still the
    // one the snapshot table's rows were saved from or restored into.
    for (Saved& t : saved) {
      auto it = live.find(t.live_id);
      t.kept = it != live.end() && it->second == t.name &&
               static_cast<uint64_t>(t.live_incarnation) == incarnation_;
      if (t.kept) live.erase(it);
    }
    for (const auto& [table_id, table_name] : live) {
      s = Execute(w, "INSERT INTO doomed_tables(table_id) VALUES (?1)", table_id);
      if (s.ok()) s = Execute(w, "DELETE FROM tables WHERE id = ?1", table_id);
      if (!s.ok()) return s;
      doomed_in_transaction_.push_back(table_id);
      doomed = true;
    }
    for (const Saved& t : saved) {
      if (t.kept) {
        s = Execute(w, "UPDATE tables SET acl = ?2 WHERE id = ?1", t.live_id,
                    std::string_view(t.acl));
        bool restored = false;
        if (s.ok()) {
          s = PatchTable(w, id, t.ord, t.live_id, t.live_writes, t.entities, &done, &restored);
        }
        if (!s.ok()) return s;
        if (restored) continue;
        // Copied whole instead: the live table goes.
        s = Execute(w, "INSERT INTO doomed_tables(table_id) VALUES (?1)", t.live_id);
        if (s.ok()) s = Execute(w, "DELETE FROM tables WHERE id = ?1", t.live_id);
        if (!s.ok()) return s;
        doomed_in_transaction_.push_back(t.live_id);
        doomed = true;
      }
      // A fresh table id (AUTOINCREMENT: above every other), so the copy
      // appends to the end of the entities B-tree.
      {
        Stmt stmt;
        s = w->Prepare(
            "INSERT INTO tables(account, name, name_lower, name_key, acl) "
            "VALUES (?1, ?2, ?3, ?4, ?5)",
            &stmt);
        if (!s.ok()) return s;
        stmt.BindText(1, account);
        stmt.BindText(2, t.name);
        stmt.BindText(3, LowerAscii(t.name));
        stmt.BindBlob(4, EncodeKey(t.name));
        stmt.BindText(5, t.acl);
        s = RunToDone(w->db, stmt, "restore table");
        if (!s.ok()) return s;
      }
      const int64_t table_id = sqlite3_last_insert_rowid(w->db);
      s = Execute(w,
                  "INSERT INTO entities(table_id, pk, rk, ts, props) SELECT ?1, pk, rk, ts, props "
                  "FROM snapshot_entities WHERE snapshot_id = ?2 AND ord = ?3",
                  table_id, id, t.ord);
      if (!s.ok()) return s;
      done.entities_copied += static_cast<uint64_t>(sqlite3_changes64(w->db));
      // The new table holds exactly the saved rows: the next restore of
      // this snapshot keeps it unless it is written meanwhile.
      s = Execute(w,
                  "UPDATE snapshot_tables SET live_id = ?3, live_writes = 0, "
                  "live_incarnation = ?4 WHERE snapshot_id = ?1 AND ord = ?2",
                  id, t.ord, table_id, static_cast<int64_t>(incarnation_));
      if (!s.ok()) return s;
      done.tables_copied += 1;
    }
    s = Execute(w,
                "INSERT OR REPLACE INTO accounts(account, service_properties) SELECT ?1, "
                "service_properties FROM snapshots WHERE id = ?2 AND service_properties IS NOT "
                "NULL",
                acct, id);
    if (s.ok() && sqlite3_changes64(w->db) == 0) {
      s = Execute(w, "DELETE FROM accounts WHERE account = ?1", acct);
    }
    return s;
  });
  if (doomed) WakeReaper();
  if (status.ok() && stats != nullptr) *stats = done;
  return status;
}

Status SqliteStore::PatchTable(Connection* w, int64_t snapshot_id, int64_t ord, int64_t live_id,
                               int64_t live_writes, int64_t entities, RestoreStats* stats,
                               bool* done) {
  *done = false;
  TableChanges& changes = table_changes_[live_id];
  const uint64_t since = static_cast<uint64_t>(live_writes);
  if (changes.writes == since) {
    stats->tables_kept += 1;
    *done = true;
    return Status::Ok();
  }
  if (changes.writes < since || changes.logged_from > since) return Status::Ok();
  std::set<std::pair<std::string_view, std::string_view>> keys;
  for (const auto& key : changes.keys) {
    if (key.write > since) keys.emplace(key.pk, key.rk);
  }
  // Past this, one INSERT ... SELECT of the whole table is cheaper than a
  // delete and a lookup per key.
  if (keys.size() > std::max<size_t>(1000, static_cast<size_t>(entities) / 4)) {
    return Status::Ok();
  }
  Status s;
  for (const auto& [pk, rk] : keys) {
    s = Execute(w, "DELETE FROM entities WHERE table_id = ?1 AND pk = ?2 AND rk = ?3", live_id,
                Blob{pk}, Blob{rk});
    if (!s.ok()) return s;
    s = Execute(w,
                "INSERT INTO entities(table_id, pk, rk, ts, props) SELECT ?1, pk, rk, ts, props "
                "FROM snapshot_entities WHERE snapshot_id = ?2 AND ord = ?3 AND pk = ?4 AND "
                "rk = ?5",
                live_id, snapshot_id, ord, Blob{pk}, Blob{rk});
    if (!s.ok()) return s;
    stats->entities_copied += static_cast<uint64_t>(sqlite3_changes64(w->db));
  }
  // The rows put back are a write like any other: other snapshots' restores
  // must put them back too. (The views in `keys` point into changes.keys,
  // which LogKey may reorder: copy them first.)
  std::vector<std::pair<std::string, std::string>> written(keys.begin(), keys.end());
  changes.writes += 1;
  for (const auto& [pk, rk] : written) LogKey(&changes, pk, rk);
  s = Execute(w, "UPDATE snapshot_tables SET live_writes = ?3 WHERE snapshot_id = ?1 AND ord = ?2",
              snapshot_id, ord, static_cast<int64_t>(changes.writes));
  if (!s.ok()) return s;
  stats->tables_patched += 1;
  *done = true;
  return Status::Ok();
}

Status SqliteStore::ListSnapshots(const std::string& account, std::vector<SnapshotInfo>* out) {
  out->clear();
  ReadLease lease(this);
  return Query(
      lease.conn(),
      "SELECT s.name, s.created, COUNT(t.ord), COALESCE(SUM(t.entities), 0) FROM snapshots s "
      "LEFT JOIN snapshot_tables t ON t.snapshot_id = s.id WHERE s.account = ?1 "
      "GROUP BY s.id ORDER BY s.name",
      [&](Stmt& row) {
        out->push_back({std::string(row.ColumnText(0)), row.ColumnInt64(1),
                        static_cast<uint64_t>(row.ColumnInt64(2)),
                        static_cast<uint64_t>(row.ColumnInt64(3))});
      },
      std::string_view(account));
}

Status SqliteStore::DeleteSnapshot(const std::string& account, const std::string& name) {
  return WriteTransaction([&](Connection* w) {
    int64_t id = 0;
    Status s = LookupSnapshot(w, account, name, &id);
    if (s.ok()) s = DropSnapshot(w, id);
    if (s.ok()) s = UpdateKeyLogging(w);
    return s;
  });
}

void SqliteStore::CarryWriteCounts() {
  // Best effort: a failure leaves the rows of this incarnation, which the
  // next one re-copies on restore.
  static_cast<void>(WriteTransaction([&](Connection* w) {
    struct Row {
      int64_t snapshot_id, ord, live_id, live_writes;
    };
    std::vector<Row> rows;
    Status s = Query(
        w,
        "SELECT snapshot_id, ord, live_id, live_writes FROM snapshot_tables "
        "WHERE live_incarnation = ?1",
        [&](Stmt& row) {
          rows.push_back(
              {row.ColumnInt64(0), row.ColumnInt64(1), row.ColumnInt64(2), row.ColumnInt64(3)});
        },
        static_cast<int64_t>(incarnation_));
    for (const Row& row : rows) {
      if (!s.ok()) break;
      if (TableWrites(row.live_id) != static_cast<uint64_t>(row.live_writes)) continue;
      s = Execute(w,
                  "UPDATE snapshot_tables SET live_incarnation = -1 "
                  "WHERE snapshot_id = ?1 AND ord = ?2",
                  row.snapshot_id, row.ord);
    }
    return s;
  }));
}

}  // namespace cerulean::storage
