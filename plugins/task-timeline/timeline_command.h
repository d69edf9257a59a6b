// `kuscia-host timeline TASK...` (a plugin command, ABI 1.5): a task's timeline and its summary,
// from the clusters (the task's status, completed by its pods and their Events as task-timeline
// gathers them) or from a host's admin API (--server), printed as a table, a text Gantt chart,
// both, or JSON. --watch redraws until the task is ready or failed; --wait waits until every
// task named is complete; --job JOB prints a KusciaJob's view (kuscia_model/job_view.h), and
// with --wait waits for its tasks first (the demo shows its jobs so).
#pragma once

#include <kuscia_host/command.hpp>

#include <string>
#include <vector>

namespace kuscia_host::plugins::timeline {

int runTimelineCommand(const sdk::CommandEnv& env, const std::vector<std::string>& args);

} // namespace kuscia_host::plugins::timeline
