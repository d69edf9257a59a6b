// Renders a task's timeline document (kuscia_model/timeline.h) for a terminal: a
// table (every entry, each time, the durations between phases; the slowest entry of each phase
// marked, negative durations flagged as clock skew, missing times shown as pending, each entry's
// critical-path phases named), the summary above it, and a text Gantt chart (one row per pod and
// service, one letter per phase, capitals on the critical path, a time axis in seconds from the
// task's creation). Used by the commands
// `kuscia-host timeline` (task-timeline) and `kuscia-host history TASK` (task-history).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kuscia_host::model::timeline {

std::string renderTimelineTable(const nlohmann::json& doc);
// The task-level answer (kuscia_model/timeline_summary.h): startup, last party, blame, parties,
// the critical path; from the document's "summary" (computed when it has none).
std::string renderTimelineSummary(const nlohmann::json& doc);
// `width`: columns of the chart area.
std::string renderTimelineGantt(const nlohmann::json& doc, int width = 60);

// One document from several (the parties' clusters in p2p): entries merged key by key.
nlohmann::json mergeTimelines(const std::vector<nlohmann::json>& docs);

// Whether every pod and service entry of the document has all its times.
bool timelineComplete(const nlohmann::json& doc);

} // namespace kuscia_host::model::timeline
