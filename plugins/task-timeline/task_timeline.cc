#include "task_timeline.h"

#include <kuscia_model/timeline_summary.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <set>
#include <type_traits>

#include "entry_board.h"
#include "timeline_page.h"
#include <kuscia_model/kept_facts.h>
#include <kuscia_model/kuscia.h>
#include <kuscia_model/kuscia_model.h>
#include <kuscia_model/kuscia_time.h>
#include <kuscia_model/status_entries.h>
#include <kuscia_model/trace_ids.h>

namespace kuscia_host::plugins::timeline {

using nlohmann::json;

namespace {

// The projected fields of each subscription, in declaration order.
enum ServiceField { kSvcTask, kSvcCreate, kSvcReadyTime, kSvcFieldCount };
// How long the Events of a pod this instance does not know are kept (a pod that is no task's, or
// one whose Events came before it).
constexpr int64_t kOrphanEventsNanos = 600LL * 1000000000;
// A failed task is counted once: its name is remembered this long after it ended.
constexpr int64_t kFailureMemoryNanos = 3600 * model::kSecond;
// The userTag of the writes of kept facts (the status writer's are 0).
constexpr uint64_t kKeptFactsTag = 1;

// Observes `seconds` of a task's (or one of its pods' or services') startup; its exemplar is the
// task's trace id, the one otel-export derives, so that a slow bucket links to its trace.
void observeForTask(const sdk::Metric& m, double seconds, const std::string* task) {
  if (task == nullptr) return m.observe(seconds);
  const std::string traceId = model::hex(model::traceIdOf(*task));
  m.observe(seconds, {}, {{"trace_id", traceId.c_str()}});
}

const std::vector<double>& durationBuckets() {
  static const std::vector<double> b = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};
  return b;
}

// setEntryTime (kuscia_model.h) of what this host knows of a time.
bool setTime(model::StatusPatch::Entry* patch, const model::EntryClock& entry,
             model::TimeField field, const Instant& want, bool clearStale,
             bool forwardOnly = false) {
  return setEntryTime(patch, entry, field, want.optional(), clearStale, forwardOnly);
}

// Changes facts shared with the entry board: on a copy, which replaces them only when `change`
// changed something (what the board holds is never changed under its readers).
template <class F>
bool changeFacts(std::shared_ptr<const model::timeline::PodFacts>& facts, F&& change) {
  auto copy = facts ? std::make_shared<model::timeline::PodFacts>(*facts)
                    : std::make_shared<model::timeline::PodFacts>();
  if (!std::forward<F>(change)(*copy)) return false;
  facts = std::move(copy);
  return true;
}

// Why a service's programming waits: its Endpoints have no address yet, or the gateway has not
// written the annotation yet. A service keeps the last of these as a code; the facts of each are
// one immutable object of the process, shared by every service that waited for it (the time a
// reason was seen decides which reason is the last, and no document shows it).
enum ServiceWait : uint8_t { kNoServiceWait, kNoEndpoints, kNotProgrammed, kServiceWaitCount };
struct ServiceWaitText {
  const char* reason;
  const char* message;
};
constexpr std::array<ServiceWaitText, kServiceWaitCount> kServiceWaits = {{
    {"", ""},
    {"NoEndpoints", "the service's Endpoints have no address yet"},
    {"NotProgrammed", "the gateway has not written kuscia.secretflow/ready-time yet"},
}};
const std::shared_ptr<const model::timeline::PodFacts>& serviceWaitFacts(uint8_t wait) {
  static const auto facts = [] {
    std::array<std::shared_ptr<const model::timeline::PodFacts>, kServiceWaitCount> out;
    for (uint8_t w = kNoEndpoints; w < kServiceWaitCount; ++w) {
      auto f = std::make_shared<model::timeline::PodFacts>();
      f->addReason("programming", kServiceWaits[w].reason, kServiceWaits[w].message, 0, true);
      out[w] = std::move(f);
    }
    return out;
  }();
  return facts[wait < kServiceWaitCount ? wait : uint8_t{kNoServiceWait}];
}

// What a service waits for now (`wait`), since its creation; nullopt once it is ready.
std::optional<Waiting> serviceWaitingFor(uint8_t wait, const Instant& create) {
  if (wait == kNoServiceWait || wait >= kServiceWaitCount) return std::nullopt;
  Waiting w;
  w.phase = "ready";
  w.sinceNanos = create ? *create : 0;
  w.reason = kServiceWaits[wait].reason;
  w.message = kServiceWaits[wait].message;
  return w;
}

// The digest of what would be published, built value by value (no text is formatted: most events
// publish nothing new); never 0 (0: nothing published).
class Signature {
public:
  Signature& add(uint64_t v) {
    h_ = model::mixBits((h_ ^ v) + 0x9E3779B97F4A7C15ULL); // each value moves every bit
    return *this;
  }
  Signature& add(std::string_view s) { return add(s.size()).add(std::hash<std::string_view>{}(s)); }
  Signature& add(const std::optional<int64_t>& t) {
    return t ? add(1).add(static_cast<uint64_t>(*t)) : add(0);
  }
  uint64_t digest() const { return h_ == 0 ? 1 : h_; }

private:
  uint64_t h_ = 0;
};

} // namespace

const std::string* TaskTimeline::internPhase(std::string_view phase) {
  if (phase.empty()) return &kNoPhase;
  static const std::array<std::string, 5> kKnown = {"Pending", "Running", "Succeeded", "Failed",
                                                    "Unknown"};
  for (const std::string& known : kKnown)
    if (known == phase) return &known;
  constexpr std::size_t kMaxPhases = 64;
  static std::mutex mu;
  static std::set<std::string, std::less<>> others;
  std::lock_guard lock(mu);
  if (auto it = others.find(phase); it != others.end()) return &*it;
  if (others.size() >= kMaxPhases) return &kKnown.back();
  return &*others.emplace(phase).first;
}

