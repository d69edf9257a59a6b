// heartbeat.h: the plugin, a class deriving from kuscia_host::sdk::Plugin.
#pragma once

#include <kuscia_host/config_reader.hpp> // optional: typed config
#include <kuscia_host/plugin.hpp>

class Heartbeat final : public kuscia_host::sdk::Plugin {
public:
  // Throwing here (e.g. a ConfigError) fails the instance with your message.
  Heartbeat(kuscia_host::sdk::Host host, std::string_view /*domain*/, std::string_view configJson)
      : Plugin(host), config_(configJson, configKeys()),
        intervalMs_(config_.integer("intervalMillis", 10000, 10, 86400000)),
        beats_(host.counter("heartbeat_beats_total", "Beats sent")) {}

  // Lets `kuscia-host check-config` report bad settings without creating an instance.
  static void validateConfig(std::string_view configJson) {
    kuscia_host::sdk::ConfigReader r(configJson, configKeys());
    r.integer("intervalMillis", 10000, 10, 86400000);
  }

  void onStart() override { host().startTimer(intervalMs_, intervalMs_); }

  void onTimer(uint64_t, uint64_t) override { // runs on this instance's serial executor
    beats_.add(1); // exported as heartbeat_beats_total{plugin="heartbeat",domain="..."}
    host().debug("beat");
  }

private:
  static std::vector<kuscia_host::sdk::ConfigKey> configKeys() {
    return {{"intervalMillis", "integer", "10000", "ms between beats"}};
  }

  kuscia_host::sdk::ConfigReader config_;
  int64_t intervalMs_;
  kuscia_host::sdk::Metric beats_;
};
