// AtomPub codec for entities and tables (payload.md §6), the format of
// x-ms-version before 2015-12-11: Atom request bodies -> storage::Entity,
// checked by the same rules as JSON bodies (server/formats/entity_rules.h),
// and entities and tables -> Atom entries and feeds.
// Elements and attributes are matched by namespace URI, never by prefix.
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/formats/azure_error.h"
#include "storage/value.h"

namespace cerulean::server {

// Content-Type of Atom responses.
inline constexpr std::string_view kAtomContentType = "application/atom+xml;charset=utf-8";

// Parses and validates an Atom entry body: the properties of
// entry/content/m:properties, everything else ignored (payload.md §6.2).
// Keys are read from the body iff `keys_from_body` (insert). Malformed XML,
// a document type declaration, another root element or a property with child
// elements -> InvalidInput; otherwise the errors of ParseEntityBody.
std::optional<ErrorReply> ParseAtomEntityBody(std::string_view body, bool keys_from_body,
                                              storage::Entity* entity);

// Parses the d:TableName property of a Create Table entry.
std::optional<ErrorReply> ParseAtomTableBody(std::string_view body, std::string* table_name);

// Where entries live, for xml:base, id, link and category.
struct AtomContext {
  std::string_view base;     // "http://127.0.0.1:10002/devstoreaccount1" (no trailing slash)
  std::string_view account;  // "devstoreaccount1"
  std::string_view table;    // entity set: the table name as in the URL, or "Tables"
  std::string updated;       // <updated>: the response time, "2013-03-27T11:02:04Z"
};

// An AtomContext whose `updated` is now. The views must outlive its use.
AtomContext MakeAtomContext(std::string_view base, std::string_view account,
                            std::string_view table);

// Appends one entity entry. `element` makes it a document of its own (XML
// declaration, namespaces, xml:base); otherwise it is an entry of a feed.
// `select` (may be null) restricts the properties, missing selected ones
// written as <d:Name m:null="true" />.
void AppendEntityAtom(std::string* out, const storage::Entity& entity, const AtomContext& ctx,
                      bool element, const std::vector<std::string>* select);

// Appends one table entry (payload.md §6.5); `element` as above.
void AppendTableAtom(std::string* out, std::string_view name, const AtomContext& ctx, bool element);

// Appends the start of a feed of ctx.table (XML declaration, <feed>, title,
// id, updated, self link; an author when `empty`, so that an entry-less feed
// is valid Atom). Entries then follow, and AppendAtomFeedEnd closes it.
void AppendAtomFeedStart(std::string* out, const AtomContext& ctx, bool empty);
void AppendAtomFeedEnd(std::string* out);

}  // namespace cerulean::server
