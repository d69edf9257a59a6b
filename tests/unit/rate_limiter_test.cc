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
    EXPECT_EQ(limiter.reserve().count(), 0) << i;
  EXPECT_EQ(limiter.reserve().count(), kSecond / 10);     // the 4th waits one interval
  EXPECT_EQ(limiter.reserve().count(), 2 * kSecond / 10); // the 5th queues behind it
  EXPECT_NEAR(limiter.waitedSeconds(), 0.3, 1e-9);
  clock.advanceNanos(10 * kSecond); // long idle: refills to the burst, not beyond
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(limiter.reserve().count(), 0);
  EXPECT_GT(limiter.reserve().count(), 0);
}

TEST(RateLimiterTest, ScheduledRequestsNeverExceedTheRate) {
  ManualClock clock(0, 0);
  const double qps = 50;
  const int burst = 5;
  RateLimiter limiter(qps, burst, clock);
  std::vector<int64_t> sendAt;
  for (int i = 0; i < 500; ++i) {
    if (i % 7 == 0) clock.advanceNanos(kSecond / 100); // callers arrive in uneven bursts
    sendAt.push_back(clock.monotonicNanos() + limiter.reserve().count());
  }
  std::sort(sendAt.begin(), sendAt.end());
  // In any window of length w, at most burst + qps*w requests are sent.
  for (std::size_t i = 0; i < sendAt.size(); ++i) {
    for (std::size_t j = i; j < sendAt.size(); ++j) {
      double w = static_cast<double>(sendAt[j] - sendAt[i]) / kSecond;
      ASSERT_LE(static_cast<double>(j - i + 1), burst + qps * w + 1e-6)
          << "window " << i << ".." << j;
    }
  }
}

} // namespace
} // namespace kuscia_host::kube