TaskTimeline::TaskTimeline(sdk::Host host, std::string_view domain, std::string_view configJson)
    : Plugin(host), config_(parseTimelineConfig(configJson)),
      board_(host.libraryState<EntryBoard>()), domain_(domain),
      ownPrefix_(std::string(domain) + "/"),
      createToSchedule_(host.histogram("kuscia_timeline_pod_create_to_schedule_seconds",
                                       "Pod creation to PodScheduled=True", {}, durationBuckets())),
      createToStart_(host.histogram("kuscia_timeline_pod_create_to_start_seconds",
                                    "Pod creation to status.startTime (the agent accepted it)", {},
                                    durationBuckets())),
      startToReady_(host.histogram("kuscia_timeline_pod_start_to_ready_seconds",
                                   "Pod status.startTime to its first Ready=True", {},
                                   durationBuckets())),
      createToReady_(host.histogram("kuscia_timeline_pod_create_to_ready_seconds",
                                    "Pod creation to its first Ready=True", {}, durationBuckets())),
      reserving_(host.histogram("kuscia_timeline_pod_reserving_seconds",
                                "Pod creation to its party's TaskResource Reserved", {},
                                durationBuckets())),
      awaitingParties_(host.histogram(
          "kuscia_timeline_pod_awaiting_parties_seconds",
          "Its party's TaskResource Reserved to Schedulable: waiting for the other parties", {},
          durationBuckets())),
      binding_(host.histogram("kuscia_timeline_pod_binding_seconds",
                              "Its party's TaskResource Schedulable to PodScheduled=True", {},
                              durationBuckets())),
      serviceCreateToReady_(host.histogram(
          "kuscia_timeline_service_create_to_ready_seconds",
          "Service creation to its ready-time annotation (programmed in the gateway)", {},
          durationBuckets())),
      imagePull_(host.histogram("kuscia_timeline_pod_image_pull_seconds",
                                "A pod's first Pulling Event to its last Pulled Event", {},
                                durationBuckets())),
      containersStart_(host.histogram(
          "kuscia_timeline_pod_containers_start_seconds",
          "A pod's status.startTime to every container running (image pulls included)", {},
          durationBuckets())),
      taskStartup_(
          host.histogram("kuscia_timeline_task_startup_seconds",
                         "A task's creation to its last entry ready, as this domain sees the task",
                         {}, durationBuckets())),
      criticalPath_(host.counter("kuscia_timeline_critical_path_seconds_total",
                                 "Seconds of tasks' critical paths spent in each phase",
                                 {"phase"})),
      blamed_(host.counter("kuscia_timeline_blamed_tasks_total",
                           "Tasks whose longest critical-path phase was this party's, by phase",
                           {"party", "phase"})),
      preparing_(host.histogram("kuscia_timeline_task_preparing_seconds",
                                "A task's creation to its ResourceCreated condition (ports, "
                                "pre-checks, its objects created)",
                                {}, durationBuckets())),
      negative_(host.counter("kuscia_timeline_negative_durations_total",
                             "Durations that came out negative (clocks disagree), by duration",
                             {"duration"})),
      malformed_(host.counter("kuscia_timeline_malformed_inputs_total",
                              "Times and annotations that did not parse (field left unset)",
                              {"input"})),
      stuck_(host.gauge("kuscia_timeline_stuck_entries",
                        "Entries waiting in a phase longer than stuckAfterSeconds", {"phase"})),
      keptWrites_(host.counter("kuscia_timeline_kept_facts_writes_total",
                               "Writes of a task's pods' facts onto the task, so that they outlive "
                               "the pods (ok, gone, failed, too_large)",
                               {"outcome"})),
      failures_(host.counter("kuscia_timeline_task_failures_total",
                             "Tasks that failed, by the party and the reason of summary.failure "
                             "(docs/design/failure.md)",
                             {"party", "reason"})),
      stuckTasks_(host.gauge("kuscia_timeline_tasks_stuck",
                             "Tasks not ready past stuckAfterSeconds, by the party and the reason "
                             "of summary.stuck",
                             {"party", "reason"})),
      writer_(
          host, config_, "kuscia_timeline", [this](const std::string& task) { return diff(task); },
          [this](const std::string& task, const model::StatusPatch& status, uint64_t version) {
            written(task, status, version);
          }) {
  // A task whose last write is answered after its event (the watch was read first), or whose
  // last timer found nothing to write, is let go then: no event is left to do it. When the
  // write's event is still on its way, that event does (and finds the entries it holds).
  writer_.onSettled([this](const std::string& task, uint64_t answered) {
    auto it = tasks_.find(task);
    if (it != tasks_.end() && (answered == 0 || it->second.version >= answered)) settle(task);
  });
  podSub_ = host.subscribe(model::domainSubscription("pods", model::podFieldPointers()));
  serviceSub_ = host.subscribe(
      model::domainSubscription("services", {model::kTaskIdPointer, "/metadata/creationTimestamp",
                                             model::kReadyTimePointer}));
  endpointsSub_ = host.subscribe(model::domainSubscription("endpoints", {"/subsets"}));
  eventSub_ = host.subscribe(model::podEventSubscription());
  taskResourceSub_ = host.subscribe(model::control::taskResourceSubscription());
  partnerResourceSub_ = host.subscribe(model::control::partnerTaskResourceSubscription());
  taskSub_ = host.subscribe(model::taskSubscription(
      config_.taskNamespace,
      {"/status/phase", "/metadata/creationTimestamp", "/status/completionTime", "/status/reason",
       "/status/message", model::kKeptFactsPointer, "/status/conditions", "/status/allocatedPorts",
       "/status/podStatuses", "/status/serviceStatuses"}));
  finished_.emplace(host, taskSub_, config_.taskNamespace, kTaskPhase, kTaskCompletion,
                    config_.keepFinishedSeconds,
                    [this](const std::string& task) { return busy(task); });
  finished_->waitFor(podSub_);
  finished_->waitFor(serviceSub_);
  jobs_.emplace(
      host, config_.taskNamespace,
      [this](const std::string& initiator) { return counts(initiator); },
      [this](const std::string& task) { return timeline(task, false, false); });
  routes_.emplace(host, [this](const std::string& source) { return counts(source); });
  board_.addDomain(domain_);
  host.registerRoute("/api/v1/timelines");
  host.registerRoute("/api/v1/jobs");
  host.registerRoute(std::string(kPagePrefix));
}

TaskTimeline::~TaskTimeline() {
  static_assert(std::is_nothrow_move_constructible_v<Pod> &&
                std::is_nothrow_move_assignable_v<Pod> &&
                std::is_nothrow_default_constructible_v<Pod>);
  // The board holds views of these records' keys (EntryBoard::put): every entry goes first.
  for (const auto& [key, p] : pods_)
    board_.erase(key);
  for (const auto& [key, s] : services_)
    board_.erase(key);
  board_.removeDomain(domain_);
}

void TaskTimeline::onStart() {
  for (const char* phase : {"scheduling", "starting", "ready"})
    stuck_.set(0, {phase});
  for (const char* phase : model::timeline::kPhaseNames)
    criticalPath_.add(0, {phase});
  // This domain's failures from 0, so that the first one is an increase; its stuck tasks at 0.
  for (std::size_t r = 0; r < model::failure::kReasonCount; ++r) {
    const char* reason = model::failure::name(static_cast<model::failure::Reason>(r));
    failures_.add(0, {domain_.c_str(), reason});
    stuckTasks_.set(0, {domain_.c_str(), reason});
  }
  stuckTimer_ = host().startTimer(5000, 5000);
  startedNanos_ = host().wallTimeNanos();
}

void TaskTimeline::onEvent(const sdk::Event& e) {
  if (e.type == KH_EVENT_SYNCED) return finished_->onEvent(e);
  if (e.subscriptionId == podSub_) return onPod(e);
  if (e.subscriptionId == serviceSub_) return onService(e);
  if (e.subscriptionId == endpointsSub_) return onEndpoints(e);
  if (e.subscriptionId == taskSub_) {
    onTask(e);
    return finished_->onEvent(e); // after: it asks whether the task is still held
  }
  if (e.subscriptionId == eventSub_) return onPodEvent(e);
  if (e.subscriptionId == taskResourceSub_ || e.subscriptionId == partnerResourceSub_)
    return onTaskResource(e);
  if (e.subscriptionId == jobs_->subscription()) return jobs_->onEvent(e);
  if (e.subscriptionId == routes_->subscription()) return routes_->onEvent(e);
}

