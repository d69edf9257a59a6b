// Clock: wall and monotonic time, injected everywhere time is read so tests can control it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace kuscia_host {

class Clock {
public:
  virtual ~Clock() = default;
  // Nanoseconds since the Unix epoch.
  virtual int64_t wallNanos() const = 0;
  // Nanoseconds on a clock that never goes backwards; the origin is unspecified.
  virtual int64_t monotonicNanos() const = 0;
};

class SystemClock final : public Clock {
public:
  int64_t wallNanos() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  int64_t monotonicNanos() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

// A clock the test sets by hand. Thread-safe.
class ManualClock final : public Clock {
public:
  explicit ManualClock(int64_t wallNanos = 0, int64_t monotonicNanos = 0)
      : wall_(wallNanos), mono_(monotonicNanos) {}
  int64_t wallNanos() const override { return wall_.load(); }
  int64_t monotonicNanos() const override { return mono_.load(); }
  void advanceNanos(int64_t ns) {
    wall_ += ns;
    mono_ += ns;
  }

private:
  std::atomic<int64_t> wall_;
  std::atomic<int64_t> mono_;
};

} // namespace kuscia_host
