#include "gateway_config.h"

#include "envoy_admin.h"

namespace kuscia_host::plugins::gateway {

const std::vector<sdk::ConfigKey>& gatewayConfigKeys() {
  static const std::vector<sdk::ConfigKey> keys = {
      {"source", "string", "endpoints",
       "when a service counts as programmed: 'endpoints' (its Endpoints have an address, or it "
       "is an ExternalName with a valid name) or 'envoy-admin' (Envoy's admin API lists the "
       "cluster service-<name>)"},
      {"envoyAdminUrl", "string", "http://127.0.0.1:15000",
       "Envoy's admin API (source envoy-admin): http://host:port"},
      {"pollMillis", "integer", "1000",
       "how often Envoy's clusters are read (source envoy-admin; 50..60000)"},
      {"precision", "string", "seconds",
       "the written time: 'seconds' (RFC 3339 UTC whole seconds, as upstream writes and "
       "parses) or 'millis' (with milliseconds)"},
      {"retryMaxMillis", "integer", "30000",
       "longest wait between Envoy admin reads after failures, and before deciding again after "
       "a conflicting change of the service (100..600000)"},
  };
  return keys;
}

GatewayConfig parseGatewayConfig(std::string_view json) {
  sdk::ConfigReader r(json, gatewayConfigKeys());
  GatewayConfig c;
  c.source = r.oneOf("source", "endpoints", {"endpoints", "envoy-admin"}) == "envoy-admin"
                 ? GatewayConfig::Source::kEnvoyAdmin
                 : GatewayConfig::Source::kEndpoints;
  c.envoyAdminUrl = r.string("envoyAdminUrl", c.envoyAdminUrl);
  if (!parseHttpUrl(c.envoyAdminUrl))
    throw sdk::ConfigError("envoyAdminUrl", "config key 'envoyAdminUrl': '" + c.envoyAdminUrl +
                                                "' is not an http://host:port URL");
  c.pollMillis = r.integer("pollMillis", c.pollMillis, 50, 60000);
  c.millis = r.oneOf("precision", "seconds", {"seconds", "millis"}) == "millis";
  c.retryMaxMillis = r.integer("retryMaxMillis", c.retryMaxMillis, 100, 600000);
  return c;
}

} // namespace kuscia_host::plugins::gateway
