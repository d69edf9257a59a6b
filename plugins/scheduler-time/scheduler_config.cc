#include "scheduler_config.h"

#include "kuscia.h"

namespace kuscia_host::plugins::scheduler {

const std::vector<sdk::ConfigKey>& schedulerConfigKeys() {
  static const std::vector<sdk::ConfigKey> keys = {
      taskNamespaceKey(),
      {"coalesceMillis", "integer", "50",
       "changes to one task within this window make one status write (0..60000; 0: at once)"},
      {"retryMaxMillis", "integer", "30000",
       "longest wait between retries of a failed status write (100..600000)"},
      yieldAfterKey(),
  };
  return keys;
}

SchedulerConfig parseSchedulerConfig(std::string_view json) {
  sdk::ConfigReader r(json, schedulerConfigKeys());
  SchedulerConfig c;
  c.taskNamespace = readTaskNamespace(r);
  c.coalesceMillis = r.integer("coalesceMillis", c.coalesceMillis, 0, 60000);
  c.retryMaxMillis = r.integer("retryMaxMillis", c.retryMaxMillis, 100, 600000);
  c.yieldAfterOverwrites = readYieldAfter(r);
  return c;
}

} // namespace kuscia_host::plugins::scheduler
