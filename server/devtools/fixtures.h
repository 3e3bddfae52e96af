// Fixtures for local development and CI: export tables to JSON Lines and
// import them back with every EDM type preserved.
// Line format: {"table":"name","entity":{<entity at minimal metadata>}}
// Thread-safety: functions use only the (thread-safe) Store.
#pragma once

#include <cstddef>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "storage/store.h"

namespace cerulean::server {

// Writes every entity of `tables` (all tables of the account when empty), in
// key order. Returns the number of entities written through `count`.
storage::Status ExportTables(storage::Store& store, const std::string& account,
                             const std::vector<std::string>& tables, std::ostream& out,
                             size_t* count);

// Reads JSON Lines written by ExportTables, creating missing tables and
// upserting entities (in batches per partition). Timestamps are new.
// Errors name the line: a table name Create Table would refuse, a line
// nested deeper than its object and entity, an entity Insert would refuse.
storage::Status ImportJsonLines(storage::Store& store, const std::string& account, std::istream& in,
                                size_t* count);

}  // namespace cerulean::server