void TaskTimeline::onTimer(uint64_t timerId, uint64_t /*userTag*/) {
  if (writer_.onTimer(timerId)) return;
  if (timerId == stuckTimer_) {
    for (const std::string& task :
         std::vector<std::string>(keepPending_.begin(), keepPending_.end()))
      keepFacts(task);
    refreshStuck();
    for (const std::string& task :
         std::vector<std::string>(failuresDue_.begin(), failuresDue_.end())) {
      failuresDue_.erase(task);
      host().cacheGet(taskSub_, config_.taskNamespace + "/" + task, [&](const sdk::Object& o) {
        const auto lead = model::leadingStrings(o.fieldsJson, kTaskCompletion + 1);
        noteFailure(task, lead[kTaskPhase], lead[kTaskCompletion], true);
      });
    }
    // Every 30 s: a summary per task not ready yet.
    if (++stuckTicks_ % 6 == 1) refreshStuckTasks();
    finished_->tick();
  }
}

void TaskTimeline::onKubeResult(const sdk::KubeResult& result) {
  if (result.userTag == kKeptFactsTag) return onKeptFacts(result);
  if (jobs_->onKubeResult(result) || routes_->onKubeResult(result)) return;
  writer_.onKubeResult(result);
}

void TaskTimeline::keepFacts(const std::string& task) {
  if (!config_.keepFacts) return;
  for (const auto& [id, name] : keeping_)
    if (name == task) return; // its event brings what is kept, which is compared then
  auto whole = cachedTask(task, true);
  if (!whole) return;
  const json pods = whole->pods.toJson();
  std::set<std::string, std::less<>> domains;
  for (const auto& [key, entry] : pods.items())
    domains.emplace(model::namespaceOf(key));
  if (!board_.keeps(domain_, domains)) return;
  json entries = model::keptEntries(whole->kept);
  bool changed = false;
  for (const auto& [key, entry] : pods.items()) {
    json facts;
    board_.read(key, [&facts](const EntryFacts& f) { facts = f.toJson(); });
    if (facts.empty() && board_.hasDomain(model::namespaceOf(key))) {
      keepPending_.insert(task); // a pod of this host's not on the board yet: later, all at once
      return;
    }
    if (facts.empty()) continue; // another host's pod
    json k = model::keptFactsOf(facts, entry.is_object() ? entry.value("createTime", "") : "");
    // Over what is kept of the same incarnation: a host restarted after the Events expired knows
    // less than it did, and must not forget the rest.
    if (const json* old = model::keptFor(entries, key, entry)) {
      json merged = *old;
      merged.update(k);
      k = std::move(merged);
    }
    if (entries.value(key, json()) == k) continue;
    entries[key] = std::move(k);
    changed = true;
  }
  keepPending_.erase(task);
  // The partners' reservations (their stubs go with the group), over what is kept of them.
  const json partners = partnersOf(
      task, whole->kept, [&domains](std::string_view party) { return domains.count(party) > 0; });
  changed = changed || partners != model::keptPartners(whole->kept);
  if (!changed) return; // kept already (a host restarted, or another instance's answer)
  auto text = model::keptFactsText(entries, partners);
  if (!text) {
    keptWrites_.add(1, {"too_large"});
    host().warn("task " + task + ": its pods' facts are too large to keep on it (over " +
                std::to_string(model::kKeptFactsBytes) + " bytes): they go with its pods");
    return;
  }
  sdk::KubeRequest r;
  r.group = model::kKusciaGroup;
  r.version = model::kKusciaVersion;
  r.resource = model::kKusciaTasks;
  r.namespaceName = config_.taskNamespace;
  r.name = task;
  r.body = model::keptFactsPatch(*text);
  r.userTag = kKeptFactsTag;
  try {
    keeping_.emplace(host().kubeRequest(r), task);
  } catch (const sdk::HostError& e) {
    keptWrites_.add(1, {"failed"});
    host().warn("task " + task + ": keeping its pods' facts failed: " + e.what());
  }
}

void TaskTimeline::onKeptFacts(const sdk::KubeResult& result) {
  keeping_.erase(result.requestId);
  const int code = result.httpCode;
  const char* outcome = code >= 200 && code < 300 ? "ok" : code == 404 ? "gone" : "failed";
  keptWrites_.add(1, {outcome});
  if (std::string_view(outcome) == "failed" && !loggedKeptFailure_) {
    loggedKeptFailure_ = true; // once: the count says how often
    host().warn("keeping a task's pods' facts on it failed (HTTP " + std::to_string(code) +
                "): " + std::string(result.message));
  }
}

Instant TaskTimeline::readTime(const json& value, const std::string& what, const std::string& key,
                               bool& logged) {
  if (value.is_null()) return std::nullopt;
  auto t = value.is_string() ? model::parseTime(value.get_ref<const std::string&>()) : std::nullopt;
  if (t) return Instant{*t};
  malformed_.add(1, {what.c_str()});
  if (!logged) {
    logged = true;
    host().warn(key + ": malformed " + what + " " + value.dump() +
                ": the field stays unset (further ones of this object are only counted)");
  }
  return std::nullopt;
}

Instant TaskTimeline::readTime(const model::TimeText& value, const std::string& what,
                               const std::string& key, bool& logged) {
  if (value.kind == model::TimeText::kAbsent) return std::nullopt;
  if (value.kind == model::TimeText::kString)
    if (auto t = model::parseTime(value.text)) return Instant{*t};
  malformed_.add(1, {what.c_str()});
  if (!logged) {
    logged = true;
    host().warn(key + ": malformed " + what + " " +
                (value.kind == model::TimeText::kString ? json(value.text).dump() : value.text) +
                ": the field stays unset (further ones of this object are only counted)");
  }
  return std::nullopt;
}

Instant TaskTimeline::readTime(model::EventFields& f, std::size_t i, const std::string& what,
                               const std::string& key, bool& logged) {
  // A time is read from its text; anything else as its value (the rest malformed).
  if (f.isNull(i)) return std::nullopt;
  std::string decoded;
  if (auto text = f.view(i, decoded))
    if (auto t = model::parseTime(*text)) return Instant{*t};
  return readTime(f.value(i), what, key, logged);
}

