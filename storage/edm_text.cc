#include "storage/edm_text.h"

#include <fast_float/fast_float.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace cerulean::storage {

namespace {

constexpr int64_t kTicksPerSecond = 10'000'000;
constexpr int64_t kTicksPerDay = 86'400 * kTicksPerSecond;

// Reads exactly `n` decimal digits at text[*pos].
bool ReadDigits(std::string_view text, size_t* pos, int n, int* out) {
  if (*pos + n > text.size()) return false;
  int v = 0;
  for (int i = 0; i < n; ++i) {
    char c = text[*pos + i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *pos += n;
  *out = v;
  return true;
}

bool Expect(std::string_view text, size_t* pos, char c) {
  if (*pos >= text.size() || text[*pos] != c) return false;
  ++*pos;
  return true;
}

// Days from 0001-01-01 to y-m-d, via the C++20 calendar types.
std::optional<int64_t> DaysFromCivil(int y, int m, int d) {
  using namespace std::chrono;
  year_month_day ymd{year{y}, month{static_cast<unsigned>(m)}, day{static_cast<unsigned>(d)}};
  if (!ymd.ok()) return std::nullopt;
  constexpr year_month_day kEpoch{year{1}, January, day{1}};
  return (sys_days{ymd} - sys_days{kEpoch}).count();
}

}  // namespace

std::optional<int64_t> ParseDateTime(std::string_view text) {
  size_t pos = 0;
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (!ReadDigits(text, &pos, 4, &y) || !Expect(text, &pos, '-') ||
      !ReadDigits(text, &pos, 2, &mo) || !Expect(text, &pos, '-') ||
      !ReadDigits(text, &pos, 2, &d) || !Expect(text, &pos, 'T') ||
      !ReadDigits(text, &pos, 2, &h) || !Expect(text, &pos, ':') ||
      !ReadDigits(text, &pos, 2, &mi)) {
    return std::nullopt;
  }
  s = 0;
  if (pos < text.size() && text[pos] == ':') {
    ++pos;
    if (!ReadDigits(text, &pos, 2, &s)) return std::nullopt;
  }
  int64_t fraction = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (++digits > 7) return std::nullopt;
      fraction = fraction * 10 + (text[pos] - '0');
      ++pos;
    }
    if (digits == 0) return std::nullopt;
    for (int i = digits; i < 7; ++i) fraction *= 10;
  }
  int64_t offset_minutes = 0;
  if (pos < text.size()) {
    char z = text[pos];
    if (z == 'Z') {
      ++pos;
    } else if (z == '+' || z == '-') {
      ++pos;
      int oh = 0, om = 0;
      if (!ReadDigits(text, &pos, 2, &oh) || !Expect(text, &pos, ':') ||
          !ReadDigits(text, &pos, 2, &om) || oh > 14 || om > 59) {
        return std::nullopt;
      }
      offset_minutes = (oh * 60 + om) * (z == '+' ? 1 : -1);
    } else {
      return std::nullopt;
    }
  }
  if (pos != text.size()) return std::nullopt;
  if (y < 1 || h > 23 || mi > 59 || s > 59) return std::nullopt;
  auto days = DaysFromCivil(y, mo, d);
  if (!days) return std::nullopt;
  int64_t ticks = *days * kTicksPerDay + (int64_t{h} * 3600 + mi * 60 + s) * kTicksPerSecond +
                  fraction - offset_minutes * 60 * kTicksPerSecond;
  if (ticks < 0 || ticks > kMaxDateTimeTicks) return std::nullopt;
  return ticks;
}

namespace {
struct Civil {
  int y, m, d, hh, mm, ss;
  int64_t frac;
};
Civil ToCivil(int64_t ticks) {
  using namespace std::chrono;
  int64_t days = ticks / kTicksPerDay;
  int64_t rem = ticks % kTicksPerDay;
  constexpr year_month_day kEpoch{year{1}, January, day{1}};
  year_month_day ymd{sys_days{kEpoch} + std::chrono::days{days}};
  int64_t secs = rem / kTicksPerSecond;
  return Civil{static_cast<int>(ymd.year()),
               static_cast<int>(static_cast<unsigned>(ymd.month())),
               static_cast<int>(static_cast<unsigned>(ymd.day())),
               static_cast<int>(secs / 3600),
               static_cast<int>(secs / 60 % 60),
               static_cast<int>(secs % 60),
               rem % kTicksPerSecond};
}
}  // namespace

