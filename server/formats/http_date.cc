#include "server/formats/http_date.h"

#include <algorithm>
#include <chrono>
#include <ctime>

#include "server/formats/ascii.h"
#include "storage/platform.h"

namespace cerulean::server {

std::string_view HttpDateNow() {
  // Formatted once a second per thread: every response carries it.
  thread_local std::time_t cached_second = -1;
  thread_local std::string cached;
  std::time_t t = std::time(nullptr);
  if (t != cached_second) {
    const std::tm tm = storage::UtcTime(t);
    char buf[64];
    size_t n = std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    cached.assign(buf, n);
    cached_second = t;
  }
  return cached;
}

std::optional<int64_t> ParseHttpDate(std::string_view s) {
  // RFC 1123, "Sun, 06 Nov 1994 08:49:37 GMT"; hand-parsed because it runs
  // on every signed request and strptime is locale-aware and slow.
  s = Trim(s);
  static constexpr std::string_view kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  if (s.size() != 29 || s.substr(3, 2) != ", " || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' ||
      s[19] != ':' || s[22] != ':' || s.substr(25) != " GMT") {
    return std::nullopt;
  }
  if (std::find(std::begin(kDays), std::end(kDays), s.substr(0, 3)) == std::end(kDays))
    return std::nullopt;
  auto month_it = std::find(std::begin(kMonths), std::end(kMonths), s.substr(8, 3));
  if (month_it == std::end(kMonths)) return std::nullopt;
  auto number = [&](size_t pos, size_t len) -> int {
    int v = 0;
    for (size_t i = pos; i < pos + len; ++i) {
      if (s[i] < '0' || s[i] > '9') return -1;
      v = v * 10 + (s[i] - '0');
    }
    return v;
  };
  int day = number(5, 2), year = number(12, 4), hour = number(17, 2), minute = number(20, 2),
      second = number(23, 2);
  if (day < 1 || day > 31 || year < 0 || hour < 0 || hour > 23 || minute < 0 || minute > 59 ||
      second < 0 || second > 60) {
    return std::nullopt;
  }
  using namespace std::chrono;
  year_month_day ymd{std::chrono::year{year},
                     month{static_cast<unsigned>(month_it - std::begin(kMonths) + 1)},
                     std::chrono::day{static_cast<unsigned>(day)}};
  if (!ymd.ok()) return std::nullopt;
  int64_t days = sys_days{ymd}.time_since_epoch().count();
  return days * 86400 + hour * 3600 + minute * 60 + second;
}

}  // namespace cerulean::server
