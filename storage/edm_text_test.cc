#include "storage/edm_text.h"

#include <doctest/doctest.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <system_error>

namespace cerulean::storage {
namespace {

constexpr int64_t kTicksPerSecond = 10'000'000;

TEST_CASE("edm_text: DateTime parse and format") {
  CHECK(ParseDateTime("0001-01-01T00:00:00Z") == 0);
  CHECK(ParseDateTime("1970-01-01T00:00:00Z") == kUnixEpochTicks);
  CHECK(ParseDateTime("1601-01-01T00:00:00Z") == kMinDateTimeTicks);
  CHECK(ParseDateTime("9999-12-31T23:59:59.9999999Z") == kMaxDateTimeTicks);
  // No zone means UTC; seconds are optional.
  CHECK(ParseDateTime("1970-01-01T00:00:00") == kUnixEpochTicks);
  CHECK(ParseDateTime("1970-01-01T00:01") == kUnixEpochTicks + 60 * kTicksPerSecond);
  // Offsets convert to UTC.
  CHECK(ParseDateTime("1970-01-01T01:00:00+01:00") == kUnixEpochTicks);
  CHECK(ParseDateTime("1969-12-31T19:00:00-05:00") == kUnixEpochTicks);
  // Fractions of 1..7 digits.
  CHECK(ParseDateTime("1970-01-01T00:00:00.5Z") == kUnixEpochTicks + kTicksPerSecond / 2);
  CHECK(ParseDateTime("1970-01-01T00:00:00.0000001Z") == kUnixEpochTicks + 1);
  CHECK(ParseDateTime("2024-02-29T00:00:00Z").has_value());

  for (const char* bad :
       {"", "2024-02-30T00:00:00Z", "2023-02-29T00:00:00Z", "2024-13-01T00:00:00Z",
        "2024-01-01T24:00:00Z", "2024-01-01T00:60:00Z", "2024-01-01T00:00:60Z",
        "2024-01-01T00:00:00.Z", "2024-01-01T00:00:00.12345678Z", "2024-01-01T00:00:00ZZ",
        "2024-01-01 00:00:00Z", "0000-01-01T00:00:00Z", "2024-01-01T00:00:00+1:00",
        "2024-01-01T00:00:00+15:00", "24-01-01T00:00:00Z", "2024-01-01"}) {
    CAPTURE(bad);
    CHECK_FALSE(ParseDateTime(bad).has_value());
  }
  // Before 0001-01-01 UTC after the offset.
  CHECK_FALSE(ParseDateTime("0001-01-01T00:00:00+01:00").has_value());

  CHECK(FormatDateTime(0) == "0001-01-01T00:00:00Z");
  CHECK(FormatDateTime(kUnixEpochTicks) == "1970-01-01T00:00:00Z");
  CHECK(FormatDateTime(kUnixEpochTicks + kTicksPerSecond / 2) == "1970-01-01T00:00:00.5Z");
  CHECK(FormatDateTime(kMaxDateTimeTicks) == "9999-12-31T23:59:59.9999999Z");
  for (const char* text :
       {"2024-02-29T12:34:56.1234567Z", "1999-12-31T23:59:59.01Z", "2000-03-01T00:00:00Z"}) {
    auto ticks = ParseDateTime(text);
    REQUIRE(ticks.has_value());
    CHECK(FormatDateTime(*ticks) == text);
  }
  CHECK(FormatDateTimeInvariant(*ParseDateTime("2024-02-09T05:04:03Z")) == "02/09/2024 05:04:03");
  // Random instants read back by the parser (its own date arithmetic), in
  // both separator forms.
  std::mt19937_64 rng(99);
  for (int i = 0; i < 100000; ++i) {
    int64_t ticks = static_cast<int64_t>(rng() % static_cast<uint64_t>(kMaxDateTimeTicks + 1));
    if (i % 3 == 0) ticks -= ticks % kTicksPerSecond;  // no fraction
    if (i % 3 == 1) ticks -= ticks % 10000;            // milliseconds
    std::string text = FormatDateTime(ticks);
    CAPTURE(text);
    REQUIRE(ParseDateTime(text) == ticks);
    std::string etag;
    AppendDateTime(&etag, ticks, "%3A");
    std::string expected = text;
    for (size_t at = expected.find(':'); at != std::string::npos; at = expected.find(':', at)) {
      expected.replace(at, 1, "%3A");
    }
    REQUIRE(etag == expected);
  }
  // A plausible clock.
  CHECK(NowTicks() > *ParseDateTime("2020-01-01T00:00:00Z"));
}

TEST_CASE("edm_text: Guid parse and format") {
  auto g = ParseGuid("C9DA6455-213D-42C9-9A79-3E9149A57833");
  REQUIRE(g.has_value());
  CHECK(g->bytes[0] == 0xC9);
  CHECK(g->bytes[15] == 0x33);
  CHECK(FormatGuid(*g) == "c9da6455-213d-42c9-9a79-3e9149a57833");
  CHECK(ParseGuid(FormatGuid(*g)) == g);
  for (const char* bad :
       {"", "c9da6455213d42c99a793e9149a57833", "c9da6455-213d-42c9-9a79-3e9149a5783",
        "c9da6455-213d-42c9-9a79-3e9149a578333", "g9da6455-213d-42c9-9a79-3e9149a57833",
        "c9da6455+213d-42c9-9a79-3e9149a57833"}) {
    CAPTURE(bad);
    CHECK_FALSE(ParseGuid(bad).has_value());
  }
}

TEST_CASE("edm_text: ParseGuid checks every position") {
  const std::string good = "0123abcd-ef45-6789-ABCD-EF0123456789";
  REQUIRE(ParseGuid(good).has_value());
  for (size_t at = 0; at < good.size(); ++at) {
    const bool dash = at == 8 || at == 13 || at == 18 || at == 23;
    for (char c : std::string("0aFgG/:@`-\x00\xff", 12)) {
      std::string text = good;
      text[at] = c;
      const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
      CAPTURE(text);
      auto g = ParseGuid(text);
      REQUIRE(g.has_value() == (dash ? c == '-' : hex));
      if (g) {
        std::string lower = text;
        for (char& l : lower) l = static_cast<char>(std::tolower(static_cast<unsigned char>(l)));
        CHECK(FormatGuid(*g) == lower);
      }
    }
  }
}

TEST_CASE("edm_text: FormatDouble") {
  CHECK(FormatDouble(1.0) == "1.0");
  CHECK(FormatDouble(-0.0) == "-0.0");
  CHECK(FormatDouble(0.1) == "0.1");
  CHECK(FormatDouble(2.5) == "2.5");
  CHECK(FormatDouble(123456.0) == "123456.0");
  CHECK(FormatDouble(1e20) == "1E+20");
  CHECK(FormatDouble(1.5e-7) == "1.5E-07");
  CHECK(FormatDouble(123.45) == "123.45");
  CHECK(FormatDouble(-999999999.999999) == "-999999999.999999");
}

// The general algorithm, as FormatDouble wrote every value before its fast
// path for short decimals: the reference the fast path must agree with.
std::string ReferenceDouble(double d) {
  char buf[64];
  char* end = std::to_chars(buf, buf + sizeof buf, d).ptr;
  std::string s(buf, end);
  if (size_t e = s.find('e'); e != std::string::npos) {
    s[e] = 'E';
  } else if (s.find('.') == std::string::npos) {
    s += ".0";
  }
  return s;
}

TEST_CASE("edm_text: FormatDouble agrees with the general algorithm") {
  std::mt19937_64 rng(20261123);
  auto check = [](double d) {
    CAPTURE(d);
    REQUIRE(FormatDouble(d) == ReferenceDouble(d));
  };
  // Decimals of every length the fast path takes and just beyond, near its
  // bounds and in between; values a little off them; random bit patterns.
  for (int i = 0; i < 200000; ++i) {
    int k = static_cast<int>(rng() % 9);
    double scale = std::pow(10.0, k);
    uint64_t limit = (i % 4 == 0) ? 10'000'000'000'000'000ULL : 2'000'000'000ULL;
    double d = static_cast<double>(rng() % limit) / scale;
    if (i % 2) d = -d;
    check(d);
    check(std::nextafter(d, 0.0));
    check(std::nextafter(d, 1e300));
    uint64_t bits = rng();
    double r = 0;
    std::memcpy(&r, &bits, sizeof r);
    if (std::isfinite(r)) check(r);
  }
  for (double d : {1.0, 1.05, 0.999999, 999999999.5, 1e9, 1e9 - 0.000001, 4.35, 0.1 + 0.2, 100000.0,
                   120000000.0}) {
    check(d);
    check(-d);
  }
}

// What FromCharsDouble reads of `text`: the value (or -7 when untouched),
// the count of characters used and the error.
struct Parsed {
  double value;
  long used;
  std::errc ec;
};
Parsed ParseWith(std::string_view text) {
  double d = -7;
  auto r = FromCharsDouble(text.data(), text.data() + text.size(), d);
  return {d, static_cast<long>(r.ptr - text.data()), r.ec};
}

TEST_CASE("edm_text: FromCharsDouble reads as std::from_chars does") {
  auto ok = [](std::string_view text, double want, long used) {
    CAPTURE(text);
    Parsed p = ParseWith(text);
    CHECK(p.ec == std::errc());
    CHECK(p.used == used);
    if (std::isnan(want)) {
      CHECK(std::isnan(p.value));
    } else {
      CHECK(p.value == want);
      CHECK(std::signbit(p.value) == std::signbit(want));
    }
  };
  ok("1.5", 1.5, 3);
  ok("-.5", -0.5, 3);
  ok("1.", 1.0, 2);
  ok("1.e5", 1e5, 4);
  ok("00.5", 0.5, 4);
  ok("1e", 1.0, 1);  // an exponent without digits is not part of the number
  ok("1e+", 1.0, 1);
  ok("0e999", 0.0, 5);
  ok("-0.0000e-99999", -0.0, 14);
  ok("1e-310", 1e-310, 6);  // subnormal: in range
  ok("4.9e-324", 4.9e-324, 8);
  ok("1.7976931348623158e308", 1.7976931348623158e308, 22);
  ok("inf", INFINITY, 3);
  ok("-infinity", -INFINITY, 9);
  ok("nan", NAN, 3);
  ok("0.1x", 0.1, 3);

  auto out_of_range = [](std::string_view text) {
    CAPTURE(text);
    Parsed p = ParseWith(text);
    CHECK(p.ec == std::errc::result_out_of_range);
    CHECK(p.used == static_cast<long>(text.size()));
    CHECK(p.value == -7);  // left as it was
  };
  out_of_range("1e400");
  out_of_range("-1e400");
  out_of_range("1.7976931348623159e308");
  out_of_range("1e-400");
  out_of_range("-1e-400");
  out_of_range("2e-324");

  for (std::string_view bad : {"", "+1", "-", "abc", ".", "e5"}) {
    CAPTURE(bad);
    Parsed p = ParseWith(bad);
    CHECK(p.ec == std::errc::invalid_argument);
    CHECK(p.used == 0);
    CHECK(p.value == -7);
  }
}

#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L
// Where the standard library has the floating-point overload, the two agree
// on random decimal text, near the range limits included.
TEST_CASE("edm_text: FromCharsDouble agrees with std::from_chars") {
  std::mt19937_64 rng(20261202);
  const char alphabet[] = "0123456789.eE-+";
  for (int i = 0; i < 100000; ++i) {
    std::string text;
    if (rng() % 2) text += '-';
    const int n = 1 + static_cast<int>(rng() % 24);
    for (int k = 0; k < n; ++k) text += alphabet[rng() % (sizeof alphabet - 1)];
    if (i % 3 == 0) text += "e" + std::to_string(static_cast<int>(rng() % 700) - 350);
    CAPTURE(text);
    double a = -7, b = -7;
    auto ra = std::from_chars(text.data(), text.data() + text.size(), a);
    auto rb = FromCharsDouble(text.data(), text.data() + text.size(), b);
    REQUIRE(ra.ec == rb.ec);
    REQUIRE(ra.ptr == rb.ptr);
    REQUIRE(std::memcmp(&a, &b, sizeof a) == 0);
  }
}
#endif

}  // namespace
}  // namespace cerulean::storage
