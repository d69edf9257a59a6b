// Registration only: the entry point of task-timeline.so, and its command (`kuscia-host timeline`).
#include <kuscia_host/command.hpp>

#include "task_timeline.h"
#include "timeline_command.h"

KH_PLUGIN(kuscia_host::plugins::timeline::TaskTimeline, "task-timeline", "0.1.0",
          "fills KusciaTask podStatuses and serviceStatuses with create, start and ready times")

KH_COMMANDS(KH_COMMAND("timeline",
                       "Print a KusciaTask's startup: the summary, the critical path and every "
                       "pod's and service's times (from the clusters, or a host's admin API)",
                       kuscia_host::plugins::timeline::runTimelineCommand))