void TaskTimeline::onPod(const sdk::Event& e) {
  std::string key(e.key);
  // A deleted pod's recorded times stay in the status; only the memory of the pod goes (and of
  // its task, when it was the instance's last object of it).
  if (e.type == KH_EVENT_DELETED) {
    earlyEvents_.erase(key);
    return forgetObject(key, true);
  }
  // One parse of every field, read off simdjson's DOM (pod_fields.h): a pod's conditions and
  // containers are most of its text, and pod events are the most numerous.
  const model::PodFields f = model::readPodFields(e.fieldsJson);
  if (f.task.empty()) return forgetObject(key, true); // not a task's pod (or no longer)
  Pod& p = *pods_.apply(key, e.uid, f.task);
  const std::string& task = *p.task;
  p.phase = internPhase(f.phase);
  if (auto t = readTime(f.create, "creationTimestamp", key, p.loggedMalformed)) p.create = t;
  if (auto t = readTime(f.start, "startTime", key, p.loggedMalformed)) p.start = t;
  if (f.ready.isTrue) {
    if (auto t = readTime(f.ready.lastTransitionTime, "Ready lastTransitionTime", key,
                          p.loggedMalformed)) {
      if (!p.ready || *t > *p.ready) p.ready = t;
      if (!p.firstReady || *t < *p.firstReady) p.firstReady = t;
    }
  }
  if (f.scheduled.isTrue && !p.scheduled) {
    p.scheduled = readTime(f.scheduled.lastTransitionTime, "PodScheduled lastTransitionTime", key,
                           p.loggedMalformed);
  }
  if (!p.containersStart && f.containersStart) p.containersStart = Instant{*f.containersStart};
  if (const auto* r = reservations_.of(task, model::namespaceOf(key))) applyReservation(p, *r);
  // Events of this incarnation that came before it.
  if (auto early = earlyEvents_.find(key); early != earlyEvents_.end()) {
    if (early->second.uid == p.uid && early->second.facts && !p.facts) {
      p.facts = std::move(early->second.facts);
      ++p.factsVersion;
    }
    earlyEvents_.erase(early);
  }
  if (p.firstReady) {
    p.waiting.reset();
  } else {
    p.waiting = std::make_unique<Waiting>(podWaiting(p, f));
    // The phase this reason holds the pod in, kept after the phase ends.
    const Waiting& w = *p.waiting;
    const char* phase = w.phase == "scheduling" ? "scheduling"
                        : w.phase == "starting"
                            ? "accepting"
                            : model::timeline::waitingReasonPhase(
                                  w.reason, p.containersStart ? "readiness" : "starting");
    if (std::string_view(phase) == "readiness" && !p.containersStart) phase = "starting";
    const int64_t now = host().wallTimeNanos();
    if (changeFacts(p.facts, [&](model::timeline::PodFacts& facts) {
          return facts.addReason(phase, w.reason, w.message, now, true);
        }))
      ++p.factsVersion;
  }
  observe(p);
  publish(key, p);
  touch(task, &key);
}

void TaskTimeline::onPodEvent(const sdk::Event& e) {
  auto ev = model::podEventOf(e);
  if (!ev) return;
  const std::string& key = ev->key;
  const std::string& uid = ev->uid;
  auto pod = pods_.find(key);
  // An Event of another incarnation than the pod's is not this pod's.
  const uint64_t id = model::uidDigest(uid);
  if (pod != pods_.end() && id != 0 && pod->second.uid != id) return;
  auto add = [&ev](model::timeline::PodFacts& f) {
    return f.addEvent(ev->reason, ev->message, ev->at);
  };
  if (pod == pods_.end()) { // the pod takes them when it comes
    auto& early = earlyEvents_[key];
    if (id != 0 && early.uid != id) early = EarlyEvents{id, {}, 0};
    early.lastNanos = host().wallTimeNanos();
    changeFacts(early.facts, add);
    return;
  }
  Pod& p = pods_.at(key);
  if (!changeFacts(p.facts, add)) return;
  ++p.factsVersion;
  observe(p);
  publish(key, p);
  touch(*p.task, &key);
}

bool TaskTimeline::applyReservation(Pod& p, const model::control::ReservationTimes& r) {
  const auto [reserving, reserved, schedulable] = r;
  if (p.reserving == Instant(reserving) && p.reserved == Instant(reserved) &&
      p.schedulable == Instant(schedulable))
    return false;
  p.reserving = reserving;
  p.reserved = reserved;
  p.schedulable = schedulable;
  return true;
}

void TaskTimeline::onTaskResource(const sdk::Event& e) {
  if (e.type == KH_EVENT_DELETED) {
    // Its pods keep the times they took; with none of them here, nothing needs them any more.
    const std::string task = model::control::taskResourceOfFields(e.key, e.fieldsJson).task;
    if (pods_.members(task).empty()) reservations_.forget(task);
    return;
  }
  const auto changedParty = reservations_.onEvent(e);
  if (!changedParty) return;
  const auto& [task, party] = *changedParty;
  const model::control::ReservationTimes& times = *reservations_.of(task, party);
  std::vector<std::string> changed;
  for (const std::string& pod : pods_.members(task))
    if (model::namespaceOf(pod) == party && applyReservation(pods_.at(pod), times))
      changed.push_back(pod);
  for (const std::string& pod : changed) {
    observe(pods_.at(pod));
    publish(pod, pods_.at(pod));
    touch(task, &pods_.find(pod)->first);
  }
}

void TaskTimeline::publish(const std::string& key, Pod& p) {
  // Most pod events change none of this: compare a signature before building the facts.
  Signature signature;
  for (const auto* t :
       {&p.firstReady, &p.containersStart, &p.reserving, &p.reserved, &p.schedulable})
    signature.add(t->optional());
  signature.add(p.factsVersion);
  if (p.waiting)
    signature.add(p.waiting->phase)
        .add(p.waiting->reason)
        .add(p.waiting->message)
        .add(static_cast<uint64_t>(p.waiting->sinceNanos));
  if (signature.digest() == p.published) return;
  p.published = signature.digest();
  EntryFacts facts;
  if (p.firstReady) facts.firstReady = *p.firstReady;
  if (p.containersStart) facts.containersStart = *p.containersStart;
  facts.reserving = p.reserving;
  facts.reserved = p.reserved;
  facts.schedulable = p.schedulable;
  facts.facts = p.facts;
  if (p.waiting) facts.waiting = std::make_unique<Waiting>(*p.waiting);
  board_.put(pods_.find(key)->first, std::move(facts)); // the record's own key
}

void TaskTimeline::publish(const std::string& key, Service& s) {
  // As for pods: a signature of what would be published first, the JSON only when it changed.
  const uint8_t code = serviceWait(key, s);
  auto w = serviceWaitingFor(code, s.create);
  if (w) {
    // The last reason seen, as PodFacts::addReason keeps one: a later one replaces it; at the
    // same instant, the greater text.
    const int64_t now = host().wallTimeNanos();
    if (s.programming == kNoServiceWait || now > s.programmingAt ||
        (now == s.programmingAt && std::string_view(kServiceWaits[code].reason) >
                                       std::string_view(kServiceWaits[s.programming].reason))) {
      s.programming = code;
      s.programmingAt = std::max(now, s.programmingAt);
    }
  }
  Signature signature;
  signature.add(s.programming);
  if (w)
    signature.add(w->phase)
        .add(w->reason)
        .add(w->message)
        .add(static_cast<uint64_t>(w->sinceNanos));
  if (signature.digest() == s.published) return;
  s.published = signature.digest();
  EntryFacts facts;
  // Why it waits, while it waits: the Endpoints and the gateway's annotation say it, and nothing
  // keeps them once the service is gone, so a ready service's phase carries no reason (one
  // answer before and after Kuscia's cleanup, and task-history's).
  if (s.programming != kNoServiceWait && w) facts.facts = serviceWaitFacts(s.programming);
  if (w) facts.waiting = std::make_unique<Waiting>(std::move(*w));
  board_.put(services_.find(key)->first, std::move(facts)); // the record's key
}

