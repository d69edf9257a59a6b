// Client-side rate limit for requests to the API server (writes and lists; never watches): a
// token bucket of `burst` tokens refilled at `qps` per second, as client-go's flowcontrol.
// Callers reserve a token and wait the returned delay before sending, so the configured rate is
// never exceeded however many callers share the limiter.
#pragma once

#include <chrono>
#include <mutex>

#include "runtime/clock.h"

namespace kuscia_host::kube {

class RateLimiter {
public:
  RateLimiter(double qps, int burst, const Clock& clock);

  // Takes one token; returns how long to wait before using it (zero when one was available).
  // Thread-safe.
  std::chrono::nanoseconds reserve();
  // Total delay handed out so far, in seconds (for the rate-limiter wait metric).
  double waitedSeconds() const;

private:
  double qps_;
  double burst_;
  const Clock& clock_;
  mutable std::mutex mu_;
  double tokens_;
  int64_t last_;
  double waited_ = 0;
};

} // namespace kuscia_host::kube
