// `kuscia-host history` (a plugin command, ABI 1.5): the tasks task-history recorded, also after
// Kuscia deleted them: a list (newest first, or the slowest), one task's stored timeline (as
// `timeline` prints it), or the stats (count, p50/p90/p99 of startup, seconds per critical-path
// phase) grouped by party, blamed phase or day. From a running host's admin server (--server),
// or straight from the database (--db, a SQLite file or a postgresql:// URI) through the same
// routes, so that both give the same answers.
#pragma once

#include <kuscia_host/command.hpp>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kuscia_host::plugins::history {

int runHistoryCommand(const sdk::CommandEnv& env, const std::vector<std::string>& args);

// The list as a table or CSV (one line per task: name, created, phase, startup, last party and
// blame), and the stats as a table.
std::string renderHistoryTable(const nlohmann::json& items, bool csv);
std::string renderHistoryStats(const nlohmann::json& stats);

} // namespace kuscia_host::plugins::history
