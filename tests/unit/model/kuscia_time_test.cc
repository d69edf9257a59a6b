// The model's times: the RFC 3339 parser and formatter, and Instant (model/kuscia_time.h).
#include <kuscia_model/kuscia_time.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <random>
#include <string>

namespace kuscia_host::model {
namespace {

TEST(KusciaTimeTest, ParsesRfc3339WithOffsetsAndFractions) {
  EXPECT_EQ(parseTime("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(parseTime("2024-05-20T08:00:10Z"), int64_t{1716192010} * 1000000000);
  EXPECT_EQ(parseTime("2024-05-20T16:00:10+08:00"), parseTime("2024-05-20T08:00:10Z"));
  EXPECT_EQ(parseTime("2024-05-20T03:30:10-04:30"), parseTime("2024-05-20T08:00:10Z"));
  EXPECT_EQ(*parseTime("2024-05-20T08:00:10.25Z") - *parseTime("2024-05-20T08:00:10Z"), 250000000);
  EXPECT_EQ(*parseTime("2024-05-20T08:00:10.123456789Z") % 1000000000, 123456789);
  EXPECT_EQ(parseTime("2024-02-29T00:00:00z"), parseTime("2024-02-29T00:00:00Z"));
  EXPECT_EQ(parseTime("1969-12-31T23:59:59Z"), -1000000000);
}

TEST(KusciaTimeTest, RefusesWhatIsNotRfc3339) {
  for (const char* bad :
       {"", "2024-05-20", "2024-05-20 08:00:10Z", "2024-05-20T08:00:10", "2024-13-01T00:00:00Z",
        "2023-02-29T00:00:00Z", "2024-05-20T24:00:00Z", "2024-05-20T08:60:00Z",
        "2024-05-20T08:00:60Z", "2024-05-20T08:00:10.Z", "2024-05-20T08:00:10.1234567891Z",
        "2024-05-20T08:00:10+8:00", "2024-05-20T08:00:10+08:00x", "yesterday",
        "2024-05-20T08:00:1Z", "+2024-05-20T08:00:10Z"})
    EXPECT_FALSE(parseTime(bad)) << bad;
}

// The date and time are read eight bytes at a time: every byte of them, replaced by each of the
// 256 values, is judged as a reading of one character at a time judges it, and every day of a
// leap year, a common year and the century years around them reads as the civil calendar has it.
std::optional<int64_t> readOneByOne(const std::string& s) {
  auto digit = [&s](std::size_t i) { return s[i] >= '0' && s[i] <= '9' ? s[i] - '0' : -1; };
  auto number = [&digit](std::size_t i, std::size_t n) {
    int64_t v = 0;
    for (std::size_t k = 0; k < n; ++k) {
      if (digit(i + k) < 0) return int64_t{-1};
      v = v * 10 + digit(i + k);
    }
    return v;
  };
  if (s.size() != 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
      s[13] != ':' || s[16] != ':' || s[19] != 'Z')
    return std::nullopt;
  const int64_t y = number(0, 4), mo = number(5, 2), d = number(8, 2), h = number(11, 2),
                mi = number(14, 2), se = number(17, 2);
  if (y < 0 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || se < 0 ||
      se > 59)
    return std::nullopt;
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  const int64_t days[] = {31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (d > days[mo - 1]) return std::nullopt;
  const int64_t secs =
      sdk::detail::daysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 +
      h * 3600 + mi * 60 + se;
  if (secs < -9223372036 || secs > 9223372035) return std::nullopt;
  return secs * 1000000000;
}

TEST(KusciaTimeTest, ReadsEveryByteOfTheDateAndTimeAsOneAtATime) {
  std::size_t parsed = 0;
  for (std::string base : {"2024-05-20T08:00:10Z", "1999-12-31t23:59:59Z", "2000-02-29T12:34:56Z"})
    for (std::size_t at = 0; at < 19; ++at)
      for (int c = 0; c < 256; ++c) {
        std::string s = base;
        s[at] = static_cast<char>(c);
        ASSERT_EQ(parseTime(s), readOneByOne(s)) << s;
        parsed += readOneByOne(s) ? 1 : 0;
      }
  EXPECT_GT(parsed, 100U); // the variants that are times were read, not only refused
  char text[32];
  for (int year : {1900, 2000, 2023, 2024, 2100})
    for (int month = 1; month <= 12; ++month)
      for (int day = 0; day <= 32; ++day) {
        std::snprintf(text, sizeof text, "%04d-%02d-%02dT00:00:00Z", year, month, day);
        ASSERT_EQ(parseTime(text), readOneByOne(text)) << text;
      }
}

// Found by fuzz_plugin_inputs: a year past 2262 overflowed the nanosecond count (UB, and a wrong
// time). Times outside 64-bit nanoseconds are refused; the edges themselves parse.
TEST(KusciaTimeTest, RefusesTimesOutsideTheNanosecondRange) {
  EXPECT_FALSE(parseTime("9999-12-31T23:59:59.999Z"));
  EXPECT_FALSE(parseTime("2262-04-11T23:47:16Z"));
  EXPECT_FALSE(parseTime("1677-09-21T00:12:43Z"));
  EXPECT_FALSE(parseTime("0000-01-01T00:00:00Z"));
  EXPECT_EQ(parseTime("2262-04-11T23:47:15.999999999Z"), int64_t{9223372035999999999});
  EXPECT_EQ(parseTime("1677-09-21T00:12:44Z"), int64_t{-9223372036} * 1000000000);
}

TEST(KusciaTimeTest, FormatsUtcAtTheAskedPrecision) {
  int64_t t = *parseTime("2024-05-20T16:00:10.250+08:00");
  EXPECT_EQ(formatTime(t), "2024-05-20T08:00:10Z");
  EXPECT_EQ(formatTime(t, TimePrecision::kMillis), "2024-05-20T08:00:10.250Z");
  EXPECT_EQ(formatTime(t, TimePrecision::kAsGiven), "2024-05-20T08:00:10.25Z");
  EXPECT_EQ(formatTime(-1000000000), "1969-12-31T23:59:59Z");
  EXPECT_EQ(normalizeTime("2024-05-20T16:00:10+08:00"), "2024-05-20T08:00:10Z");
  for (const char* s : {"2000-02-29T12:34:56Z", "2099-12-31T23:59:59.999Z", "1999-01-01T00:00:00Z"})
    EXPECT_EQ(normalizeTime(s), s);
  // Every instant of the nanosecond range, at random, at each precision: the text parses back to
  // the instant it was written from (to the precision's truncation).
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20000; ++i) {
    auto ns = static_cast<int64_t>(rng());
    if (i % 4 == 1) ns -= ns % 1000000000;                  // whole seconds
    if (i % 4 == 2) ns -= ns % 1000000;                     // whole milliseconds
    if (i % 4 == 3) ns %= int64_t{4102444800} * 1000000000; // 1840..2100
    int64_t secs = ns >= 0 ? ns / 1000000000 : -((-ns + 999999999) / 1000000000);
    int64_t frac = ns - secs * 1000000000;
    EXPECT_EQ(parseTime(formatTime(ns, TimePrecision::kAsGiven)), ns) << ns;
    EXPECT_EQ(parseTime(formatTime(ns)), ns - frac) << ns;
    EXPECT_EQ(parseTime(formatTime(ns, TimePrecision::kMillis)), ns - frac % 1000000) << ns;
    EXPECT_EQ(formatTime(ns, TimePrecision::kMillis).size(), 24u) << ns;
  }
}

TEST(InstantTest, IsAnOptionalInstantInEightBytes) {
  Instant none;
  EXPECT_FALSE(none);
  EXPECT_EQ(none.optional(), std::nullopt);
  EXPECT_FALSE(Instant(std::nullopt));
  EXPECT_FALSE(Instant(std::optional<int64_t>()));

  auto at = parseTime("2026-12-01T08:00:01.5Z");
  ASSERT_TRUE(at);
  Instant t = at;
  ASSERT_TRUE(t);
  EXPECT_EQ(*t, *at);
  EXPECT_EQ(t.optional(), at);
  EXPECT_EQ(t.text(), "2026-12-01T08:00:01.5Z");
  EXPECT_EQ(t, Instant(*at));
  EXPECT_FALSE(t == none);
  // The epoch and instants before it are instants, not "none".
  EXPECT_TRUE(Instant(int64_t{0}));
  EXPECT_TRUE(Instant(int64_t{-kSecond}));
  t.reset();
  EXPECT_FALSE(t);
  EXPECT_EQ(sizeof(Instant), 8U);
}

} // namespace
} // namespace kuscia_host::model