namespace {

// "00".."99".
constexpr std::array<char, 200> kTwoDigits = [] {
  std::array<char, 200> t{};
  for (int i = 0; i < 100; ++i) {
    t[2 * i] = static_cast<char>('0' + i / 10);
    t[2 * i + 1] = static_cast<char>('0' + i % 10);
  }
  return t;
}();

// Writes 0 <= value < 100 as two digits at p.
char* PutTwo(char* p, int value) {
  std::memcpy(p, &kTwoDigits[2 * value], 2);
  return p + 2;
}

// Writes `value` as exactly `width` decimal digits (zero-padded) at p.
char* PutDigits(char* p, int64_t value, int width) {
  for (int i = width - 1; i >= 0; --i) {
    p[i] = static_cast<char>('0' + value % 10);
    value /= 10;
  }
  return p + width;
}

}  // namespace

size_t FormatDateTimeTo(char* buf, int64_t ticks, std::string_view time_separator) {
  if (ticks < 0) ticks = 0;
  if (time_separator.size() > 4) time_separator = time_separator.substr(0, 4);
  Civil c = ToCivil(ticks);
  char* p = PutTwo(buf, c.y / 100);
  p = PutTwo(p, c.y % 100);
  *p++ = '-';
  p = PutTwo(p, c.m);
  *p++ = '-';
  p = PutTwo(p, c.d);
  *p++ = 'T';
  p = PutTwo(p, c.hh);
  std::memcpy(p, time_separator.data(), time_separator.size());
  p += time_separator.size();
  p = PutTwo(p, c.mm);
  std::memcpy(p, time_separator.data(), time_separator.size());
  p += time_separator.size();
  p = PutTwo(p, c.ss);
  if (c.frac != 0) {
    // Seven digits of 100 ns, trailing zeros dropped.
    *p++ = '.';
    PutDigits(p, c.frac, 7);
    int width = 7;
    while (p[width - 1] == '0') --width;
    p += width;
  }
  *p++ = 'Z';
  return static_cast<size_t>(p - buf);
}

void AppendDateTime(std::string* out, int64_t ticks, std::string_view time_separator) {
  // Formatted on the stack and appended once: response writers call this
  // twice per entity (Timestamp, ETag) plus once per DateTime property.
  char buf[kMaxDateTimeText];
  out->append(buf, FormatDateTimeTo(buf, ticks, time_separator));
}

void AppendDateTime(std::string* out, int64_t ticks) { AppendDateTime(out, ticks, ":"); }

std::string FormatDateTime(int64_t ticks) {
  std::string out;
  AppendDateTime(&out, ticks);
  return out;
}

std::string FormatDateTimeInvariant(int64_t ticks) {
  if (ticks < 0) ticks = 0;
  Civil c = ToCivil(ticks);
  char buf[40];
  int n = std::snprintf(buf, sizeof buf, "%02d/%02d/%04d %02d:%02d:%02d", c.m, c.d, c.y, c.hh, c.mm,
                        c.ss);
  return std::string(buf, n);
}

std::optional<Guid> ParseGuid(std::string_view text) {
  // Hex digit values, -1 for any other byte.
  static constexpr std::array<int8_t, 256> kHex = [] {
    std::array<int8_t, 256> t{};
    for (int c = 0; c < 256; ++c) {
      t[c] = c >= '0' && c <= '9'   ? static_cast<int8_t>(c - '0')
             : c >= 'a' && c <= 'f' ? static_cast<int8_t>(c - 'a' + 10)
             : c >= 'A' && c <= 'F' ? static_cast<int8_t>(c - 'A' + 10)
                                    : int8_t{-1};
    }
    return t;
  }();
  if (text.size() != 36 || text[8] != '-' || text[13] != '-' || text[18] != '-' ||
      text[23] != '-') {
    return std::nullopt;
  }
  // Where each byte's two digits start: 8-4-4-4-12.
  static constexpr uint8_t kAt[16] = {0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34};
  Guid g;
  int bad = 0;
  for (size_t b = 0; b < 16; ++b) {
    const int hi = kHex[static_cast<unsigned char>(text[kAt[b]])];
    const int lo = kHex[static_cast<unsigned char>(text[kAt[b] + 1])];
    bad |= hi | lo;  // negative iff some digit was not one
    g.bytes[b] = static_cast<uint8_t>(hi * 16 + lo);
  }
  if (bad < 0) return std::nullopt;
  return g;
}

