#include "timeline_config.h"

#include "kuscia.h"

namespace kuscia_host::plugins::timeline {

const std::vector<sdk::ConfigKey>& timelineConfigKeys() {
  static const std::vector<sdk::ConfigKey> keys = {
      taskNamespaceKey(),
      {"coalesceMillis", "integer", "50",
       "changes to one task within this window make one status write (0..60000; 0: at once)"},
      {"stuckAfterSeconds", "integer", "300",
       "an entry waiting in a phase longer than this counts in kuscia_timeline_stuck_entries "
       "(1..86400)"},
      {"retryMaxMillis", "integer", "30000",
       "longest wait between retries of a failed status write (100..600000)"},
      yieldAfterKey(),
  };
  return keys;
}

TimelineConfig parseTimelineConfig(std::string_view json) {
  sdk::ConfigReader r(json, timelineConfigKeys());
  TimelineConfig c;
  c.taskNamespace = readTaskNamespace(r);
  c.coalesceMillis = r.integer("coalesceMillis", c.coalesceMillis, 0, 60000);
  c.stuckAfterSeconds = r.integer("stuckAfterSeconds", c.stuckAfterSeconds, 1, 86400);
  c.retryMaxMillis = r.integer("retryMaxMillis", c.retryMaxMillis, 100, 600000);
  c.yieldAfterOverwrites = readYieldAfter(r);
  return c;
}

} // namespace kuscia_host::plugins::timeline
