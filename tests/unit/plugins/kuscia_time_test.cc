// The plugins' RFC 3339 parser and formatter (plugins/common).
#include "kuscia_time.h"

#include <gtest/gtest.h>

#include <random>

namespace kuscia_host::plugins {
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

} // namespace
} // namespace kuscia_host::plugins
