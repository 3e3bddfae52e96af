#include "storage/codec.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "storage/value.h"

namespace cerulean::storage {
namespace {

std::string Utf8(char32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// Reference order, independent of value.cc: UTF-16 code units compared
// lexicographically.
std::u16string Utf16(const std::vector<char32_t>& cps) {
  std::u16string s;
  for (char32_t cp : cps) {
    if (cp < 0x10000) {
      s += static_cast<char16_t>(cp);
    } else {
      cp -= 0x10000;
      s += static_cast<char16_t>(0xD800 + (cp >> 10));
      s += static_cast<char16_t>(0xDC00 + (cp & 0x3FF));
    }
  }
  return s;
}

int Sign(int x) { return (x > 0) - (x < 0); }

std::vector<Property> AllTypes() {
  Guid g;
  for (int i = 0; i < 16; ++i) g.bytes[i] = static_cast<uint8_t>(0xF0 + i);
  double nan_payload = 0;
  uint64_t nan_bits = 0x7FF8000000000123ULL;
  std::memcpy(&nan_payload, &nan_bits, sizeof nan_payload);
  return {
      {"Str", Value::String("hello")},
      {"EmptyStr", Value::String("")},
      {"NonBmp", Value::String(Utf8(0x1F600) + "x" + Utf8(0xE000) + Utf8(0x10FFFF))},
      {"True", Value::Boolean(true)},
      {"False", Value::Boolean(false)},
      {"I32Min", Value::Int32(std::numeric_limits<int32_t>::min())},
      {"I32Max", Value::Int32(std::numeric_limits<int32_t>::max())},
      {"I32Neg", Value::Int32(-1)},
      {"I64Min", Value::Int64(std::numeric_limits<int64_t>::min())},
      {"I64Max", Value::Int64(std::numeric_limits<int64_t>::max())},
      {"I64Zero", Value::Int64(0)},
      {"Dbl", Value::Double(3.25)},
      {"NegZero", Value::Double(-0.0)},
      {"Nan", Value::Double(nan_payload)},
      {"Inf", Value::Double(std::numeric_limits<double>::infinity())},
      {"NegInf", Value::Double(-std::numeric_limits<double>::infinity())},
      {"Denorm", Value::Double(std::numeric_limits<double>::denorm_min())},
      {"DateMin", Value::DateTimeTicks(0)},
      {"DateMax", Value::DateTimeTicks(3155378975999999999)},
      {"DateNeg", Value::DateTimeTicks(-5)},
      {"Guid", Value::FromGuid(g)},
      {"Bin", Value::FromBinary(std::string("\x00\xff\x01", 3))},
      {"EmptyBin", Value::FromBinary("")},
      {"", Value::String("empty name")},
  };
}

TEST_CASE("codec: properties round-trip for every EdmType") {
  std::vector<Property> props = AllTypes();
  std::string blob;
  EncodeProperties(props, &blob);
  std::vector<Property> back;
  REQUIRE(DecodeProperties(blob, &back).ok());
  REQUIRE(back.size() == props.size());
  for (size_t i = 0; i < props.size(); ++i) {
    CAPTURE(props[i].name);
    CHECK(back[i] == props[i]);
  }
  // Bit-exact doubles.
  CHECK(std::signbit(back[12].value.dbl()));
  CHECK(std::isnan(back[13].value.dbl()));
}

TEST_CASE("codec: empty property list") {
  std::string blob;
  EncodeProperties({}, &blob);
  CHECK(blob == std::string("\x01\x00", 2));
  std::vector<Property> back{{"x", Value::Int32(1)}};
  REQUIRE(DecodeProperties(blob, &back).ok());
  CHECK(back.empty());
}

TEST_CASE("codec: format is stable") {
  // persistent: this exact byte string must keep decoding to the same value.
  std::string blob;
  EncodeProperties({{"a", Value::Int32(-2)}, {"b", Value::Boolean(true)}}, &blob);
  CHECK(blob == std::string("\x01\x02\x01"
                            "a\x03\x03\x01"
                            "b\x02\x01",
                            10));
}

TEST_CASE("codec: varint edges") {
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{127}, uint64_t{128}, uint64_t{16383},
                     uint64_t{16384}, std::numeric_limits<uint64_t>::max()}) {
    std::string buf;
    PutVarint64(&buf, v);
    std::string_view in = buf;
    uint64_t got = 0;
    REQUIRE(GetVarint64(&in, &got));
    CHECK(got == v);
    CHECK(in.empty());
  }
  uint64_t v = 0;
  std::string overlong(10, '\xff');
  overlong += '\x01';
  std::string_view in = overlong;
  CHECK_FALSE(GetVarint64(&in, &v));
  std::string too_big(9, '\xff');
  too_big += '\x02';  // bit 64 set
  in = too_big;
  CHECK_FALSE(GetVarint64(&in, &v));
  std::string unterminated("\x80\x80", 2);
  in = unterminated;
  CHECK_FALSE(GetVarint64(&in, &v));
}

TEST_CASE("codec: every truncation is rejected") {
  std::string blob;
  EncodeProperties(AllTypes(), &blob);
  std::vector<Property> out;
  for (size_t n = 0; n < blob.size(); ++n) {
    CAPTURE(n);
    Status s = DecodeProperties(std::string_view(blob).substr(0, n), &out);
    CHECK(s.code() == StatusCode::kCorruption);
  }
}

TEST_CASE("codec: malformed blobs are Corruption") {
  std::vector<Property> out;
  auto decode = [&](std::string bytes) { return DecodeProperties(bytes, &out).code(); };
  CHECK(decode(std::string("\x02\x00", 2)) == StatusCode::kCorruption);  // format
  CHECK(decode(std::string("\x01\x01\x01"
                           "a\x09\x00",
                           6)) == StatusCode::kCorruption);  // type
  CHECK(decode(std::string("\x01\x01\x01"
                           "a\x00\x00",
                           6)) == StatusCode::kCorruption);  // type 0
  CHECK(decode(std::string("\x01\x01\x01"
                           "a\x02\x02",
                           6)) == StatusCode::kCorruption);  // bool
  // Int32 zigzag of 2^32 does not fit.
  CHECK(decode(std::string("\x01\x01\x01"
                           "a\x03\x80\x80\x80\x80\x20",
                           10)) == StatusCode::kCorruption);
  CHECK(decode(std::string("\x01\x01\x01"
                           "a\x02\x01\x00",
                           7)) == StatusCode::kCorruption);  // trailing
  CHECK(decode(std::string("\x01\x02\x01"
                           "a\x02\x01\x01"
                           "a\x02\x00",
                           10)) == StatusCode::kCorruption);  // duplicate
  CHECK(decode(std::string("\x01\xff\xff\xff\xff\x0f", 6)) == StatusCode::kCorruption);  // count
  CHECK(decode(std::string("\x01\x01\x01"
                           "a\x01\xff\xff\xff\xff\x0f"
                           "ab",
                           12)) == StatusCode::kCorruption);  // string length
  // Many duplicates (the sorted check path).
  std::vector<Property> many;
  for (int i = 0; i < 20; ++i) many.push_back({"p" + std::to_string(i), Value::Int32(i)});
  std::string blob;
  EncodeProperties(many, &blob);
  REQUIRE(DecodeProperties(blob, &out).ok());
  many.back().name = "p3";
  blob.clear();
  EncodeProperties(many, &blob);
  CHECK(DecodeProperties(blob, &out).code() == StatusCode::kCorruption);
}

TEST_CASE("codec: random corruption never crashes") {
  std::mt19937 rng(12345);
  std::string good;
  EncodeProperties(AllTypes(), &good);
  std::vector<Property> out;
  int ok = 0, bad = 0;
  for (int iter = 0; iter < 10000; ++iter) {
    std::string blob = good;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      blob[rng() % blob.size()] = static_cast<char>(rng() & 0xFF);
    }
    if (rng() % 4 == 0) blob.resize(rng() % blob.size());
    Status s = DecodeProperties(blob, &out);
    if (s.ok()) {
      ++ok;
    } else {
      CHECK(s.code() == StatusCode::kCorruption);
      ++bad;
    }
  }
  MESSAGE("mutated blobs: " << ok << " decoded, " << bad << " rejected");
  // Pure noise too.
  for (int iter = 0; iter < 5000; ++iter) {
    std::string blob(rng() % 64, '\0');
    for (char& c : blob) c = static_cast<char>(rng() & 0xFF);
    Status s = DecodeProperties(blob, &out);
    CHECK((s.ok() || s.code() == StatusCode::kCorruption));
  }
}

