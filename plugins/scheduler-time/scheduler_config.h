// scheduler-time's configuration: every key optional.
#pragma once

#include <kuscia_host/config_reader.hpp>

#include <kuscia_model/status_writer.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kuscia_host::plugins::scheduler {

struct SchedulerConfig : model::StatusWriterConfig {};

const std::vector<sdk::ConfigKey>& schedulerConfigKeys();
// Throws sdk::ConfigError naming the key.
SchedulerConfig parseSchedulerConfig(std::string_view json);

} // namespace kuscia_host::plugins::scheduler
