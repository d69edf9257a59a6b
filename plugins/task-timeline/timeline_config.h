// task-timeline's configuration: every key optional (the defaults suit a Kuscia deployment).
#pragma once

#include <kuscia_host/config_reader.hpp>

#include <kuscia_model/status_writer.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kuscia_host::plugins::timeline {

struct TimelineConfig : model::StatusWriterConfig {
  int64_t stuckAfterSeconds = 300;
  int64_t keepFinishedSeconds = 3600;
  bool keepFacts = true;
};

// The table of keys: the config reference (README) and the unknown-key check come from it.
const std::vector<sdk::ConfigKey>& timelineConfigKeys();

// Throws sdk::ConfigError naming the key.
TimelineConfig parseTimelineConfig(std::string_view json);

} // namespace kuscia_host::plugins::timeline
