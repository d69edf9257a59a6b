#include "hello.h"

#include <string>

namespace kuscia_host::plugins::hello {

Hello::Hello(sdk::Host host, std::string_view domain, std::string_view configJson)
    : sdk::Plugin(host), config_(parseHelloConfig(configJson)), domain_(domain),
      ticksTotal_(host.counter("kh_hello_ticks_total", "Heartbeats sent by the hello plugin")),
      lastTick_(host.gauge("kh_hello_last_tick_seconds",
                           "Wall time of the last heartbeat, Unix seconds")) {}

void Hello::onStart() {
  host().startTimer(static_cast<uint64_t>(config_.intervalMillis),
                    static_cast<uint64_t>(config_.intervalMillis));
  host().info("heartbeat every " + std::to_string(config_.intervalMillis) + " ms for domain " +
              domain_);
}

void Hello::onTimer(uint64_t /*timerId*/, uint64_t /*userTag*/) {
  ++ticks_;
  ticksTotal_.add(1);
  lastTick_.set(static_cast<double>(host().wallTimeNanos()) / 1e9);
  if (host().logEnabled(sdk::LogLevel::kDebug))
    host().debug(config_.message + " from " + domain_ + " (tick " + std::to_string(ticks_) + ")");
}

} // namespace kuscia_host::plugins::hello
