// Registration only: the entry point of task-history.so.
#include "task_history.h"

KH_PLUGIN(kuscia_host::plugins::history::TaskHistory, "task-history", "0.1.0",
          "keeps every task's timeline after the task is gone, in SQLite or PostgreSQL")
KH_OFFLINE_ROUTES(kuscia_host::plugins::history::TaskHistory)