Waiting TaskTimeline::podWaiting(const Pod& p, const model::PodFields& f) {
  Waiting w;
  bool scheduled = static_cast<bool>(p.scheduled) || f.scheduled.isTrue;
  if (p.start) {
    w.phase = "ready";
    w.sinceNanos = *p.start;
  } else if (scheduled) {
    w.phase = "starting";
    w.sinceNanos = p.scheduled ? *p.scheduled : (p.create ? *p.create : 0);
  } else {
    w.phase = "scheduling";
    w.sinceNanos = p.create ? *p.create : 0;
  }
  if (*p.phase == "Failed") {
    w.reason = f.reason.empty() ? "Failed" : f.reason;
    w.message = f.message;
    return w;
  }
  // A container's waiting reason says most (ImagePullBackOff, CrashLoopBackOff, ...).
  if (f.containerWaiting) {
    w.reason = f.waitingReason;
    w.message = f.waitingMessage;
    if (!w.reason.empty()) return w;
  }
  if (f.scheduled.isFalse) {
    w.reason = f.scheduled.reason.value_or("Unschedulable");
    w.message = f.scheduled.message;
    return w;
  }
  if (f.ready.isFalse) {
    w.reason = f.ready.reason.value_or("NotReady");
    w.message = f.ready.message;
  }
  return w;
}

void TaskTimeline::observeDuration(const sdk::Metric& m, const char* name, Instant from, Instant to,
                                   const std::string* task) {
  double seconds = model::secondsBetween(*from, *to);
  if (seconds < 0) negative_.add(1, {name});
  observeForTask(m, seconds, task);
}

void TaskTimeline::observe(Pod& p) {
  if (!p.create) return;
  if (p.scheduled && !p.observedSchedule) {
    p.observedSchedule = true;
    observeDuration(createToSchedule_, "pod_create_to_schedule", *p.create, *p.scheduled, p.task);
  }
  // Where the party reserves (Kuscia's gang reservation): each of its three phases once.
  if (p.reserved && !p.observedReserving) {
    p.observedReserving = true;
    observeDuration(reserving_, "pod_reserving", *p.create, *p.reserved, p.task);
  }
  if (p.reserved && p.schedulable && !p.observedAwaiting) {
    p.observedAwaiting = true;
    observeDuration(awaitingParties_, "pod_awaiting_parties", *p.reserved, *p.schedulable, p.task);
  }
  if (p.schedulable && p.scheduled && !p.observedBinding) {
    p.observedBinding = true;
    observeDuration(binding_, "pod_binding", *p.schedulable, *p.scheduled, p.task);
  }
  if (p.start && !p.observedStart) {
    p.observedStart = true;
    observeDuration(createToStart_, "pod_create_to_start", *p.create, *p.start, p.task);
  }
  if (p.firstReady && !p.observedReady) {
    p.observedReady = true;
    observeDuration(createToReady_, "pod_create_to_ready", *p.create, *p.firstReady, p.task);
    if (p.start)
      observeDuration(startToReady_, "pod_start_to_ready", *p.start, *p.firstReady, p.task);
  }
  if (p.containersStart && p.start && !p.observedContainers) {
    p.observedContainers = true;
    observeDuration(containersStart_, "pod_containers_start", *p.start, *p.containersStart, p.task);
  }
  if (!p.observedPull && p.facts) {
    auto from = p.facts->imagePullStart();
    auto to = p.facts->imagePullEnd();
    // The pull is over once the containers run (or the pod is ready): no later Pulled comes.
    if (from && to && (p.containersStart || p.firstReady)) {
      p.observedPull = true;
      observeDuration(imagePull_, "pod_image_pull", Instant{*from}, Instant{*to}, p.task);
    }
  }
}

void TaskTimeline::observe(Service& s) {
  if (s.create && s.ready && !s.observed) {
    s.observed = true;
    observeDuration(serviceCreateToReady_, "service_create_to_ready", *s.create, *s.ready, s.task);
  }
}

void TaskTimeline::onService(const sdk::Event& e) {
  std::string key(e.key);
  if (e.type == KH_EVENT_DELETED) return forgetObject(key, false);
  model::EventFields f(e.fieldsJson, kSvcFieldCount);
  const std::string taskName = f.string(kSvcTask);
  if (taskName.empty()) return forgetObject(key, false); // not a task's service (or no longer)
  Service& s = *services_.apply(key, e.uid, taskName);
  const std::string& task = *s.task;
  if (auto t = readTime(f, kSvcCreate, "creationTimestamp", key, s.loggedMalformed)) s.create = t;
  if (auto t = readTime(f, kSvcReadyTime, "ready-time annotation", key, s.loggedMalformed))
    s.ready = t;
  observe(s);
  publish(key, s);
  touch(task, nullptr, &key);
}

void TaskTimeline::forgetObject(const std::string& key, bool pod) {
  // The board's entry first: it views the key of the record about to go (EntryBoard::put).
  board_.erase(key);
  release(pod ? pods_.forget(key) : services_.forget(key));
}

void TaskTimeline::onEndpoints(const sdk::Event& e) {
  if (e.type == KH_EVENT_DELETED) return;
  // Why its service waits changed (no address, then not programmed). The Endpoints themselves
  // are read from the host's cache when asked (serviceWaiting), never kept here.
  std::string key(e.key);
  if (services_.find(key) != services_.end()) publish(key, services_.at(key));
}

TaskTimeline::Task TaskTimeline::taskFrom(std::string_view fieldsJson, std::string_view ownPrefix,
                                          Task* previous, OtherTexts* others) {
  Task t;
  t.exists = true;
  // The maps are scanned and only this domain's entries kept, as their texts (own_entries.h):
  // those of `previous` when they digest alike, in one walk of the text; the leading strings
  // are small. Text the scanner cannot walk takes the full parser.
  static_assert(kTaskPods == kTaskFieldCount - 2 && kTaskServices == kTaskFieldCount - 1);
  if (auto fields = model::splitTaskFields(fieldsJson, kTaskPods, ownPrefix, true)) {
    auto own = [](const model::PartyEntries& split, model::OwnEntryTexts* held) {
      if (held != nullptr && held->digest() == split.ownDigest)
        return std::optional<model::OwnEntryTexts>(std::move(*held));
      return model::OwnEntryTexts::fromTexts(split.ownTexts);
    };
    auto pods = own(fields->pods, previous != nullptr ? &previous->pods : nullptr);
    auto services = own(fields->services, previous != nullptr ? &previous->services : nullptr);
    if (pods && services) { // else a key that does not decode: the full parser's
      if (others != nullptr) {
        others->scanned = true;
        others->pods = std::move(fields->pods.otherTexts);
        others->services = std::move(fields->services.otherTexts);
      }
      t.pods = std::move(*pods);
      t.services = std::move(*services);
      t.othersNotReady = fields->pods.others - fields->pods.othersReady + fields->services.others -
                         fields->services.othersReady;
      t.phase = model::stringValue(fields->leading[kTaskPhase]).value_or("");
      t.createTime = model::stringValue(fields->leading[kTaskCreate]).value_or("");
      t.completionTime = model::stringValue(fields->leading[kTaskCompletion]).value_or("");
      t.reason = model::stringValue(fields->leading[kTaskReason]).value_or("");
      t.message = model::stringValue(fields->leading[kTaskMessage]).value_or("");
      t.kept = model::stringValue(fields->leading[kTaskKept]).value_or("");
      const json conditions = model::parseJson(fields->leading[kTaskConditions]);
      t.resourceCreated = model::timeline::resourceCreatedTime(&conditions);
      const json ports = model::parseJson(fields->leading[kTaskPorts]);
      t.localParty = model::timeline::localParty(&ports);
      return t;
    }
  }
  json f = model::parseFields(fieldsJson, kTaskFieldCount);
  model::PartyEntries pods = model::splitParsedEntries(f[kTaskPods], ownPrefix);
  model::PartyEntries services = model::splitParsedEntries(f[kTaskServices], ownPrefix);
  t.pods = model::OwnEntryTexts::fromJson(pods.own);
  t.services = model::OwnEntryTexts::fromJson(services.own);
  t.othersNotReady = pods.others - pods.othersReady + services.others - services.othersReady;
  t.phase = model::fieldString(f, kTaskPhase);
  t.createTime = model::fieldString(f, kTaskCreate);
  t.completionTime = model::fieldString(f, kTaskCompletion);
  t.reason = model::fieldString(f, kTaskReason);
  t.message = model::fieldString(f, kTaskMessage);
  t.kept = model::fieldString(f, kTaskKept);
  t.resourceCreated = model::timeline::resourceCreatedTime(&f[kTaskConditions]);
  t.localParty = model::timeline::localParty(&f[kTaskPorts]);
  return t;
}

