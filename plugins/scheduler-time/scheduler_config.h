// scheduler-time's configuration: every key optional.
#pragma once

#include <kuscia_host/config_reader.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kuscia_host::plugins::scheduler {

struct SchedulerConfig {
  std::string taskNamespace = "cross-domain";
  int64_t coalesceMillis = 50;
  int64_t retryMaxMillis = 30000;
  int yieldAfterOverwrites = 2;
};

const std::vector<sdk::ConfigKey>& schedulerConfigKeys();
// Throws sdk::ConfigError naming the key.
SchedulerConfig parseSchedulerConfig(std::string_view json);

} // namespace kuscia_host::plugins::scheduler
