// Times as Kubernetes and Kuscia write them: the SDK's RFC 3339 helpers (kuscia_host/kube_text.hpp)
// under the plugins' namespace, and a duration between two of them.
#pragma once

#include <kuscia_host/kube_text.hpp>

#include <cstdint>

namespace kuscia_host::model {

using sdk::formatTime;
using sdk::normalizeTime;
using sdk::parseTime;
using sdk::TimePrecision;

inline constexpr int64_t kSecond = 1000000000; // in nanoseconds

// Seconds from `from` to `to` (negative when the clocks disagree).
inline double secondsBetween(int64_t fromNanos, int64_t toNanos) {
  return static_cast<double>(toNanos - fromNanos) / 1e9;
}

} // namespace kuscia_host::model