void TaskTimeline::onTask(const sdk::Event& e) {
  std::string name(model::nameOf(e.key));
  if (e.type == KH_EVENT_DELETED) {
    tasks_.erase(name);
    keepPending_.erase(name);
    summarized_.erase(name);
    failuresCounted_.erase(name);
    failuresDue_.erase(name);
    writer_.forget(name);
    return;
  }
  // A task without an object of this domain in memory has nothing for this instance to write:
  // it is not held (the routes read it from the host's cache when asked).
  if (pods_.members(name).empty() && services_.members(name).empty()) {
    // The phase and the completion lead the fields: read alone, nothing else parsed.
    const auto lead = model::leadingStrings(e.fieldsJson, kTaskCompletion + 1);
    noteFailure(name, lead[kTaskPhase], lead[kTaskCompletion]);
    return release(name);
  }
  const uint64_t version = model::versionNumber(e.resourceVersion);
  Task& t = tasks_.try_emplace(name).first->second; // one look-up: a new task answered nothing
  if (version != 0 && version < t.answered) return; // older than the write answered last
  const bool held = t.exists;
  const uint64_t podsDigest = t.pods.digest(), servicesDigest = t.services.digest();
  OtherTexts others;
  t = taskFrom(e.fieldsJson, ownPrefix_, &t, &others);
  t.version = version;
  noteFailure(name, t.phase, t.completionTime);
  // Own entries that digest as held (another party wrote, or the echo of this instance's own
  // write came back, which the held entries were merged with) hold every field this instance
  // wrote, as it wrote it: no other writer changed them, and nothing needs comparing.
  const bool sameEntries =
      held && t.pods.digest() == podsDigest && t.services.digest() == servicesDigest;
  // What another writer overwrote (the contest reads the entries parsed; it knows a task only
  // while this instance's writes of it are unconfirmed or contested).
  if (!sameEntries && writer_.contest().knows(name))
    writer_.observed(name, e.resourceVersion, t.pods.toJson(), t.services.toJson());
  // What this host knows may be missing (a pod seen first, or fields another writer removed).
  // Every change of this domain's objects was compared when it came (onPod, onService), so only
  // a change of its entries can make a difference now, or a write that did not land.
  if (!sameEntries || writer_.owes(name)) touch(name);
  // Complete only once every entry is ready in the status, which only a task event shows.
  summarizeOnce(name, e.fieldsJson, others);
  // Ended (a failed task may never have started): its facts kept before Kuscia deletes its pods.
  if (model::finishedPhase(t.phase)) keepFacts(name);
  settle(name);
}

bool TaskTimeline::counts(const std::string& party) const {
  if (!party.empty() && board_.hasDomain(party)) return party == domain_;
  return board_.isFirst(domain_);
}

void TaskTimeline::noteFailure(const std::string& task, std::string_view phase,
                               std::string_view completionTime, bool last) {
  if (phase != "Failed" || failuresCounted_.count(task) > 0) return;
  // Failed while this host ran (a restarted host does not count again what it counted before),
  // and within the hour the count is remembered.
  const int64_t now = host().wallTimeNanos();
  const int64_t ended = model::parseTime(completionTime).value_or(now);
  if (ended < startedNanos_ - model::kSecond || now - ended > kFailureMemoryNanos) return;
  auto doc = timeline(task, false);
  if (!doc || !(*doc)["summary"].contains("failure")) return;
  const json& failure = (*doc)["summary"]["failure"];
  const std::string reason = failure.value("reason", "Unknown");
  // Kuscia writes a pod's evidence with the phase; a writer that does it in two writes gets
  // until the next timer.
  if (reason == "Unknown" && !last) {
    failuresDue_.insert(task);
    return;
  }
  failuresDue_.erase(task);
  failuresCounted_[task] = ended;
  const std::string party = failure.value("party", "");
  if (counts(party)) failures_.add(1, {party.c_str(), reason.c_str()});
}

void TaskTimeline::refreshStuckTasks() {
  const int64_t now = host().wallTimeNanos();
  for (auto it = failuresCounted_.begin(); it != failuresCounted_.end();)
    it = now - it->second > kFailureMemoryNanos ? failuresCounted_.erase(it) : std::next(it);
  // Tasks not finished, created longer than stuckAfterSeconds ago, not seen complete: their
  // summaries say whether they are stuck and why.
  const int64_t limit = config_.stuckAfterSeconds * model::kSecond;
  std::vector<std::string> candidates;
  host().cacheList(taskSub_, "", [&](const sdk::Object& o) {
    auto lead = model::leadingStrings(o.fieldsJson, kTaskCreate + 1);
    auto created = model::parseTime(lead[kTaskCreate]);
    std::string name(model::nameOf(o.key));
    if (!model::finishedPhase(lead[kTaskPhase]) && created && now - *created >= limit &&
        summarized_.count(name) == 0)
      candidates.push_back(std::move(name));
    return false;
  });
  std::map<std::pair<std::string, std::string>, int> counted;
  for (const auto& task : candidates) {
    auto doc = timeline(task, false);
    if (!doc || !(*doc)["summary"].contains("stuck")) continue;
    const json& stuck = (*doc)["summary"]["stuck"];
    const std::string party = stuck.value("party", "");
    if (counts(party)) ++counted[{party, stuck.value("reason", "Unknown")}];
  }
  for (const auto& labels : stuckLabels_)
    if (counted.count(labels) == 0)
      stuckTasks_.set(0, {labels.first.c_str(), labels.second.c_str()});
  stuckLabels_.clear();
  for (const auto& [labels, n] : counted) {
    stuckTasks_.set(n, {labels.first.c_str(), labels.second.c_str()});
    stuckLabels_.insert(labels);
  }
}

void TaskTimeline::settle(const std::string& name) {
  if (summarized_.count(name) > 0 && writer_.settled(name)) tasks_.erase(name);
}

TaskTimeline::ParsedEntries TaskTimeline::cachedOthers(const std::string& name) const {
  ParsedEntries t;
  host().cacheGet(taskSub_, config_.taskNamespace + "/" + name,
                  [&](const sdk::Object& o) { t = othersFrom(o.fieldsJson); });
  return t;
}

