#include "scheduler_config.h"

#include <kuscia_model/kuscia.h>

namespace kuscia_host::plugins::scheduler {

const std::vector<sdk::ConfigKey>& schedulerConfigKeys() {
  static const std::vector<sdk::ConfigKey> keys = model::statusWriterKeys();
  return keys;
}

SchedulerConfig parseSchedulerConfig(std::string_view json) {
  sdk::ConfigReader r(json, schedulerConfigKeys());
  SchedulerConfig c;
  readStatusWriterConfig(r, c);
  return c;
}

} // namespace kuscia_host::plugins::scheduler
