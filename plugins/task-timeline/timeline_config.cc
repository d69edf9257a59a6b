#include "timeline_config.h"

#include <kuscia_model/kuscia.h>

namespace kuscia_host::plugins::timeline {

const std::vector<sdk::ConfigKey>& timelineConfigKeys() {
  static const std::vector<sdk::ConfigKey> keys = [] {
    auto k = model::statusWriterKeys();
    // After coalesceMillis, the other key of when a write is made.
    k.insert(k.begin() + 2, {"deferMillis", "integer", "5000",
                             "a change that sets no readyTime (a new entry, its createTime or "
                             "startTime) waits up to this long for one that does, and goes in its "
                             "write (0..600000; 0: within coalesceMillis like any other)"});
    k.push_back({"stuckAfterSeconds", "integer", "300",
                 "an entry waiting in a phase longer than this counts in "
                 "kuscia_timeline_stuck_entries; a task whose longest wait began longer ago is "
                 "stuck, and its summary says why (summary.stuck) (1..86400)"});
    k.push_back({"keepFinishedSeconds", "integer", "3600",
                 "a finished task stays in the host's cache (listed by the timelines API and "
                 "page) this long after its completionTime; then the host may forget it "
                 "(0..2592000; task-history keeps it for good)"});
    k.push_back(
        {"keepFacts", "boolean", "true",
         "keep what the pods and their Events told (the first ready, the image pull, why "
         "each phase waited) on the task once it started or ended, in the kuscia-host/facts "
         "annotation (one merge patch of kusciatasks per task), so that the answer stays "
         "the same after Kuscia deletes the pods and after a restart"});
    return k;
  }();
  return keys;
}

TimelineConfig parseTimelineConfig(std::string_view json) {
  sdk::ConfigReader r(json, timelineConfigKeys());
  TimelineConfig c;
  readStatusWriterConfig(r, c);
  c.deferMillis = r.integer("deferMillis", 5000, 0, 600000);
  c.stuckAfterSeconds = r.integer("stuckAfterSeconds", c.stuckAfterSeconds, 1, 86400);
  c.keepFinishedSeconds =
      r.integer("keepFinishedSeconds", c.keepFinishedSeconds, 0, int64_t{30} * 86400);
  c.keepFacts = r.boolean("keepFacts", c.keepFacts);
  return c;
}

} // namespace kuscia_host::plugins::timeline
