// A KusciaJob's startup as one answer (docs/design/control-plane.md, "The job"): its approval,
// its tasks in dependency order, each task's wait in the job's queue and its startup beside its
// running time, and the job's total startup overhead. task-timeline serves it
// (/api/v1/jobs/<job>), `kuscia-host timeline --job` prints it, the page draws it: all from
// jobDocument() over the job, what the host observed of it, and its tasks' timeline documents.
//
//   {"job", "namespace", "phase", "initiator", "createTime", "completionTime",
//    "approval": phase,                     (a job that awaited its partners' approval)
//    "tasks": [{"alias", "task", "dependencies": [alias, ...], "phase", "createTime",
//               "queued": phase, "allReadyTime", "startupSeconds", "overheadSeconds",
//               "runningSeconds", "blame", "failure", "stuck"}, ...],
//    "approvalSeconds", "startupOverheadSeconds", "failure"}
//   phase: {"phase": "approval" | "queued", "from", "to", "seconds", "party", "reason",
//           "observed": true, "precisionSeconds", "ongoing": true}
//
// Kuscia writes no time for a job's approval: the host observes it (its watch delivered the
// change; "observed": true), keeps the observation on the job (annotation kuscia-host/observed)
// so that it survives a restart, and never makes one up: a change it did not see while watching
// leaves the time out.
#pragma once

#include <kuscia_model/control_plane.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace kuscia_host::model::job {

inline constexpr const char* kObservedAnnotation = "kuscia-host/observed";
inline constexpr const char* kObservedPointer = "/metadata/annotations/kuscia-host~1observed";
// An observation is the host's clock when its watch delivered the change, to the whole second
// as Kuscia's own times: late by the watch's delay (a healthy API server keeps it well under a
// second), early by the cut fraction.
inline constexpr double kObservedPrecisionSeconds = 1;

// What the host saw of a job that Kuscia writes no time for (wall-clock nanoseconds).
struct Observations {
  std::optional<int64_t> awaiting;         // first seen AwaitingApproval
  std::optional<int64_t> approved;         // seen leaving it (Pending or later, or rejected)
  std::map<std::string, int64_t> accepted; // party -> seen JobAccepted while it awaited
  bool operator==(const Observations&) const = default;
};
// From the annotation's value ({"v": 1, "awaiting", "approved": RFC 3339, "accepted": {"<party>":
// RFC 3339}}); nothing when absent or not one this version reads.
Observations observationsOf(std::string_view annotation);
std::string observationsText(const Observations& o);
// The merge patch that sets the annotation on the job.
std::string observationsPatch(const Observations& o);

// The subscription to the KusciaJobs of `taskNamespace` with what the job view reads (the job's
// metadata, spec and status, and the observations' annotation), and what such an event's or
// cached object's fields hold: the job, and the annotation's value ("" when absent).
sdk::Subscription jobSubscription(const std::string& taskNamespace);
struct JobFields {
  control::Job job;
  std::string observed;
};
JobFields jobOfFields(std::string_view fieldsJson);

// Takes in the job as the host sees it at `nowNanos`. `watched`: the host saw this job awaiting
// approval while it ran (a change it did not see happen is not dated). Whether `o` changed.
bool observe(Observations& o, const control::Job& job, int64_t nowNanos, bool watched);

// The job's document from the job, the observations and its tasks' timeline documents (by task
// name, each with its "summary"; a task not created yet is absent). `nowNanos` dates what lasts.
nlohmann::json jobDocument(const control::Job& job, const Observations& o,
                           const std::map<std::string, nlohmann::json>& tasks, int64_t nowNanos);

// What came before the task in its job (a task's document carries it as "job"): {"job",
// "approval", "queued"} from the job's document; null when the job does not list the task.
nlohmann::json jobContext(const nlohmann::json& jobDoc, std::string_view task);

// The job's tasks' aliases in dependency order (each after its dependencies, else the spec's).
std::vector<const control::Job::Task*> dependencyOrder(const control::Job& job);

// The job view as text: its approval, then a line per task (queued, startup, running).
std::string renderJob(const nlohmann::json& doc);

} // namespace kuscia_host::model::job
