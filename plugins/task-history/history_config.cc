#include "history_config.h"

#include <fstream>
#include <sstream>

#include <kuscia_model/kuscia.h>

namespace kuscia_host::plugins::history {

const std::vector<sdk::ConfigKey>& historyConfigKeys() {
  static const std::vector<sdk::ConfigKey> keys = {
      {"database", "string", kDefaultDatabase,
       "a SQLite file (created with mode 0600), or a postgresql:// URI (libpq's form)"},
      {"passwordFile", "string", "",
       "a file holding PostgreSQL's password (else the URI's, PGPASSWORD or ~/.pgpass); never "
       "logged"},
      model::taskNamespaceKey(),
      {"retentionDays", "integer", "90", "tasks created longer ago are deleted (1..36500)"},
      {"maxTasks", "integer", "0",
       "at most this many tasks are kept, the oldest go first (0: no cap)"},
      {"queueSize", "integer", "10000",
       "recordings waiting for the database; beyond, they are dropped and counted (100..1000000)"},
      {"recordDelaySeconds", "integer", "5",
       "a changed task is recorded this long after its first change, with every change since "
       "(0..300)"},
      {"stuckAfterSeconds", "integer", "300",
       "a task not ready whose longest wait began this long ago is stuck, and its row says why "
       "(summary.stuck, the reason filter): recorded again this long after its last change; "
       "keep it equal to task-timeline's (1..86400)"},
  };
  return keys;
}

HistoryConfig parseHistoryConfig(std::string_view json) {
  sdk::ConfigReader r(json, historyConfigKeys());
  HistoryConfig c;
  c.database = r.string("database", c.database);
  if (c.database.empty())
    throw sdk::ConfigError("database", "config key 'database': empty (a file or a URI)");
  c.taskNamespace = model::readTaskNamespace(r);
  c.retentionDays = r.integer("retentionDays", c.retentionDays, 1, 36500);
  c.maxTasks = r.integer("maxTasks", c.maxTasks, 0, 1000000000);
  c.queueSize = r.integer("queueSize", c.queueSize, 100, 1000000);
  c.recordDelaySeconds = r.integer("recordDelaySeconds", c.recordDelaySeconds, 0, 300);
  c.stuckAfterSeconds = r.integer("stuckAfterSeconds", c.stuckAfterSeconds, 1, 86400);
  std::string passwordFile = r.string("passwordFile", "");
  if (!passwordFile.empty()) {
    std::ifstream in(passwordFile);
    std::ostringstream text;
    if (!in || !(text << in.rdbuf()))
      throw sdk::ConfigError("passwordFile",
                             "config key 'passwordFile': cannot read " + passwordFile);
    c.password = text.str();
    while (!c.password.empty() && (c.password.back() == '\n' || c.password.back() == '\r'))
      c.password.pop_back();
  }
  return c;
}

} // namespace kuscia_host::plugins::history
