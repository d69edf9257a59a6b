#include "kube/rate_limiter.h"

#include <algorithm>

namespace kuscia_host::kube {

RateLimiter::RateLimiter(double qps, int burst, const Clock& clock)
    : qps_(qps > 0 ? qps : 1), burst_(burst > 0 ? burst : 1), clock_(clock), tokens_(burst_),
      last_(clock.monotonicNanos()) {}

std::chrono::nanoseconds RateLimiter::tryTake() {
  std::lock_guard lock(mu_);
  int64_t now = clock_.monotonicNanos();
  tokens_ = std::min(burst_, tokens_ + static_cast<double>(now - last_) * 1e-9 * qps_);
  last_ = now;
  if (tokens_ >= 1) {
    tokens_ -= 1;
    return std::chrono::nanoseconds(0);
  }
  // At least 1 ns, so that "zero" always means "taken".
  return std::chrono::nanoseconds(
      std::max<int64_t>(1, static_cast<int64_t>((1 - tokens_) / qps_ * 1e9)));
}

} // namespace kuscia_host::kube
