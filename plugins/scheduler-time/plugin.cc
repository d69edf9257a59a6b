// Registration only: the entry point of scheduler-time.so.
#include "scheduler_time.h"

KH_PLUGIN(kuscia_host::plugins::scheduler::SchedulerTime, "scheduler-time", "0.1.0",
          "fills KusciaTask podStatuses scheduleTime from the PodScheduled condition")