// Reads `blob` with PropertyReader; ok iff every property and the end read
// cleanly.
Status ReadAll(std::string_view blob, std::vector<Property>* out) {
  out->clear();
  PropertyReader reader;
  Status s = reader.Open(blob);
  if (!s.ok()) return s;
  std::string_view name;
  ValueView value;
  while (reader.Next(&name, &value)) {
    Property& p = out->emplace_back();
    p.name = std::string(name);
    p.value.Assign(value);
  }
  return reader.status();
}

TEST_CASE("codec: PropertyReader reads what DecodeProperties decodes") {
  std::string good;
  EncodeProperties(AllTypes(), &good);
  std::vector<Property> read, decoded;
  REQUIRE(ReadAll(good, &read).ok());
  CHECK(read == AllTypes());
  // Every view converts back to the value it views.
  for (const auto& p : AllTypes()) {
    Value v;
    v.Assign(p.value.view());
    CHECK(v == p.value);
  }
  // On mutated and truncated blobs both accept or both refuse, and agree on
  // the values; only duplicate names are left to DecodeProperties.
  std::mt19937 rng(777);
  int agreed_ok = 0, duplicates = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string blob = good;
    int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) blob[rng() % blob.size()] = static_cast<char>(rng() & 0xFF);
    if (rng() % 4 == 0) blob.resize(rng() % blob.size());
    Status r = ReadAll(blob, &read);
    Status d = DecodeProperties(blob, &decoded);
    CAPTURE(iter);
    if (r.ok() && !d.ok() && d.message() == "duplicate property name") {
      ++duplicates;
      continue;
    }
    REQUIRE(r.ok() == d.ok());
    if (r.ok()) {
      CHECK(read == decoded);
      ++agreed_ok;
    } else {
      CHECK(r.code() == StatusCode::kCorruption);
    }
  }
  MESSAGE("both decoded " << agreed_ok << ", duplicates only DecodeProperties refused "
                          << duplicates);
  // Trailing bytes end the reading with Corruption.
  CHECK(ReadAll(std::string("\x01\x01\x01"
                            "a\x02\x01\x00",
                            7),
                &read)
            .code() == StatusCode::kCorruption);
}

