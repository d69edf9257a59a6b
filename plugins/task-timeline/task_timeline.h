// task-timeline: fills every KusciaTask's status, for the pods and services of this instance's
// domain, with when each was created, started and ready (podStatuses["<ns>/<pod>"] createTime,
// startTime, readyTime; serviceStatuses["<ns>/<svc>"] createTime, readyTime), and serves each
// task's timeline on the admin server (/api/v1/timelines/<task>), and each KusciaJob's view
// (/api/v1/jobs/<job>: job_watch.h).
//
// Level-triggered: the desired entries are computed from the objects and compared with the
// task's status as last seen; a write carries only what differs. So a pod seen before its task
// is applied when the task appears, fields another writer removed are written again, and a
// restarted host converges to the same status.
//
// Timing semantics (ARCHITECTURE.md, "Timing semantics"):
//  - createTime = metadata.creationTimestamp; startTime = status.startTime;
//  - readyTime (the status) = lastTransitionTime of the latest Ready=True, as Kuscia's own task
//    controller writes it: a NotReady keeps it, a later Ready moves it forward, never back;
//  - firstReadyTime (the timeline document and the histograms, this host's own) = the first
//    Ready=True seen for the pod's UID; a readyTime the status holds for the same incarnation
//    that is earlier than what this host saw (it restarted after a flap) is taken as the first;
//  - a field another writer keeps overwriting is yielded (write_contest.h), never fought over;
//  - a pod recreated under the same name (its createTime differs from the entry's) is a new
//    incarnation: its times replace the old ones, which are cleared when not yet known;
//  - service readyTime = the kuscia.secretflow/ready-time annotation (RFC 3339, any offset,
//    normalised to UTC);
//  - a recorded time is never cleared because the object was deleted or an event lacks it; a
//    malformed time leaves the field unset, is logged once per object and counted;
//  - the image pull (the pod's Pulling and Pulled Events), every container running
//    (containerStatuses) and why each phase waited (Events, waiting reasons) go in the timeline
//    document only: Kuscia's CRD has no such status fields (kuscia_model/pod_events.h);
//  - each document carries the task's summary and critical path (kuscia_model/timeline_summary.h);
//    a task complete as this domain sees it is observed once in the startup histogram and the
//    critical-path counters.
#pragma once

#include <kuscia_host/plugin.hpp>
#include <kuscia_model/control_plane.h>
#include <kuscia_model/pod_events.h>
#include <kuscia_model/timeline_summary.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "entry_board.h"
#include "job_watch.h"
#include "route_watch.h"
#include "timeline_config.h"
#include <kuscia_model/finished_tasks.h>
#include <kuscia_model/kuscia.h>
#include <kuscia_model/kuscia_model.h>
#include <kuscia_model/kuscia_time.h>
#include <kuscia_model/own_entries.h>
#include <kuscia_model/pod_fields.h>
#include <kuscia_model/status_entries.h>
#include <kuscia_model/status_writer.h>
#include <kuscia_model/timeline.h>

namespace kuscia_host::plugins::timeline {

// One time as read from an object: the instant and its canonical (UTC) text.
// A time an object shows, as its instant: written and served in the canonical form of what was
// read (formatTime kAsGiven), which is all a time's text ever was (8 bytes, not 40 and a string).
using model::Instant;

class TaskTimeline final : public sdk::Plugin {
public:
  TaskTimeline(sdk::Host host, std::string_view domain, std::string_view configJson);
  ~TaskTimeline() override;
  TaskTimeline(const TaskTimeline&) = delete;
  TaskTimeline& operator=(const TaskTimeline&) = delete;
  static void validateConfig(std::string_view configJson) { parseTimelineConfig(configJson); }