TaskTimeline::ParsedEntries TaskTimeline::othersFrom(std::string_view fieldsJson) const {
  ParsedEntries t;
  if (auto spans = model::arrayElements(fieldsJson); spans && spans->size() == kTaskFieldCount) {
    t.podStatuses = model::otherEntries((*spans)[kTaskPods], ownPrefix_);
    t.serviceStatuses = model::otherEntries((*spans)[kTaskServices], ownPrefix_);
    return t;
  }
  // Text the scanner cannot walk: every entry, then not ours.
  const Task whole = taskFrom(fieldsJson);
  t.podStatuses = whole.pods.toJson();
  t.serviceStatuses = whole.services.toJson();
  for (json* group : {&t.podStatuses, &t.serviceStatuses})
    for (auto it = group->begin(); it != group->end();)
      it = it.key().compare(0, ownPrefix_.size(), ownPrefix_) == 0 ? group->erase(it)
                                                                   : std::next(it);
  return t;
}

TaskTimeline::Task* TaskTimeline::findTask(const std::string& name) {
  if (auto it = tasks_.find(name); it != tasks_.end()) return &it->second;
  auto t = cachedTask(name);
  if (!t) return nullptr; // applied when the task appears
  return &tasks_.emplace(name, std::move(*t)).first->second;
}

std::optional<TaskTimeline::Task> TaskTimeline::cachedTask(const std::string& name,
                                                           bool whole) const {
  std::optional<Task> t;
  std::string_view prefix = whole ? std::string_view() : std::string_view(ownPrefix_);
  host().cacheGet(taskSub_, config_.taskNamespace + "/" + name, [&t, prefix](const sdk::Object& o) {
    t = taskFrom(o.fieldsJson, prefix);
    t->version = model::versionNumber(o.resourceVersion);
  });
  return t;
}

void TaskTimeline::release(const std::string& name) {
  if (!pods_.members(name).empty() || !services_.members(name).empty()) return;
  tasks_.erase(name);
  reservations_.forget(name);
  writer_.forget(name); // also of a task settled before (not held, its contest kept)
  summarized_.erase(name);
  finished_->recheck(name);
}

bool TaskTimeline::busy(const std::string& name) const {
  return tasks_.count(name) > 0 || !pods_.members(name).empty() || !services_.members(name).empty();
}

void TaskTimeline::touch(const std::string& task, const std::string* pod,
                         const std::string* service) {
  bool wasHeld = tasks_.count(task) > 0;
  Task* held = findTask(task);
  if (held == nullptr) return;
  const Task& t = *held;
  // One object changed in a task held before: the others were compared when they changed, or
  // when the task's entries did (onTask). A task held only now is compared whole.
  bool one = wasHeld && (pod != nullptr || service != nullptr);
  bool urgent = false; // a difference that cannot wait for the writer's deferral
  auto podDiffer = [&](const std::string& key) {
    Pod& p = pods_.at(key);
    bool differs = podDiffers(p, t.pods.clockOf(key), nullptr, &urgent);
    if (p.republish) {
      p.republish = false;
      publish(key, p);
    }
    return differs;
  };
  auto serviceDiffer = [&](const std::string& key) {
    return serviceDiffers(services_.at(key), t.services.clockOf(key), nullptr, &urgent);
  };
  bool differs = false;
  if (one) {
    differs = pod != nullptr ? podDiffer(*pod) : serviceDiffer(*service);
  } else {
    // Every pod is compared (one may take its first ready from the status), services until one
    // differs in a way that cannot wait.
    for (const auto& key : pods_.members(task))
      differs = podDiffer(key) || differs;
    for (const auto& key : services_.members(task)) {
      if (urgent) break;
      differs = serviceDiffer(key) || differs;
    }
  }
  if (differs)
    writer_.changed(task, !urgent);
  else if (!wasHeld)
    settle(task); // a change of a settled task that changed nothing: let it go again
}

void TaskTimeline::summarizeOnce(const std::string& task, std::string_view fieldsJson,
                                 const OtherTexts& others) {
  if (summarized_.count(task) > 0) return;
  // Cheap first: every object of this domain ready.
  for (const auto& key : pods_.members(task))
    if (!pods_.at(key).firstReady) return;
  for (const auto& key : services_.members(task))
    if (!services_.at(key).ready) return;
  // And every entry of the task's status ready, with this domain's entries in it: only then is
  // the document built (once, or a few times while the last writes land), not on every event.
  auto held = tasks_.find(task);
  if (held == tasks_.end()) return;
  auto allReady = [](const model::OwnEntryTexts& group) {
    return std::all_of(group.entries().begin(), group.entries().end(),
                       [](const auto& e) { return e.clock.has(model::TimeField::kReady); });
  };
  const Task& t = held->second;
  if (t.othersNotReady > 0 || !allReady(t.pods) || !allReady(t.services)) return;
  for (const auto& key : pods_.members(task))
    if (t.pods.find(key) == nullptr) return;
  for (const auto& key : services_.members(task))
    if (t.services.find(key) == nullptr) return;
  // The summary from the entries' times as the document has them (timeline()): this domain's
  // entries as held, the other parties' as the host's cache has them, each with what the entry
  // board knows beside the status. No document is built for it.
  std::vector<model::timeline::EntryTimes> entries;
  auto addParsed = [this, &entries](const json& pods, const json& services) {
    for (const auto& [key, entry] : pods.items())
      entries.push_back(entryTimes(key, entry, true));
    for (const auto& [key, entry] : services.items())
      entries.push_back(entryTimes(key, entry, false));
  };
  // Every entry's times off its text, none parsed into a DOM (the own entries as held, the other
  // parties' where the event's split passed them); text the scanner does not read as the parser
  // does takes the full parser.
  auto addTexts = [this, &entries](const model::EntryTexts& pods,
                                   const model::EntryTexts& services) {
    auto p = model::entryTimesOf(pods, true);
    auto s = model::entryTimesOf(services, false);
    if (!p || !s) return false;
    for (auto* group : {&*p, &*s})
      for (auto& e : *group) {
        withBoardFacts(e);
        entries.push_back(std::move(e));
      }
    return true;
  };
  if (!addTexts(t.pods.views(), t.services.views())) {
    entries.clear();
    addParsed(t.pods.toJson(), t.services.toJson());
  }
  if (!others.scanned || !addTexts(others.pods, others.services)) {
    const ParsedEntries parsed = othersFrom(fieldsJson);
    addParsed(parsed.podStatuses, parsed.serviceStatuses);
  }
  // The partners whose pods this cluster does not hold, by their reservation (as timeline()).
  auto holds = [&entries](std::string_view party) {
    return std::any_of(entries.begin(), entries.end(),
                       [party](const auto& e) { return model::namespaceOf(e.key) == party; });
  };
  for (auto& partner : model::timeline::partnerEntries(
           json{{"partnerReservations", partnersOf(task, t.kept, holds)}}))
    entries.push_back(std::move(partner));
  std::optional<int64_t> created;
  if (!t.createTime.empty()) created = model::parseTime(t.createTime);
  auto s = model::timeline::summarize(created, entries, host().wallTimeNanos());
  if (!s.complete) return;
  summarized_.insert(task);
  // The facts it started with, kept on it at the next stuck timer: another local domain's
  // instance may put its pods on the board after this one saw the task complete.
  if (config_.keepFacts) keepPending_.insert(task);
  if (auto startup = s.startupSeconds()) observeForTask(taskStartup_, *startup, &task);
  // Its preparing: the task controller's ports, pre-checks and objects (ResourceCreated).
  if (auto prepared = model::parseTime(t.resourceCreated); prepared && created)
    observeForTask(preparing_, model::secondsBetween(*created, *prepared), &task);
  for (const auto& p : s.criticalPath)
    if (double seconds = p.seconds().value_or(0); seconds > 0)
      criticalPath_.add(seconds, {p.phase.c_str()});
  if (s.blame) blamed_.add(1, {s.blame->party.c_str(), s.blame->phase.c_str()});
}

