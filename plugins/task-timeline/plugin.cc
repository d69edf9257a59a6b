// Registration only: the entry point of task-timeline.so.
#include "task_timeline.h"

KH_PLUGIN(kuscia_host::plugins::timeline::TaskTimeline, "task-timeline", "0.1.0",
          "fills KusciaTask podStatuses and serviceStatuses with create, start and ready times")
