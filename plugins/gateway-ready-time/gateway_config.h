// gateway-ready-time's configuration: every key optional.
#pragma once

#include <kuscia_host/config_reader.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kuscia_host::plugins::gateway {

struct GatewayConfig {
  enum class Source { kEndpoints, kEnvoyAdmin };
  Source source = Source::kEndpoints;
  std::string envoyAdminUrl = "http://127.0.0.1:15000";
  int64_t pollMillis = 1000;
  bool millis = false; // precision of the written value
  int64_t retryMaxMillis = 30000;
};

const std::vector<sdk::ConfigKey>& gatewayConfigKeys();
// Throws sdk::ConfigError naming the key.
GatewayConfig parseGatewayConfig(std::string_view json);

} // namespace kuscia_host::plugins::gateway
