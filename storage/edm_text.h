// Canonical text forms of EDM values shared by the OData literal parser and
// the JSON codec: ISO 8601 DateTime <-> ticks, Guid <-> bytes, Double.
// Thread-safety: pure functions.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "storage/value.h"

namespace cerulean::storage {

// Ticks of 1601-01-01T00:00:00Z and 9999-12-31T23:59:59.9999999Z.
inline constexpr int64_t kMinDateTimeTicks = 504911232000000000;
inline constexpr int64_t kMaxDateTimeTicks = 3155378975999999999;
// Ticks at the Unix epoch.
inline constexpr int64_t kUnixEpochTicks = 621355968000000000;

// Parses "yyyy-MM-ddTHH:mm:ss[.f{1,7}][Z|±hh:mm]" (no zone = UTC) into
// ticks since 0001-01-01 UTC. nullopt on any other form or an invalid date.
// No range check beyond year 0001..9999.
std::optional<int64_t> ParseDateTime(std::string_view text);

// "yyyy-MM-ddTHH:mm:ss[.fffffff]Z" with trailing fraction zeros removed.
std::string FormatDateTime(int64_t ticks);
// Appends FormatDateTime(ticks) to *out (no temporary: response writers).
void AppendDateTime(std::string* out, int64_t ticks);
// The same with `time_separator` (at most 4 bytes) between hours, minutes
// and seconds instead of ':' (an ETag writes "%3A").
void AppendDateTime(std::string* out, int64_t ticks, std::string_view time_separator);

// Room FormatDateTimeTo needs: 28 bytes with two 4-byte separators.
inline constexpr size_t kMaxDateTimeText = 40;
// Writes the AppendDateTime form to `buf` (kMaxDateTimeText bytes) and
// returns its length.
size_t FormatDateTimeTo(char* buf, int64_t ticks, std::string_view time_separator);

// "MM/dd/yyyy HH:mm:ss" (the .NET invariant form used in range errors).
std::string FormatDateTimeInvariant(int64_t ticks);

// Parses the 36-character hyphenated form, hex in either case.
std::optional<Guid> ParseGuid(std::string_view text);
// Lower-case hyphenated form.
std::string FormatGuid(const Guid& guid);
void AppendGuid(std::string* out, const Guid& guid);
// Writes that form (kGuidText bytes) to `buf`.
inline constexpr size_t kGuidText = 36;
void FormatGuidTo(char* buf, const Guid& guid);

// Shortest round-trip form of a finite double; integral values keep ".0"
// ("1.0", "-0.0"), large/small magnitudes use exponent form ("1E+20").
// REQUIRES: std::isfinite(d).
std::string FormatDouble(double d);
void AppendDouble(std::string* out, double d);
// Room FormatDoubleTo needs.
inline constexpr size_t kMaxDoubleText = 32;
// Writes that form to `buf` (kMaxDoubleText bytes) and returns its length.
size_t FormatDoubleTo(char* buf, double d);

// std::from_chars(first, last, value) for a double in chars_format::general,
// the same on every platform (some standard libraries have no floating-point
// from_chars): the longest prefix in that form, correctly rounded; "inf",
// "infinity" and "nan" are accepted as there. A finite number whose
// magnitude is out of range (rounds to infinity, or to zero from nonzero
// digits) gives std::errc::result_out_of_range and leaves `value` as it was.
std::from_chars_result FromCharsDouble(const char* first, const char* last, double& value);

// Current UTC time in ticks.
int64_t NowTicks();

}  // namespace cerulean::storage