  void onStart() override;
  void onEvent(const sdk::Event& event) override;
  void onTimer(uint64_t timerId, uint64_t userTag) override;
  void onKubeResult(const sdk::KubeResult& result) override;
  void onHttpRequest(const sdk::HttpRequest& request, sdk::HttpResponse& response) override;
  // /api/v1/jobs (`rest` empty: the list) and /api/v1/jobs/<job>.
  void serveJob(std::string_view rest, std::string_view query, sdk::HttpResponse& response) const;
  // The job's document (what /api/v1/jobs/<job> answers); nullopt when unknown here.
  std::optional<nlohmann::json> jobTimeline(const std::string& job) const {
    return jobs_->document(job);
  }

  // The timeline document of one task (what /api/v1/timelines/<task> answers); nullopt when the
  // task is unknown. The list of tasks when `task` is empty.
  // `phases`: each entry's phases too (what the page draws; not needed for the summary).
  // `withJob`: what came before the task in its KusciaJob ("job": its approval, the task's
  // queue), when the task is a job's.
  std::optional<nlohmann::json> timeline(const std::string& task, bool phases = true,
                                         bool withJob = true) const;
  // At most `limit` tasks, newest first (createTime, then name), after the one `after` names
  // (a "continue" token of the answer before); with "continue" when more follow. Every task the
  // host's cache has is looked at, but only its phase and creation are read, from the start of
  // its fields: a month of finished tasks costs a list little (B7 prints how little).
  nlohmann::json taskList(std::size_t limit, std::string_view after = {}) const;
  // The merge patch's "status" that brings `task` to the desired state; empty when none.
  model::StatusPatch diff(const std::string& task);
  const TimelineConfig& config() const { return config_; }
  // Tasks whose entries this instance holds in memory: those starting up (work in flight). A
  // task is held from its first object of this domain until its startup is summarised and every
  // write of it has landed (settled); a later change of it brings it back from the host's cache,
  // as a restarted host reads it. Its objects are held while they live.
  std::size_t heldTasks() const { return tasks_.size(); }

private:
  // A pod's phase as one process-wide copy of its text (8 bytes a pod, not a string of 32):
  // Kubernetes knows five; other text is kept as well, up to 64 kinds, then "Unknown".
  static const std::string* internPhase(std::string_view phase);
  inline static const std::string kNoPhase;

