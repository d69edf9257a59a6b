// Doubling backoff between retries, capped: the one used by every plugin that retries (status
// writes, Envoy's admin polls, OTLP exports).
#pragma once

#include <algorithm>
#include <cstdint>

namespace kuscia_host::model {

// Exponential backoff between retries: `initial`, doubling, at most `max` (milliseconds).
class Backoff {
public:
  Backoff() = default;
  Backoff(int64_t initialMillis, int64_t maxMillis) : initial_(initialMillis), max_(maxMillis) {}
  // The wait before the next try, and the one after it doubled.
  int64_t next() {
    current_ = std::min(max_, current_ == 0 ? initial_ : current_ * 2);
    return current_;
  }
  void reset() { current_ = 0; }
  int64_t current() const { return current_; }

private:
  int64_t initial_ = 200, max_ = 30000;
  int64_t current_ = 0;
};

} // namespace kuscia_host::model