void FormatGuidTo(char* buf, const Guid& g) {
  static constexpr char kHex[] = "0123456789abcdef";
  size_t n = 0;
  for (size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) buf[n++] = '-';
    buf[n++] = kHex[g.bytes[i] >> 4];
    buf[n++] = kHex[g.bytes[i] & 15];
  }
}

void AppendGuid(std::string* out, const Guid& g) {
  char buf[kGuidText];
  FormatGuidTo(buf, g);
  out->append(buf, kGuidText);
}

std::string FormatGuid(const Guid& g) {
  std::string out;
  AppendGuid(&out, g);
  return out;
}

namespace {

// The shortest round-trip form of d when it is 1 <= |d| < 1e9 with one to six
// decimals (amounts, measurements), without the general algorithm: the first
// k for which round(|d| * 10^k) / 10^k gives |d| back. Both divisions are
// correctly rounded and |d| * 10^k < 2^50, so the integer found is the one
// nearest to |d| * 10^k, and fewer decimals cannot round-trip: the digits
// are those std::to_chars writes (fixed form always being the shorter
// here). Returns its length, or 0 (writing nothing) for any other value.
size_t FormatShortDecimal(char* out, double d) {
  static constexpr double kPow10[] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6};
  double a = std::fabs(d);
  if (!(a >= 1.0 && a < 1e9)) return 0;
  for (int k = 1; k <= 6; ++k) {
    uint64_t n = static_cast<uint64_t>(a * kPow10[k] + 0.5);
    if (static_cast<double>(n) / kPow10[k] != a) continue;
    if (n % 10 == 0) return 0;  // an integer, or fewer decimals: not this path
    char buf[32];
    char* end = buf + sizeof buf;
    char* p = end;
    for (int i = 0; i < k; ++i) {
      *--p = static_cast<char>('0' + n % 10);
      n /= 10;
    }
    *--p = '.';
    do {
      *--p = static_cast<char>('0' + n % 10);
      n /= 10;
    } while (n != 0);
    if (d < 0) *--p = '-';
    const size_t len = static_cast<size_t>(end - p);
    std::memcpy(out, p, len);
    return len;
  }
  return 0;
}

}  // namespace

size_t FormatDoubleTo(char* buf, double d) {
  if (size_t n = FormatShortDecimal(buf, d)) return n;
  char* end = std::to_chars(buf, buf + kMaxDoubleText - 2, d).ptr;
  std::string_view s(buf, static_cast<size_t>(end - buf));
  if (size_t e = s.find('e'); e != std::string_view::npos) {
    // to_chars writes "1e+20"; .NET and the service write "1E+20".
    buf[e] = 'E';
    return s.size();
  }
  if (s.find('.') != std::string_view::npos) return s.size();
  std::memcpy(end, ".0", 2);
  return s.size() + 2;
}

void AppendDouble(std::string* out, double d) {
  char buf[kMaxDoubleText];
  out->append(buf, FormatDoubleTo(buf, d));
}

std::string FormatDouble(double d) {
  std::string out;
  AppendDouble(&out, d);
  return out;
}

std::from_chars_result FromCharsDouble(const char* first, const char* last, double& value) {
  double parsed = 0;
  const fast_float::from_chars_result r = fast_float::from_chars(first, last, parsed);
  if (r.ec != std::errc()) return {r.ptr, r.ec};
  // fast_float rounds an out-of-range magnitude to infinity or zero where
  // std::from_chars reports it. "inf"/"nan" have no digits.
  bool digits = false, nonzero = false;
  for (const char* p = first; p != r.ptr && *p != 'e' && *p != 'E'; ++p) {
    if (*p >= '0' && *p <= '9') {
      digits = true;
      nonzero = nonzero || *p != '0';
    }
  }
  if (digits && (std::isinf(parsed) || (parsed == 0 && nonzero))) {
    return {r.ptr, std::errc::result_out_of_range};
  }
  value = parsed;
  return {r.ptr, std::errc()};
}

int64_t NowTicks() {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  return kUnixEpochTicks + std::chrono::duration_cast<std::chrono::nanoseconds>(now).count() / 100;
}

}  // namespace cerulean::storage