  // Every member's special functions are nothrow (static_asserts in task_timeline.cc); clang-tidy
  // cannot see it through std::optional of a struct of strings.
  struct Pod {                            // NOLINT(bugprone-exception-escape)
    uint64_t uid = 0;                     // uidDigest
    const std::string* task = nullptr;    // TaskObjects keeps the name
    const std::string* phase = &kNoPhase; // internPhase: one copy of each text
    Instant create, start, scheduled;
    Instant firstReady;      // the first Ready=True of this incarnation
    Instant ready;           // the latest Ready=True
    Instant containersStart; // the first moment every container ran
    // Its party's reservation (the TaskResource): begun, the party reserved, every party had.
    Instant reserving, reserved, schedulable;
    std::unique_ptr<Waiting> waiting; // while not ready (none after: 8 bytes, not 112)
    uint64_t published = 0; // the digest of what is on the entry board for it (0: nothing)
    // What its Events and waiting reasons said (the image pull, why each phase waited): shared
    // with the board (changeFacts); factsVersion is bumped when they change.
    std::shared_ptr<const model::timeline::PodFacts> facts;
    uint32_t factsVersion = 0;
    bool observedStart = false, observedReady = false, observedSchedule = false;
    bool observedContainers = false, observedPull = false;
    bool observedReserving = false, observedAwaiting = false, observedBinding = false;
    bool readStatusReady = false; // the status's readyTime was read once for the first ready
    bool republish = false;       // the first ready was taken from the status
    bool loggedMalformed = false;
  };
  struct Service {
    uint64_t uid = 0;                  // uidDigest
    const std::string* task = nullptr; // TaskObjects keeps the name
    Instant create, ready;
    // Why programming waited, the last reason seen (kNoServiceWait: none): one of two, so a
    // code and when it was seen, not a PodFacts of its own (ServiceWait in task_timeline.cc).
    int64_t programmingAt = 0;
    uint8_t programming = 0;
    uint64_t published = 0; // the digest of what is on the entry board (0: nothing)
    bool observed = false;
    bool loggedMalformed = false;
  };
  // The task subscription's fields. The phase, the creation and the completion first: the task
  // list and the release of finished tasks read them from the start of the fields alone.
  enum TaskField {
    kTaskPhase,
    kTaskCreate,
    kTaskCompletion,
    kTaskReason, // why it ended: what summary.failure reads beside the entries
    kTaskMessage,
    kTaskKept,       // the facts kept on the task (kuscia_model/kept_facts.h)
    kTaskConditions, // its ResourceCreated: the task's preparing
    kTaskPorts,      // its allocatedPorts: the party whose cluster wrote it
    kTaskPods,
    kTaskServices,
    kTaskFieldCount
  };
  // A task as this instance holds it: of the status maps, its own domain's entries as their
  // texts (what it writes and compares: own_entries.h), and how many of the other parties'
  // entries are not ready yet (all the summary needs of them). The timeline document reads the
  // whole task from the host's cache.
  struct Task {
    bool exists = false;
    model::OwnEntryTexts pods, services;
    std::size_t othersNotReady = 0;
    std::string phase;
    std::string createTime;
    std::string completionTime, reason, message; // the status's ("": none)
    std::string resourceCreated; // its ResourceCreated=True condition's time ("": none)
    std::string localParty;      // model::timeline::localParty of its allocatedPorts ("": none)
    std::string kept;            // the kept facts' annotation ("": none yet)
    // The resourceVersion of the task as last seen (versionNumber(); 0: not known).
    uint64_t version = 0;
    // The resourceVersion this instance's last write was answered with, when the entries were
    // merged with it (written(); 0: none since the last event read). An event of an older
    // version is not read: it was sent before the write landed (another party's write, the
    // two made at once), so it lacks what the entries now hold, and comparing it would find
    // that write's difference again and schedule a write of nothing. The write's own event,
    // or a later one, is on its way and carries everything the older one did.
    uint64_t answered = 0;
  };
  // Status entries parsed ("<key>" -> entry): the other parties' (what a held task lacks).
  struct ParsedEntries {
    nlohmann::json podStatuses = nlohmann::json::object();
    nlohmann::json serviceStatuses = nlohmann::json::object();
  };

