// hello: a heartbeat. Every intervalMillis it counts a tick (kh_hello_ticks_total), records the
// wall time of the last one (kh_hello_last_tick_seconds) and logs its message at debug level.
// Small on purpose: it is the example of "write a plugin in five minutes".
#pragma once

#include <kuscia_host/plugin.hpp>

#include <string_view>

#include "hello_config.h"

namespace kuscia_host::plugins::hello {

class Hello final : public sdk::Plugin {
public:
  Hello(sdk::Host host, std::string_view domain, std::string_view configJson);

  void onStart() override;
  void onTimer(uint64_t timerId, uint64_t userTag) override;

  uint64_t ticks() const { return ticks_; }

private:
  HelloConfig config_;
  std::string domain_;
  sdk::Metric ticksTotal_;
  sdk::Metric lastTick_;
  uint64_t ticks_ = 0;
};

} // namespace kuscia_host::plugins::hello
