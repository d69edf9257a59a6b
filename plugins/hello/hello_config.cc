#include "hello_config.h"

namespace kuscia_host::plugins::hello {

const std::vector<sdk::ConfigKey>& helloConfigKeys() {
  static const std::vector<sdk::ConfigKey> keys = {
      {"intervalMillis", "integer", "10000", "milliseconds between heartbeats (10 .. 86400000)"},
      {"message", "string", "hello", "text logged with every heartbeat"},
  };
  return keys;
}

HelloConfig parseHelloConfig(std::string_view json) {
  sdk::ConfigReader reader(json, helloConfigKeys());
  HelloConfig c;
  c.intervalMillis = reader.integer("intervalMillis", c.intervalMillis, 10, 86400000);
  c.message = reader.string("message", c.message);
  if (c.message.empty()) throw sdk::ConfigError("config key 'message': must not be empty");
  return c;
}

} // namespace kuscia_host::plugins::hello