  void onPod(const sdk::Event& e);
  void onService(const sdk::Event& e);
  void onEndpoints(const sdk::Event& e);
  void onPodEvent(const sdk::Event& e);
  // A TaskResource of the domain: its times go to its party's pods of the task.
  void onTaskResource(const sdk::Event& e);
  // Sets the pod's reservation times from its party's TaskResource; whether any changed.
  static bool applyReservation(Pod& p, const model::control::ReservationTimes& r);
  void onTask(const sdk::Event& e);
  // The other parties' entries of a task event as its split passed them (views into the event's
  // text): what the summary reads them from. `scanned` false: the text took the full parser.
  struct OtherTexts {
    bool scanned = false;
    model::EntryTexts pods, services;
  };
  // A task's record from its projected fields: the entries of keys starting with `ownPrefix`
  // ("" : every entry).
  // `previous`, when given, is the task as held: own entries that did not change are taken from
  // it instead of parsed. `others`, when given, gets the other parties' entries' texts.
  static Task taskFrom(std::string_view fieldsJson, std::string_view ownPrefix = {},
                       Task* previous = nullptr, OtherTexts* others = nullptr);
  // The task as held, else as the host's cache has it (then held from now on); nullptr when
  // neither has it.
  Task* findTask(const std::string& name);
  // The task as the host's cache has it, without holding it: this domain's entries, or with
  // `whole` every party's.
  std::optional<Task> cachedTask(const std::string& name, bool whole = false) const;
  // The other parties' entries of the task as the host's cache has it (what a held task lacks).
  ParsedEntries cachedOthers(const std::string& name) const;
  // The other parties' entries in a task's projected fields.
  ParsedEntries othersFrom(std::string_view fieldsJson) const;
  // Lets the task go when this instance has no pod or service of it left.
  void release(const std::string& name);
  // The pod or service is gone, or no longer a task's: forgotten, its task released if it was
  // the last of it.
  void forgetObject(const std::string& key, bool pod);
  // Lets the task's entries go once its startup is summarised and nothing of it is due.
  void settle(const std::string& name);
  // Whether this instance holds the task or any object of it.
  bool busy(const std::string& name) const;
  // Reads a time field; a present but malformed value is counted and logged once per object.
  Instant readTime(const nlohmann::json& value, const std::string& what, const std::string& key,
                   bool& logged);
  // The same of a pod's field (pod_fields.h).
  Instant readTime(const model::TimeText& value, const std::string& what, const std::string& key,
                   bool& logged);
  // The same of an event's field i.
  Instant readTime(model::EventFields& f, std::size_t i, const std::string& what,
                   const std::string& key, bool& logged);
  void observe(Pod& p);
  void observe(Service& s);
  // Observes to - from, with the trace id of `task` (the one otel-export sends) as exemplar.
  void observeDuration(const sdk::Metric& m, const char* name, Instant from, Instant to,
                       const std::string* task);
  static Waiting podWaiting(const Pod& p, const model::PodFields& f);
  std::optional<Waiting> serviceWaiting(const std::string& key, const Service& s) const;
  // What a service not ready yet waits for (ServiceWait in task_timeline.cc; 0 once ready).
  uint8_t serviceWait(const std::string& key, const Service& s) const;
  // Whether the status entry differs from what this host knows of the pod or service (the patch
  // of the entry is built into `patch` when given; touch() only asks, and builds nothing).
  // `urgent`, when given, is set when a difference cannot wait for the status writer's deferral:
  // a readyTime, or an earlier incarnation's times to clear.
  bool podDiffers(Pod& p, const model::EntryClock& entry,
                  model::StatusPatch::Entry* patch = nullptr, bool* urgent = nullptr) const;
  bool serviceDiffers(const Service& s, const model::EntryClock& entry,
                      model::StatusPatch::Entry* patch = nullptr, bool* urgent = nullptr) const;
  // Marks the task for a write when the object's entry differs from the status.
  // `pod` or `service`: the one object an event changed (the others are not compared again).
  void touch(const std::string& task, const std::string* pod = nullptr,
             const std::string* service = nullptr);
  void written(const std::string& task, const model::StatusPatch& status, uint64_t version);
  void refreshStuck();
  // Puts this instance's knowledge of a pod or service on the entry board when it changed.
  void publish(const std::string& key, Pod& p);
  void publish(const std::string& key, Service& s);
  // Once per task complete as this domain sees it: the startup histogram, the critical path.
  // `fieldsJson`: the task event's fields, whose other parties' entries go with the held ones;
  // `others`: those entries as the event's split passed them.
  void summarizeOnce(const std::string& task, std::string_view fieldsJson,
                     const OtherTexts& others);
  // An entry of the document: the status's entry, with what the board (else the facts kept on
  // the task: `kept`, kept_facts.h) knows of it.
  nlohmann::json entryTimeline(const std::string& task, const std::string& key,
                               const nlohmann::json& entry, bool pod,
                               const nlohmann::json& kept) const;
  // The task's "partnerReservations" (model::partnerReservations): those kept in `kept` (the
  // task's kuscia-host/facts) under the stubs this host sees, but for the parties `holds` says
  // the document has entries of.
  nlohmann::json partnersOf(const std::string& task, std::string_view kept,
                            const std::function<bool(std::string_view party)>& holds) const;
  // Keeps the facts the board has of the task's pods on the task (kept_facts.h): once per task,
  // by the one instance of this host that keeps them, when it started or ended.
  void keepFacts(const std::string& task);
  void onKeptFacts(const sdk::KubeResult& result);
  // An entry's times as its timeline document has them (what the summary reads).
  model::timeline::EntryTimes entryTimes(const std::string& key, const nlohmann::json& status,
                                         bool pod) const;
  // Adds what the entry board has for the entry, over what its status says.
  void withBoardFacts(model::timeline::EntryTimes& e) const;
  // Whether this instance counts a failed or stuck task of `party` in the metrics: the instance
  // of the party's domain when this host has it, else the host's first domain's.
  bool counts(const std::string& party) const;
  // Counts a task that failed while this host ran, once (kuscia_timeline_task_failures_total),
  // given its status's phase and completionTime; one whose evidence is not in yet, at the next
  // timer (`last`: then as it is).
  void noteFailure(const std::string& task, std::string_view phase, std::string_view completionTime,
                   bool last = false);
  // The tasks stuck now, by party and reason (kuscia_timeline_tasks_stuck).
  void refreshStuckTasks();

