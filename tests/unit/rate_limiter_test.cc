#include "kube/rate_limiter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace kuscia_host::kube {
namespace {

constexpr int64_t kSecond = 1000000000;

TEST(RateLimiterTest, BurstThenOneTokenPerInterval) {
  ManualClock clock(0, 0);
  RateLimiter limiter(10, 3, clock); // 10/s, burst 3
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(limiter.tryTake().count(), 0) << i;
  EXPECT_EQ(limiter.tryTake().count(), kSecond / 10); // the 4th waits one interval
  clock.advanceNanos(10 * kSecond);                   // long idle: refills to the burst, not beyond
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(limiter.tryTake().count(), 0);
  EXPECT_GT(limiter.tryTake().count(), 0);
}

TEST(RateLimiterTest, TryTakeOnlyTakesAvailableTokens) {
  ManualClock clock;
  RateLimiter limiter(10, 2, clock);
  EXPECT_EQ(limiter.tryTake().count(), 0);
  EXPECT_EQ(limiter.tryTake().count(), 0);
  auto wait = limiter.tryTake(); // empty: nothing taken, 100 ms until the next token
  EXPECT_EQ(wait.count(), 100000000);
  EXPECT_EQ(limiter.tryTake().count(), 100000000); // still nothing was taken
  clock.advanceNanos(50000000);
  EXPECT_EQ(limiter.tryTake().count(), 50000000);
  clock.advanceNanos(50000000);
  EXPECT_EQ(limiter.tryTake().count(), 0);
  // However late the sender runs, tokens taken at send time never exceed burst + qps * window.
  std::vector<int64_t> sent;
  for (int i = 0; i < 500; ++i) {
    clock.advanceNanos(int64_t{i % 7} * 13000000); // irregular, sometimes late, sometimes early
    while (limiter.tryTake().count() != 0)
      clock.advanceNanos(1000000);
    sent.push_back(clock.monotonicNanos());
  }
  for (std::size_t lo = 0, hi = 0; hi < sent.size(); ++hi) {
    while (sent[hi] - sent[lo] >= 1000000000)
      ++lo;
    EXPECT_LE(hi - lo + 1, 2u + 10u) << "at " << hi;
  }
}

} // namespace
} // namespace kuscia_host::kube
