// otel-export's configuration: `endpoint` is required, every other key has a default.
#pragma once

#include <kuscia_host/config_reader.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kuscia_host::plugins::otel {

// Where OTLP/HTTP requests go: scheme, host, port and the request target.
struct Endpoint {
  bool tls = false;
  std::string host;
  uint16_t port = 0;
  std::string target; // "/v1/traces" when the URL has no path
  std::string url;    // as configured, for messages
};
// http(s)://host[:port][/path]; nullopt-like (host empty) with `error` set when it is not one.
Endpoint parseEndpoint(const std::string& url, std::string& error);

struct OtelConfig {
  Endpoint endpoint;
  bool json = false; // encoding: application/json instead of application/x-protobuf
  bool gzip = true;
  // Extra request headers: `headers` as given, then `headerFiles` read from their files. Their
  // values are secrets as far as logs go: never logged.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string caFile;
  int64_t timeoutMillis = 10000;
  int64_t batchMaxSpans = 512;
  int64_t batchDelayMillis = 2000;
  int64_t queueMaxSpans = 4096;
  int64_t retryInitialMillis = 1000;
  int64_t retryMaxMillis = 30000;
  int64_t retryGiveUpSeconds = 300;
  int64_t stuckAfterSeconds = 300;
  int64_t resendWindowSeconds = 600;
  std::string serviceName = "kuscia-host";
  std::string taskNamespace = "cross-domain";
};

const std::vector<sdk::ConfigKey>& otelConfigKeys();
// Throws sdk::ConfigError naming the key (a header file that cannot be read included).
OtelConfig parseOtelConfig(std::string_view json);

} // namespace kuscia_host::plugins::otel
