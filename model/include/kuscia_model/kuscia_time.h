// Times as Kubernetes and Kuscia write them: the SDK's RFC 3339 helpers (kuscia_host/kube_text.hpp)
// under the plugins' namespace, and a duration between two of them.
#pragma once

#include <kuscia_host/kube_text.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace kuscia_host::model {

using sdk::formatTime;
using sdk::normalizeTime;
using sdk::parseTime;
using sdk::TimePrecision;

inline constexpr int64_t kSecond = 1000000000; // in nanoseconds

// An instant in nanoseconds since the epoch, or none: what std::optional<int64_t> says, in 8
// bytes instead of 16 (a pod's record keeps six). None is INT64_MIN, which no time an object
// shows parses to. The one optional instant of the model and the plugins.
class Instant {
public:
  constexpr Instant() = default;
  constexpr Instant(std::nullopt_t) {}                   // NOLINT(google-explicit-constructor)
  constexpr Instant(int64_t nanos) : nanos_(nanos) {}    // NOLINT(google-explicit-constructor)
  constexpr Instant(const std::optional<int64_t>& nanos) // NOLINT(google-explicit-constructor)
      : nanos_(nanos ? *nanos : kNone) {}
  constexpr explicit operator bool() const { return nanos_ != kNone; }
  constexpr int64_t operator*() const { return nanos_; } // only when there is one
  constexpr operator std::optional<int64_t>() const {    // NOLINT(google-explicit-constructor)
    return nanos_ != kNone ? std::optional<int64_t>(nanos_) : std::nullopt;
  }
  constexpr std::optional<int64_t> optional() const { return *this; }
  // RFC 3339 with the digits the instant needs (only when there is one).
  std::string text() const { return formatTime(nanos_, TimePrecision::kAsGiven); }
  constexpr void reset() { nanos_ = kNone; }
  friend constexpr bool operator==(Instant a, Instant b) { return a.nanos_ == b.nanos_; }

private:
  static constexpr int64_t kNone = INT64_MIN;
  int64_t nanos_ = kNone;
};
static_assert(sizeof(Instant) == sizeof(int64_t));

// Seconds from `from` to `to` (negative when the clocks disagree).
inline double secondsBetween(int64_t fromNanos, int64_t toNanos) {
  return static_cast<double>(toNanos - fromNanos) / 1e9;
}

} // namespace kuscia_host::model