  TimelineConfig config_;
  // What this host's instances know of their entries (shared by the domains of one host).
  EntryBoard& board_;
  std::string domain_;
  std::string ownPrefix_; // "<domain>/": the keys of this domain's status entries
  uint64_t podSub_ = 0, serviceSub_ = 0, endpointsSub_ = 0, taskSub_ = 0, eventSub_ = 0;
  uint64_t taskResourceSub_ = 0;
  uint64_t partnerResourceSub_ = 0; // the partners' stub TaskResources (p2p initiator)
  // The domain's TaskResources' times: for the pods that come after them.
  model::control::Reservations reservations_;
  uint64_t stuckTimer_ = 0;
  model::TaskObjects<Pod> pods_;         // this domain's task pods, "<ns>/<name>"
  model::TaskObjects<Service> services_; // this domain's task services
  // Hashed, as TaskObjects: looked up on every event; a held Task stays where it is.
  std::unordered_map<std::string, Task> tasks_;
  // What the Events of a pod not (yet) known said, by pod "<ns>/<name>", for the UID they name:
  // Events may come before their pod, which takes them when it comes (Pod::facts). Those of a
  // pod this instance never sees (not a task's) go after kOrphanEventsSeconds.
  struct EarlyEvents {
    uint64_t uid = 0; // uidDigest
    std::shared_ptr<const model::timeline::PodFacts> facts;
    int64_t lastNanos = 0;
  };
  std::map<std::string, EarlyEvents> earlyEvents_;
  std::unordered_set<std::string> summarized_; // held tasks already observed complete
  // Writes of kept facts on their way (request id -> task): one per task at a time.
  std::unordered_map<uint64_t, std::string> keeping_;
  // Tasks whose facts are kept at the next stuck timer (every 5 s): those that started since,
  // and those that wait for another local domain's instance to put its pods on the board (its
  // events may come after this one saw the task complete).
  std::unordered_set<std::string> keepPending_;
  bool loggedKeptFailure_ = false;
  // Failed tasks counted (task -> its completion), for an hour: each is counted once.
  std::map<std::string, int64_t> failuresCounted_;
  std::set<std::string> failuresDue_; // failed without evidence yet: counted at the next timer
  int64_t startedNanos_ = 0;
  int stuckTicks_ = 0;
  std::set<std::pair<std::string, std::string>> stuckLabels_; // set last time (party, reason)
  std::optional<model::FinishedTasks> finished_;              // what the host may forget

  sdk::Metric createToSchedule_, createToStart_, startToReady_, createToReady_;
  sdk::Metric reserving_, awaitingParties_, binding_; // the reservation's phases
  sdk::Metric serviceCreateToReady_;
  sdk::Metric imagePull_, containersStart_, taskStartup_, criticalPath_, blamed_, preparing_;
  sdk::Metric negative_, malformed_, stuck_, keptWrites_, failures_, stuckTasks_;
  model::StatusWriter writer_;
  std::optional<JobWatch> jobs_;     // the KusciaJobs: their view and observed times
  std::optional<RouteWatch> routes_; // the ClusterDomainRoutes: their observed outages
};

} // namespace kuscia_host::plugins::timeline
