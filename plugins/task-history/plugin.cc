// Registration only: the entry point of task-history.so, its offline routes and its command
// (`kuscia-host history`).
#include <kuscia_host/command.hpp>

#include "history_command.h"
#include "task_history.h"

KH_PLUGIN(kuscia_host::plugins::history::TaskHistory, "task-history", "0.1.0",
          "keeps every task's timeline after the task is gone, in SQLite or PostgreSQL")
KH_OFFLINE_ROUTES(kuscia_host::plugins::history::TaskHistory)
KH_COMMANDS(KH_COMMAND("history",
                       "The tasks task-history recorded, also after Kuscia deleted them: a list, "
                       "one task's stored timeline, or startup percentiles",
                       kuscia_host::plugins::history::runHistoryCommand))
