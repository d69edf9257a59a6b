// heartbeat.cc: the README's five-minute plugin, verbatim.
#include <kuscia_host/config_reader.hpp> // optional: typed config (needs nlohmann/json)
#include <kuscia_host/plugin.hpp>

class Heartbeat final : public kuscia_host::sdk::Plugin {
public:
  // Throwing here (e.g. a ConfigError) fails the instance with your message.
  Heartbeat(kuscia_host::sdk::Host host, std::string_view domain, std::string_view configJson)
      : Plugin(host),
        config_(configJson, {{"intervalMillis", "integer", "10000", "ms between beats"}}),
        intervalMs_(config_.integer("intervalMillis", 10000, 10, 86400000)),
        beats_(host.counter("heartbeat_beats_total", "Beats sent")) {}

  void onStart() override { host().startTimer(intervalMs_, intervalMs_); }

  void onTimer(uint64_t, uint64_t) override { // runs on this instance's serial executor
    beats_.add(1); // exported as heartbeat_beats_total{plugin="heartbeat",domain="..."}
    host().debug("beat");
  }

private:
  kuscia_host::sdk::ConfigReader config_;
  int64_t intervalMs_;
  kuscia_host::sdk::Metric beats_;
};

KH_PLUGIN(Heartbeat, "heartbeat", "1.0.0", "a periodic counter")
