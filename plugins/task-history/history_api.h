// task-history's admin API, answered from a store (the plugin's routes, and the CLI reading a
// database directly through the same code):
//   GET /api/v1/history          {"items": [{"task", "namespace", "phase", "createTime",
//                                "summary"}], "continue": token}, newest first; filters since,
//                                until (RFC 3339, or a duration back from now: 90s, 30m, 12h,
//                                7d), party, phase (the task's), minStartupSeconds, blamePhase,
//                                q (a name prefix); limit (default 100, at most 500), continue;
//                                order=slowest: the slowest complete tasks, one page
//   GET /api/v1/history/stats    ?since=&until=&groupBy=party|blamePhase|day|day,party: per group
//   the
//                                tasks, the complete ones, p50/p90/p99 of startup seconds, and
//                                the critical path's seconds per phase (total and mean)
//   GET /api/v1/history/<task>   the stored document with its summary and phases; 404 when
//                                the task was never recorded (or was pruned)
//   GET /api/v1/history/jobs     {"items": [{"job", "namespace", "phase", "createTime"}]}, the
//                                kept KusciaJobs newest first (limit, default 100)
//   GET /api/v1/history/jobs/<job>  the job's view (kuscia_model/job_view.h) from the job as
//                                kept and its tasks' history; 404 when never kept
// A task named "stats" or "jobs" is shadowed by these routes.
#pragma once

#include <kuscia_host/plugin.hpp>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "history_store.h"

namespace kuscia_host::plugins::history {

inline constexpr std::string_view kHistoryRoute = "/api/v1/history";
inline constexpr std::size_t kDefaultHistoryLimit = 100;
inline constexpr std::size_t kMaxHistoryLimit = 500;

// A time as `since` and `until` take it: RFC 3339, or a duration back from `nowNanos`.
std::optional<int64_t> parseInstant(std::string_view text, int64_t nowNanos);

// The stats' groups as the API answers them (HistoryStore::stats).
nlohmann::json statsJson(const std::vector<StatsGroup>& groups);

// Answers a GET under kHistoryRoute from `store`. Store errors answer 503 with the reason.
void serveHistory(HistoryStore& store, const sdk::HttpRequest& request, sdk::HttpResponse& response,
                  int64_t nowNanos);

} // namespace kuscia_host::plugins::history