TEST_CASE("codec: key encoding round-trips and rejects raw EE/EF") {
  std::string key = "a" + Utf8(0xE000) + Utf8(0xFFFF) + Utf8(0x1F600) + "'/%";
  std::string enc = EncodeKey(key);
  CHECK(enc != key);
  CHECK(enc.find('\xEE') == std::string::npos);
  CHECK(enc.find('\xEF') == std::string::npos);
  auto dec = DecodeKey(enc);
  REQUIRE(dec.ok());
  CHECK(*dec == key);
  CHECK(EncodeKey("") == "");
  CHECK(DecodeKey(std::string("a\xEE", 2)).status().code() == StatusCode::kCorruption);
  CHECK(DecodeKey(std::string("\xEF", 1)).status().code() == StatusCode::kCorruption);
  CHECK(IsEncodableKey(key));
  CHECK_FALSE(IsEncodableKey(std::string("a\xFE", 2)));
  CHECK_FALSE(IsEncodableKey(std::string("\xFF", 1)));
}

TEST_CASE("codec: memcmp order of encoded keys equals UTF-16 order") {
  const std::vector<char32_t> alphabet = {
      0x00,   0x20,   '\'',   'A',    'Z',     '_',     'a',     'z',     0x7F,
      0x80,   0xE9,   0x7FF,  0x800,  0x4E2D,  0xD7FF,  0xE000,  0xE001,  0xF8FF,
      0xFB01, 0xFEFF, 0xFFFD, 0xFFFF, 0x10000, 0x1F600, 0x1F601, 0xFFFFF, 0x10FFFF,
  };
  std::mt19937 rng(20240601);
  auto random_key = [&] {
    std::vector<char32_t> cps(rng() % 5);
    for (auto& cp : cps) cp = alphabet[rng() % alphabet.size()];
    return cps;
  };
  for (int iter = 0; iter < 50000; ++iter) {
    auto a = random_key();
    auto b = random_key();
    // Often share a prefix so the decisive character is deeper.
    if (rng() % 2 == 0 && !a.empty()) b.insert(b.begin(), a.begin(), a.begin() + rng() % a.size());
    std::string ua, ub;
    for (char32_t cp : a) ua += Utf8(cp);
    for (char32_t cp : b) ub += Utf8(cp);
    std::u16string wa = Utf16(a), wb = Utf16(b);
    int expected = wa < wb ? -1 : (wa == wb ? 0 : 1);
    std::string ea = EncodeKey(ua), eb = EncodeKey(ub);
    int c = std::memcmp(ea.data(), eb.data(), std::min(ea.size(), eb.size()));
    int got = c != 0 ? Sign(c) : (ea.size() < eb.size() ? -1 : (ea.size() == eb.size() ? 0 : 1));
    CAPTURE(ua);
    CAPTURE(ub);
    REQUIRE(got == expected);
    REQUIRE(Sign(CompareOrdinal(ua, ub)) == expected);
    REQUIRE(*DecodeKey(ea) == ua);
  }
  // The motivating pair: U+1F600 (surrogates D83D DE00) sorts before U+E000.
  CHECK(EncodeKey(Utf8(0x1F600)) < EncodeKey(Utf8(0xE000)));
  CHECK(EncodeKey(Utf8(0x1F600)) < EncodeKey(Utf8(0xFFFF)));
  CHECK(EncodeKey(Utf8(0xD7FF)) < EncodeKey(Utf8(0x1F600)));
}

}  // namespace
}  // namespace cerulean::storage
