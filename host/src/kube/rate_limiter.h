// Client-side rate limit for requests to the API server (writes and lists; never watches): a
// token bucket of `burst` tokens refilled at `qps` per second, as client-go's flowcontrol.
// Callers take a token at the moment they send (or learn how long until one is available), so
// the configured rate is never exceeded however many callers share the limiter.
#pragma once

#include <chrono>
#include <mutex>

#include "runtime/clock.h"

namespace kuscia_host::kube {

class RateLimiter {
public:
  RateLimiter(double qps, int burst, const Clock& clock);

  // Takes a token if one is available now (returns zero); otherwise takes nothing and returns
  // how long until one is. Taking tokens only at the moment of sending keeps the rate even when
  // the sender runs late. Thread-safe.
  std::chrono::nanoseconds tryTake();

private:
  double qps_;
  double burst_;
  const Clock& clock_;
  mutable std::mutex mu_;
  double tokens_;
  int64_t last_;
};

} // namespace kuscia_host::kube
