// The spans of a task's startup, from its timeline document (kuscia_model/timeline.h with
// timeline_summary.h's phases and summary), as one domain's otel-export owes them.
//
// Ids are derived (kuscia_model/trace_ids.h): the trace id from the task's name, a span id from
// the trace id and the span's party, entry, incarnation and kind: for the task's root, party,
// entry and incarnation empty, kind "task"; a party: entry and incarnation empty, kind "party";
// an entry (pod or service "<ns>/<name>"): incarnation its createTime (RFC 3339, as the document
// holds it), kind "entry"; an entry's phase: kind the phase's name.
//
// The tree: task (root, the initiator's host only) -> party -> pod | service -> phase; and under
// the root (the initiator's host), what came before the task in its job: job.approval and
// job.queued (kind "job.approval", "job.queued"; party, entry and incarnation empty).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <kuscia_model/trace_ids.h>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kuscia_host::plugins::otel {

using model::hex;
using model::SpanId;
using model::spanIdOf;
using model::TraceId;
using model::traceIdOf;

struct Attribute {
  std::string key;
  std::variant<std::string, int64_t, bool> value;
};

struct SpanEvent {
  int64_t timeNanos = 0;
  std::string name;
  std::vector<Attribute> attributes;
};

// OTLP's Status.code.
enum class StatusCode : int { kUnset = 0, kOk = 1, kError = 2 };

struct SpanData {
  TraceId traceId{};
  SpanId spanId{};
  std::optional<SpanId> parent;
  bool parentRemote = false; // the parent is another host's span (a p2p party under the root)
  std::string name;
  int64_t startNanos = 0;
  int64_t endNanos = 0;
  std::vector<Attribute> attributes;
  std::vector<SpanEvent> events;
  StatusCode status = StatusCode::kUnset;
  std::string statusMessage;
  bool pending = false; // a phase still going on, exported because it is stuck (end = now)
};

// The KusciaTask fields otel-export subscribes to, in this order.
inline constexpr const char* kTaskFields[] = {
    "/metadata/creationTimestamp",
    "/spec/initiator",
    "/spec/parties",
    "/status/phase",
    "/status/partyTaskStatus",
    "/status/conditions",
    "/status/podStatuses",
    "/status/serviceStatuses",
    "/metadata/annotations/kuscia.secretflow~1job-id",
    "/metadata/annotations/kuscia.secretflow~1task-alias",
    "/metadata/annotations/kuscia-host~1facts", // kuscia_model/kept_facts.h
    "/status/completionTime",
    "/status/reason",
    "/status/message",
    "/status/allocatedPorts"};
enum TaskField : std::size_t {
  kTaskCreate,
  kTaskInitiator,
  kTaskParties,
  kTaskPhase,
  kTaskPartyStatus,
  kTaskConditions,
  kTaskPodStatuses,
  kTaskServiceStatuses,
  kTaskJob,
  kTaskAlias,
  kTaskKept,
  kTaskCompletion,
  kTaskReason,
  kTaskMessage,
  kTaskAllocatedPorts,
  kTaskFieldCount
};

// What the task object says beyond the document.
struct TaskFacts {
  std::string name, namespaceName, uid, initiator, phase, job, alias;
  std::vector<std::string> parties; // spec.parties[].domainID
  // Every party runs, as the task's own status says (status.partyTaskStatus all Running or
  // Succeeded, else status.phase Running or Succeeded), and since when if it says so
  // (the Running condition's lastTransitionTime).
  bool partiesRunning = false;
  std::optional<int64_t> runningSince;
};
// The facts from the task's projected fields (otel-export's subscription order, kTaskFields).
TaskFacts taskFactsOf(const std::string& name, const std::string& namespaceName,
                      const nlohmann::json& fields);

struct Plan {
  std::vector<SpanData> spans;       // every span that ended, and the stuck pending phases
  bool finished = false;             // every span this domain owes has ended
  std::optional<int64_t> finishedAt; // the latest end among them
};

// The spans `domain` owes for the task: its party's, its entries' and their phases', and the
// root when it is the initiator. `doc` is a timeline document (createTime, entries; reasons may
// carry "since", the time the reason was first seen, in nanoseconds). Critical-path phases carry
// kuscia.critical_path, the blamed one kuscia.blame, once the task is complete in `doc`.
// `p2p`: the root is another process's (the initiator's host), so a party's parent is remote.
// A failed task (summary.failure) ends where it ended: its open phases, its entries not ready,
// its party and its root end at its completionTime with status ERROR, the root's message the
// reason and its "kuscia.failure" event the excerpt. A stuck one (summary.stuck) sends its root
// as a pending span in ERROR with the reason, like a stuck phase.
// `jobContext`: what came before the task in its job (model::job::jobContext: {"job",
// "approval", "queued"}), asked for only when the root goes out (reading the job and its other
// tasks is not work for every event of the task); under the root, each of its phases that ended.
// The root waits up to 10 s after its end for a phase the job view has without its start or end
// (the approval's observation not yet in the cache), then goes out without it.
using JobContext = std::function<nlohmann::json()>;
Plan planSpans(const nlohmann::json& doc, const TaskFacts& task, const std::string& domain,
               int64_t nowNanos, int64_t stuckAfterNanos, bool p2p = false,
               const JobContext& jobContext = {});

} // namespace kuscia_host::plugins::otel
