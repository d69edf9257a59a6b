// Scalar encodings of the Kubernetes wire format: Go-style booleans in query parameters and
// metav1.Time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kuscia_host::k8s {

// Go's strconv.ParseBool, which the API server uses for query parameters:
// 1 t T TRUE true True / 0 f F FALSE false False; anything else is nullopt.
std::optional<bool> parseGoBool(const std::string& s);

// A query parameter as a Go boolean: absent or malformed is `fallback`.
bool goBoolOr(const std::optional<std::string>& value, bool fallback);

// RFC 3339, UTC, whole seconds (metav1.Time), e.g. 2024-05-01T10:00:00Z.
std::string formatTime(int64_t unixNanos);

} // namespace kuscia_host::k8s
