// The $filter parser: tokens (odata/lexer.h) -> type-checked AST
// (odata/ast.h). The public entry is odata::ParseFilter in odata/query.h.
// Thread-safety: pure functions.
//
// Grammar (query.md §2; keywords and literal prefixes are lower case):
//
//   filter      = ws expr ws
//   expr        = or-expr
//   or-expr     = and-expr *( rws "or" rws and-expr )
//   and-expr    = unary *( rws "and" rws unary )
//   unary       = "not" rws unary / "not" ws "(" ws expr ws ")" / primary
//   primary     = "(" ws expr ws ")" / comparison / bool-term
//   comparison  = operand rws cmp-op rws operand   ; one property, one literal
//   cmp-op      = "eq" / "ne" / "gt" / "ge" / "lt" / "le"
//   operand     = property / literal
//   bool-term   = property / "true" / "false"   ; not a property of known
//                                               ; non-Boolean type (FilterScope)
//   property    = identifier       ; not a keyword; case-sensitive
//   identifier  = ( ALPHA / "_" / non-ASCII ) *( ALPHA / DIGIT / "_" / non-ASCII )
//   literal     = string / int32 / int64 / double / "true" / "false"
//               / "datetime'" iso8601 "'" / "guid'" guid "'"
//               / ( "X" / "x" / "binary" ) "'" *( 2HEXDIG ) "'"
//   string      = "'" *( non-quote / "''" ) "'"
//   int32       = [ "-" ] 1*DIGIT                        ; must fit Int32
//   int64       = [ "-" ] 1*DIGIT ( "L" / "l" )          ; must fit Int64
//   double      = [ "-" ] 1*DIGIT [ "." 1*DIGIT ] [ ( "e" / "E" ) [ "+" / "-" ] 1*DIGIT ]
//                 [ "d" / "D" ]                          ; "." or exponent or suffix
//   ws / rws    = *( SP / HTAB / CR / LF ); rws may be empty next to "(", ")" or a quote
//
// Normalisation: a literal on the left is moved right with the operator
// flipped (`5 lt A` -> `(gt A 5)`); chains of `and` / `or` become one n-ary
// node, with parenthesised chains of the same kind spliced in
// (`(a or b) or c` -> `(or a b c)`). Rejected: `null`, property-vs-property,
// literal-vs-literal, function calls, arithmetic, other keyword casings, a
// tree deeper than kMaxFilterDepth, more than kMaxFilterParens parentheses
// open at once, input longer than kMaxFilterBytes.
#pragma once

#include <cstddef>
#include <string_view>

#include "odata/ast.h"
#include "odata/query.h"
#include "storage/status.h"

namespace cerulean::odata {

// Bounds that keep parsing, planning and evaluation cheap and the recursion
// of the evaluator and planner shallow for any input (the parser itself does
// not recurse). The HTTP layer caps URLs well below the length.
inline constexpr size_t kMaxFilterBytes = 128 * 1024;
inline constexpr int kMaxFilterDepth = 100;
// Parentheses open at once. Parsing does not recurse on them, and nested
// chains of one kind add no depth to the tree, so this is only a sanity
// bound, far above the one-per-condition nesting of query builders.
inline constexpr size_t kMaxFilterParens = 1000;

// Parses and type-checks `text` into an AST root.
storage::Result<ExprPtr> ParseFilterExpr(std::string_view text,
                                         FilterScope scope = FilterScope::kEntities);

}  // namespace cerulean::odata