model::timeline::EntryTimes TaskTimeline::entryTimes(const std::string& key, const json& status,
                                                     bool pod) const {
  // As entryTimeline() reads an entry: the status's times and reasons, replaced by what the
  // board has for the entry.
  model::timeline::EntryTimes e;
  e.key = key;
  e.pod = pod;
  e.readTimes(status);
  if (status.is_object())
    if (auto it = status.find("reasons"); it != status.end()) e.readReasons(*it);
  withBoardFacts(e);
  return e;
}

void TaskTimeline::withBoardFacts(model::timeline::EntryTimes& e) const {
  board_.read(e.key, [&e](const EntryFacts& f) {
    if (f.firstReady) e.firstReadyTime = f.firstReady;
    if (f.containersStart) e.containersStartTime = f.containersStart;
    if (f.reserving) e.reservingTime = *f.reserving;
    if (f.reserved) e.reservedTime = *f.reserved;
    if (f.schedulable) e.schedulableTime = *f.schedulable;
    if (f.facts) {
      if (auto t = f.facts->imagePullStart()) e.imagePullStartTime = t;
      if (auto t = f.facts->imagePullEnd()) e.imagePullEndTime = t;
      if (!f.facts->reasons().empty()) {
        e.reasons.clear();
        for (const auto& [phase, r] : f.facts->reasons())
          e.reasons[phase] = {r.reason, r.message};
      }
    }
    if (f.waiting) e.waitingToStart = f.waiting->phase == "starting";
  });
}

bool TaskTimeline::podDiffers(Pod& p, const model::EntryClock& entry,
                              model::StatusPatch::Entry* patch, bool* urgent) const {
  bool present = entry.present();
  bool same = sameIncarnation(entry, p.create.optional());
  bool differs = !present;
  if (!present && patch != nullptr) {
    patch->identify = true;
    patch->podPhase = *p.phase;
  }
  differs = setTime(patch, entry, model::TimeField::kCreate, p.create, false) || differs;
  const bool earlier = present && !same; // an earlier incarnation's entry: its times go
  differs = setTime(patch, entry, model::TimeField::kStart, p.start, earlier) || differs;
  // The first ready of this incarnation: the status, as first read, may hold an earlier Ready
  // than this host saw (it restarted after a flap, or the status was written by a host that kept
  // the first ready). Read once: what other writers put there later is theirs.
  if (same && present && !p.readStatusReady) {
    p.readStatusReady = true;
    if (auto have = entry.time(model::TimeField::kReady);
        have && (!p.firstReady || *have < *p.firstReady)) {
      p.firstReady = Instant{*have};
      p.republish = true;
    }
  }
  // The latest Ready, as Kuscia's controller writes it; a later one in the status stays.
  const bool ready = setTime(patch, entry, model::TimeField::kReady, p.ready, earlier, true);
  if (urgent != nullptr && (ready || (earlier && differs))) *urgent = true;
  return differs || ready;
}

bool TaskTimeline::serviceDiffers(const Service& s, const model::EntryClock& entry,
                                  model::StatusPatch::Entry* patch, bool* urgent) const {
  bool present = entry.present();
  bool same = sameIncarnation(entry, s.create.optional());
  bool differs = !present;
  if (!present && patch != nullptr) patch->identify = true;
  differs = setTime(patch, entry, model::TimeField::kCreate, s.create, false) || differs;
  const bool earlier = present && !same;
  const bool ready = setTime(patch, entry, model::TimeField::kReady, s.ready, earlier);
  if (urgent != nullptr && (ready || (earlier && differs))) *urgent = true;
  return differs || ready;
}

model::StatusPatch TaskTimeline::diff(const std::string& task) {
  model::StatusPatch status;
  auto it = tasks_.find(task);
  if (it == tasks_.end() || !it->second.exists) return status;
  const Task& t = it->second;
  for (const auto& key : pods_.members(task)) {
    model::StatusPatch::Entry patch{model::StatusPatch::kPods, key};
    if (podDiffers(pods_.at(key), t.pods.clockOf(key), &patch)) status.add(std::move(patch));
  }
  for (const auto& key : services_.members(task)) {
    model::StatusPatch::Entry patch{model::StatusPatch::kServices, key};
    if (serviceDiffers(services_.at(key), t.services.clockOf(key), &patch))
      status.add(std::move(patch));
  }
  return status;
}

void TaskTimeline::written(const std::string& task, const model::StatusPatch& status,
                           uint64_t version) {
  auto it = tasks_.find(task);
  if (it == tasks_.end()) return;
  // The events of this write, and maybe of another writer's change after it, came first: the
  // view holds what the task is now, and the patch would put back what that writer replaced.
  if (version != 0 && it->second.version >= version) return;
  // What was written is in the task now: later diffs start from it, so the write is not repeated
  // while the watch event is on its way (which then brings the task as it is). Merged into the
  // entries' texts as the server merges it, the echo of the write digests like them and is taken
  // as held (own_entries.h).
  Task& t = it->second;
  t.answered = version;
  t.pods.apply(status, model::StatusPatch::kPods);
  t.services.apply(status, model::StatusPatch::kServices);
}

void TaskTimeline::refreshStuck() {
  int64_t now = host().wallTimeNanos();
  int64_t limit = config_.stuckAfterSeconds * 1000000000;
  std::map<std::string, int> counts = {{"scheduling", 0}, {"starting", 0}, {"ready", 0}};
  for (const auto& [key, p] : pods_)
    if (p.waiting && p.waiting->sinceNanos > 0 && now - p.waiting->sinceNanos > limit)
      ++counts[p.waiting->phase];
  for (const auto& [key, s] : services_)
    if (auto w = serviceWaiting(key, s); w && w->sinceNanos > 0 && now - w->sinceNanos > limit)
      ++counts[w->phase];
  for (const auto& [phase, n] : counts)
    stuck_.set(n, {phase.c_str()});
  // Events of pods this instance never saw (not a task's) go after a while.
  for (auto it = earlyEvents_.begin(); it != earlyEvents_.end();)
    if (now - it->second.lastNanos > kOrphanEventsNanos)
      it = earlyEvents_.erase(it);
    else
      ++it;
}

uint8_t TaskTimeline::serviceWait(const std::string& key, const Service& s) const {
  if (s.ready) return kNoServiceWait;
  return model::cachedEndpointsHaveAddress(host(), endpointsSub_, key) ? kNotProgrammed
                                                                       : kNoEndpoints;
}

std::optional<Waiting> TaskTimeline::serviceWaiting(const std::string& key,
                                                    const Service& s) const {
  return serviceWaitingFor(serviceWait(key, s), s.create);
}

} // namespace kuscia_host::plugins::timeline
