#include "kube/rate_limiter.h"

#include <algorithm>

namespace kuscia_host::kube {

RateLimiter::RateLimiter(double qps, int burst, const Clock& clock)
    : qps_(qps > 0 ? qps : 1), burst_(burst > 0 ? burst : 1), clock_(clock), tokens_(burst_),
      last_(clock.monotonicNanos()) {}

std::chrono::nanoseconds RateLimiter::reserve() {
  std::lock_guard lock(mu_);
  int64_t now = clock_.monotonicNanos();
  tokens_ = std::min(burst_, tokens_ + static_cast<double>(now - last_) * 1e-9 * qps_);
  last_ = now;
  tokens_ -= 1; // may go negative: later callers queue behind earlier ones
  if (tokens_ >= 0) return std::chrono::nanoseconds(0);
  double wait = -tokens_ / qps_;
  waited_ += wait;
  return std::chrono::nanoseconds(static_cast<int64_t>(wait * 1e9));
}

double RateLimiter::waitedSeconds() const {
  std::lock_guard lock(mu_);
  return waited_;
}

} // namespace kuscia_host::kube
