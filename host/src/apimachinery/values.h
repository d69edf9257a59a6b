// Scalar encodings of the Kubernetes wire format: Go-style booleans in query parameters (times
// are the SDK's kube_text.hpp, one implementation for the host and the plugins).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kuscia_host::apimachinery {

// Go's strconv.ParseBool, which the API server uses for query parameters:
// 1 t T TRUE true True / 0 f F FALSE false False; anything else is nullopt.
std::optional<bool> parseGoBool(const std::string& s);

// A query parameter as a Go boolean: absent or malformed is `fallback`.
bool goBoolOr(const std::optional<std::string>& value, bool fallback);

} // namespace kuscia_host::apimachinery
