// `kuscia-host history`: the tasks task-history recorded, also after Kuscia deleted them: a list
// (newest first, or the slowest), one task's stored timeline (as `timeline` prints it), or the
// stats (count, p50/p90/p99 of startup, seconds per critical-path phase) grouped by party, blamed
// phase or day. From a running host's admin server (--server), or straight from the database
// (--db, a SQLite file or a postgresql:// URI) through the task-history plugin's offline routes
// (ABI 1.2), so that both give the same answers.
#pragma once

#include <functional>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace kuscia_host {

struct HistoryOptions {
  std::string task; // one task's stored timeline instead of the list
  bool stats = false;
  std::string groupBy; // with stats: party, blamePhase or day
  std::string since = "7d", until, party, phase, blamePhase, namePrefix;
  std::optional<double> minStartupSeconds;
  int slowest = 0;              // the N slowest complete tasks instead of the newest
  int limit = 50;               // tasks listed (pages of at most 500 are fetched until then)
  std::string output = "table"; // table, json or csv (the list); table or json otherwise
  std::string server, tokenFile, caFile; // a host's admin server
  std::string db, passwordFile;          // or the database itself
  std::vector<std::string> pluginDirs;   // where task-history.so is looked for (--db)
};

// GET `path` with `query` from where the options point; the JSON answer or the error it gave.
using HistoryFetch =
    std::function<Result<nlohmann::json>(const std::string& path, const std::string& query)>;
Result<HistoryFetch> historySource(const HistoryOptions& options);

// The list's query string from the options (without limit and continue).
std::string historyQuery(const HistoryOptions& options);

// The list as a table or CSV (one line per task: name, created, phase, startup, last party and
// blame).
std::string renderHistoryTable(const nlohmann::json& items, bool csv);
std::string renderHistoryStats(const nlohmann::json& stats);

// Runs the command; the exit status (0 ok, 1 the source failed or the task is unknown, 2 usage).
int runHistory(const HistoryOptions& options, std::ostream& out, std::ostream& err);

} // namespace kuscia_host
