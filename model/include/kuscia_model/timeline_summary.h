// The task-level answer of a timeline document (header-only; needs nlohmann/json): how long the
// task took to start, which party finished last, the critical path that set the moment the last
// entry was ready, and the one phase to blame. task-timeline puts it in every document it serves,
// `kuscia-host timeline` prints it, and the web page draws it: one function, one answer.
//
//   "summary": {"complete": bool, "createTime", "allReadyTime", "startupSeconds",
//               "parties": {"<party>": {"entries", "readyEntries", "readyTime", "startupSeconds"}},
//               "lastParty", "criticalPath": [phase, ...], "blame": phase,
//               "pending": [phase, ...],
//               "failure": classification,   (a Failed task)
//               "stuck": classification}     (a task still waiting, past stuckAfter)
//   phase: {"entry": "<ns>/<name>", "party", "phase", "from", "to", "seconds", "reason",
//           "message"}   ("ongoing": true and no "to" for a pending phase)
// addPhases() also sets each entry's "phases" (the same objects), for drawing.
//
// The algorithm (docs/design/critical-path.md has a worked example):
//  1. An entry's startup ends at its ready time: a pod's first Ready (firstReadyTime when the
//     document has it, else readyTime), a service's ready-time annotation. The party of an entry
//     is its namespace (in Kuscia, the domain).
//  2. An entry's phases are contiguous and end at the times it has, in this order; a phase whose
//     end is unknown is absent and the next one starts where the previous known one ended:
//       pod:     scheduling (-> scheduleTime), accepting (-> startTime), pulling
//                (-> imagePullEndTime, only when imagePullStartTime is known too), starting
//                (-> containersStartTime), readiness (-> ready); where its party reserves
//                through a TaskResource (reservingTime known), scheduling is reserving
//                (-> reservedTime), awaiting-parties (-> schedulableTime), binding
//                (-> scheduleTime);
//       service: programming (-> readyTime).
//     A time after the entry's ready time (a container restarted after startup) is not a phase
//     end. Before the entry's first phase: creating, from the task's createTime to the entry's.
//  3. The task is complete when every entry is ready; allReadyTime is the latest ready time. The
//     walk starts from the last-ready entry. Ties at one-second resolution (Kuscia writes whole
//     seconds) go to the entry created first, then to a pod over a service, then to the smaller
//     key: the one with the longest startup explains the most.
//  4. Walking back: a service's programming waits for the pod it exposes (a Kuscia service is
//     named "<pod>-<port>"; the longest such pod name of the same namespace): when that pod
//     became ready inside the service's programming phase, the path holds programming from that
//     moment only and goes on through the pod's phases. Likewise a pod's awaiting-parties waits
//     for the other party that reserved last (docs/design/control-plane.md): when one reserved
//     inside it, the path holds awaiting-parties from that moment only and goes on through that
//     party's pod (the first in key order of those that reserved then): its reserving, its
//     creating. A party whose pods the document does not hold (p2p: the initiator's cluster
//     keeps a stub TaskResource of each partner, the document's "partnerReservations") is
//     followed the same way, through its TaskResource: its reserving, then its creating (the
//     task's creation -> its reservation began), and pends as `reserving` while it reserves.
//     Otherwise the path is the entry's phases, then its creating phase.
//  5. blame is the longest phase on the path (the earliest of equals). An incomplete task has no
//     path: each entry not ready yet has a pending phase, from the last time it reached to now,
//     longest first, and blame is the longest of them (marked "ongoing").
//  6. Why (failure.h, docs/design/failure.md): a Failed task's "failure", and a task neither
//     complete nor finished whose longest pending phase began `stuckAfter` ago or more (or, with
//     no entry, that was created so long ago) its "stuck": one reason of the vocabulary, from the
//     evidence of its entries (what the status says of each: "evidence"; and why the pending
//     phase of an entry not ready waits) and of the task itself (its reason and message). A
//     stuck task's "since" is when its chosen entry began to wait, "seconds" how long ago.
// Phases keep the reason they waited for when the document's entry has it
// ("reasons": {"<phase>": {"reason", "message"}}). Negative seconds (clocks that disagree) are
// kept as they are and never blamed over a positive phase.
#ifndef KUSCIA_HOST_TIMELINE_SUMMARY_HPP
#define KUSCIA_HOST_TIMELINE_SUMMARY_HPP

#include <kuscia_host/kube_text.hpp>
#include <kuscia_model/failure.h>
#include <kuscia_model/json_member.h>
#include <kuscia_model/pod_events.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kuscia_host::model::timeline {

namespace detail {

// From `from` to `to` in seconds, to the millisecond: every duration the documents give.
inline double seconds(int64_t from, int64_t to) {
  return std::round(static_cast<double>(sdk::elapsed(from, to)) / 1e6) / 1e3;
}

} // namespace detail

// One phase of an entry's startup: [from, to] (to absent while it lasts).
struct Phase {
  std::string entry;
  std::string party;
  std::string phase;
  int64_t from = 0;
  std::optional<int64_t> to;
  std::string reason;
  std::string message;

  // Its length in seconds, to the millisecond (as the documents give it); none while it lasts.
  std::optional<double> seconds() const {
    if (!to) return std::nullopt;
    return detail::seconds(from, *to);
  }
};

// A pod's phases in order, each with the time that ends it.
struct PhaseEnd {
  const char* phase;
  const char* time;
};
inline constexpr PhaseEnd kPodPhases[] = {{"scheduling", "scheduleTime"},
                                          {"accepting", "startTime"},
                                          {"pulling", "imagePullEndTime"},
                                          {"starting", "containersStartTime"},
                                          {"readiness", "readyTime"}};
// The same for a pod whose party reserves through a TaskResource (Kuscia's gang reservation,
// docs/design/control-plane.md): its scheduling is three phases, the party's reservation, the
// wait for the other parties' and the binding.
inline constexpr PhaseEnd kReservedPodPhases[] = {
    {"reserving", "reservedTime"},   {"awaiting-parties", "schedulableTime"},
    {"binding", "scheduleTime"},     {"accepting", "startTime"},
    {"pulling", "imagePullEndTime"}, {"starting", "containersStartTime"},
    {"readiness", "readyTime"}};

// Every phase a critical path may hold, in the order of a startup.
inline constexpr const char* kPhaseNames[] = {
    "creating",  "scheduling", "reserving", "awaiting-parties", "binding",
    "accepting", "pulling",    "starting",  "readiness",        "programming"};

// One entry as the summary reads it: its times (nanoseconds since the epoch) and why its phases
// waited. entryTimes() reads it from a document's entry; a source that holds these facts itself
// (task-timeline) fills it directly and builds no document to summarize a task.
struct EntryTimes {
  std::string key; // "<ns>/<name>"
  bool pod = false;
  std::optional<int64_t> createTime, scheduleTime, startTime, readyTime, firstReadyTime,
      imagePullStartTime, imagePullEndTime, containersStartTime, reservingTime, reservedTime,
      schedulableTime;
  // phase -> {reason, message} ("reasons" of the document's entry)
  std::map<std::string, std::pair<std::string, std::string>, std::less<>> reasons;
  // The source says the pod waits to be accepted ("waiting": {"phase": "starting"}): it was
  // scheduled, though no scheduleTime is known.
  bool waitingToStart = false;
  // What the status says of why the pod waits or ended (the document entry's "evidence").
  std::string evidenceReason, evidenceMessage, terminationLog;
  // A partner's reservation, not an entry: the stub TaskResource a p2p initiator's cluster keeps
  // of a party whose pods it does not hold (key: the TaskResource's; createTime = reservingTime).
  // It counts for no party's entries and is never ready; a pod's awaiting-parties can wait for it.
  bool partner = false;

  using Member = std::optional<int64_t> EntryTimes::*;
  static constexpr std::size_t kTimeCount = 11;
  // The time fields by their names in the documents (kPodTimes and the times only some sources
  // know). The last three are the pod's party's reservation (its TaskResource): when it began
  // (the TaskResource's startTime: the pod reserves through it), when the party reserved
  // (Reserved) and when every party had (Schedulable).
  static constexpr std::array<std::pair<std::string_view, Member>, kTimeCount> fields() {
    return {{{"createTime", &EntryTimes::createTime},
             {"scheduleTime", &EntryTimes::scheduleTime},
             {"startTime", &EntryTimes::startTime},
             {"readyTime", &EntryTimes::readyTime},
             {"firstReadyTime", &EntryTimes::firstReadyTime},
             {"imagePullStartTime", &EntryTimes::imagePullStartTime},
             {"imagePullEndTime", &EntryTimes::imagePullEndTime},
             {"containersStartTime", &EntryTimes::containersStartTime},
             {"reservingTime", &EntryTimes::reservingTime},
             {"reservedTime", &EntryTimes::reservedTime},
             {"schedulableTime", &EntryTimes::schedulableTime}}};
  }
  // The member of the time field `name`; nullptr for a name fields() lacks.
  static Member memberNamed(std::string_view name) {
    for (auto [field, member] : fields())
      if (name == field) return member;
    return nullptr;
  }
  // The time field `name`; none for a name fields() lacks.
  std::optional<int64_t> time(std::string_view name) const {
    const Member member = memberNamed(name);
    return member != nullptr ? this->*member : std::nullopt;
  }
  // Sets every time field `from` (a document entry's "times", or a status-like object) has: to
  // its instant, or to none when its value is not a time. Fields it lacks are left as they are.
  void readTimes(const nlohmann::json& from) {
    if (!from.is_object()) return;
    // One pass over what `from` holds (an entry has a few of the eight): cheaper than eight
    // look-ups in the object's ordered map.
    for (auto it = from.begin(); it != from.end(); ++it)
      if (const Member member = memberNamed(it.key()); member != nullptr)
        this->*member = it->is_string() ? sdk::parseTime(it->get_ref<const std::string&>())
                                        : std::optional<int64_t>();
  }
  // Sets the evidence `from` has: a document entry's "evidence", or a status entry itself (the
  // same names: reason, message, terminationLog), each as an excerpt.
  void readEvidence(const nlohmann::json& from) {
    if (!from.is_object()) return;
    for (auto [name, member] : {std::pair{"reason", &EntryTimes::evidenceReason},
                                std::pair{"message", &EntryTimes::evidenceMessage},
                                std::pair{"terminationLog", &EntryTimes::terminationLog}})
      if (auto it = from.find(name); it != from.end() && it->is_string())
        this->*member = failure::excerpt(it->get_ref<const std::string&>());
  }
  // Replaces the reasons with those of `from` ({"<phase>": {"reason", "message"}}) when it is an
  // object.
  void readReasons(const nlohmann::json& from) {
    if (!from.is_object()) return;
    reasons.clear();
    // A phase whose value is no object still has a reason (an empty one): it says the phase
    // waited (a pull failure with no Events is pulling).
    for (auto entry = from.begin(); entry != from.end(); ++entry) {
      const nlohmann::json& r = entry.value();
      auto text = [&r](const char* k) {
        auto it = r.is_object() ? r.find(k) : r.end();
        return it != r.end() && it->is_string() ? it->get<std::string>() : std::string();
      };
      reasons[entry.key()] = {text("reason"), text("message")};
    }
  }
};

namespace detail {

inline std::optional<int64_t> timeOf(const nlohmann::json& entry, const char* field) {
  if (!entry.is_object() || !entry.contains("times") || !entry["times"].is_object()) return {};
  const auto& times = entry["times"];
  auto it = times.find(field);
  if (it == times.end() || !it->is_string()) return {};
  return sdk::parseTime(it->get_ref<const std::string&>());
}

inline std::string partyOf(std::string_view key) {
  auto slash = key.find('/');
  return std::string(slash == std::string_view::npos ? std::string_view() : key.substr(0, slash));
}

inline void withReason(Phase& p, const EntryTimes& entry) {
  auto it = entry.reasons.find(p.phase);
  if (it == entry.reasons.end()) return;
  p.reason = it->second.first;
  p.message = it->second.second;
}

inline nlohmann::json toJson(const Phase& p, std::optional<int64_t> now = {}) {
  nlohmann::json j = {{"entry", p.entry},
                      {"party", p.party},
                      {"phase", p.phase},
                      {"from", sdk::formatTime(p.from, sdk::TimePrecision::kAsGiven)}};
  if (p.to) {
    j["to"] = sdk::formatTime(*p.to, sdk::TimePrecision::kAsGiven);
    j["seconds"] = seconds(p.from, *p.to);
  } else {
    j["ongoing"] = true;
    if (now) j["seconds"] = seconds(p.from, *now);
  }
  if (!p.reason.empty()) j["reason"] = p.reason;
  if (!p.message.empty()) j["message"] = p.message;
  // The pull's own duration, as its Event says it to the millisecond: the phase also holds the
  // time before the pull began, and its ends are the Events' and the status's (whole seconds).
  if (p.phase == "pulling")
    if (auto pull = pulledSeconds(p.message)) j["pullSeconds"] = std::round(*pull * 1000) / 1000;
  return j;
}

} // namespace detail

// A document's entry ({"kind", "times", "reasons", "waiting"}, timeline.h) as the summary
// reads it.
inline EntryTimes entryTimes(std::string_view key, const nlohmann::json& entry) {
  EntryTimes t;
  t.key = std::string(key);
  if (!entry.is_object()) return t;
  t.pod = textOf(entry, "kind") == "pod";
  if (auto it = entry.find("times"); it != entry.end()) t.readTimes(*it);
  if (auto it = entry.find("reasons"); it != entry.end()) t.readReasons(*it);
  if (auto it = entry.find("waiting"); it != entry.end())
    t.waitingToStart = textOf(*it, "phase") == "starting";
  if (auto it = entry.find("evidence"); it != entry.end()) t.readEvidence(*it);
  return t;
}

// Whether the entry key "<ns>/<name>" is one of `party`'s.
inline bool keyOfParty(std::string_view key, std::string_view party) {
  return key.size() > party.size() && key[party.size()] == '/' && key.starts_with(party);
}

// Whether a document's entries ({"<ns>/<name>": ...}) hold one of `party`.
inline bool holdsParty(const nlohmann::json& entries, std::string_view party) {
  if (!entries.is_object()) return false;
  const std::string prefix = std::string(party) + "/";
  const auto& keys = entries.get_ref<const nlohmann::json::object_t&>();
  auto it = keys.lower_bound(prefix);
  return it != keys.end() && it->first.starts_with(prefix);
}

// A document's "partnerReservations" ({"<party>": {"taskResource": "<ns>/<name>",
// "reservingTime", "reservedTime", "schedulableTime"}}) as partner entries (EntryTimes::partner),
// but for the parties `holds` says there are entries of: their pods carry their reservation.
template <typename Holds>
std::vector<EntryTimes> partnerEntriesOf(const nlohmann::json& partners, const Holds& holds) {
  std::vector<EntryTimes> out;
  if (!partners.is_object()) return out;
  for (const auto& [party, r] : partners.items()) {
    if (!r.is_object() || party.empty() || holds(std::string_view(party))) continue;
    EntryTimes t;
    t.key = textOf(r, "taskResource");
    if (!t.key.starts_with(party + "/")) t.key = party + "/" + party;
    t.pod = true;
    t.partner = true;
    t.readTimes(r);
    t.createTime = t.reservingTime;
    if (t.reservingTime) out.push_back(std::move(t));
  }
  return out;
}

// The document's partner entries (partnerEntriesOf its "partnerReservations" and its entries).
inline std::vector<EntryTimes> partnerEntries(const nlohmann::json& doc) {
  auto partners = doc.is_object() ? doc.find("partnerReservations") : doc.end();
  if (partners == doc.end()) return {};
  auto entries = doc.find("entries");
  const nlohmann::json none = nlohmann::json::object();
  const nlohmann::json& held = entries != doc.end() ? *entries : none;
  return partnerEntriesOf(*partners,
                          [&held](std::string_view party) { return holdsParty(held, party); });
}

// What the task's own status says beside its entries, for summary.failure and summary.stuck.
struct TaskEnd {
  std::string phase;                     // "Failed", "Succeeded", ...
  std::optional<int64_t> completionTime; // when it ended
  std::string reason, message;           // excerpts
  std::string party; // the party whose cluster wrote the status (timeline::localParty), or ""
  // The route outage the document gives (its "routeOutage", route_outage.h), "" route: none.
  std::string outageRoute;
  std::optional<int64_t> outageSince, outageUntil, lastHeartbeat;
  // Its ResourceCreated condition's time: the task controller allocated its ports, ran its
  // pre-checks and created its objects (the task's `preparing` ended).
  std::optional<int64_t> resourceCreated;
  // From the status's texts ("" for one it lacks).
  static TaskEnd of(std::string_view phase, std::string_view completionTime,
                    std::string_view reason, std::string_view message,
                    std::string_view resourceCreated = {}, std::string_view party = {}) {
    TaskEnd t;
    t.phase = std::string(phase);
    if (!reason.empty() || !message.empty()) t.party = std::string(party); // as "evidence" has it
    if (!completionTime.empty()) t.completionTime = sdk::parseTime(completionTime);
    if (!resourceCreated.empty()) t.resourceCreated = sdk::parseTime(resourceCreated);
    if (!reason.empty()) t.reason = failure::excerpt(reason);
    if (!message.empty()) t.message = failure::excerpt(message);
    return t;
  }
  // From the top of a document ("phase", "completionTime", "evidence": {"reason", "message"}).
  static TaskEnd of(const nlohmann::json& doc) {
    const nlohmann::json evidence =
        doc.is_object() ? doc.value("evidence", nlohmann::json()) : nlohmann::json();
    TaskEnd t = of(textOf(doc, "phase"), textOf(doc, "completionTime"), textOf(evidence, "reason"),
                   textOf(evidence, "message"), textOf(doc, "resourceCreatedTime"),
                   textOf(evidence, "party"));
    if (doc.is_object())
      if (auto outage = doc.find("routeOutage"); outage != doc.end()) t.readOutage(*outage);
    return t;
  }
  // The document's "routeOutage" (route_outage.h).
  void readOutage(const nlohmann::json& outage) {
    outageRoute = textOf(outage, "route");
    outageSince = timeIn(outage, "since");
    outageUntil = timeIn(outage, "until");
    lastHeartbeat = timeIn(outage, "lastHeartbeatTime");
  }
};

// A task is stuck once its longest wait began this long ago, unless the reader is told otherwise
// (task-timeline's and otel-export's stuckAfterSeconds default).
inline constexpr int64_t kStuckAfterNanos = int64_t{300} * 1000000000;

// The time an entry's startup ended: its first ready (pods), its ready-time (services).
inline std::optional<int64_t> readyOf(const EntryTimes& entry) {
  if (entry.pod && entry.firstReadyTime) return entry.firstReadyTime;
  return entry.readyTime;
}
inline std::optional<int64_t> readyOf(const nlohmann::json& entry) {
  return readyOf(entryTimes({}, entry));
}

// The phases an entry completed (step 2 above), earliest first, and the one it is in when it is
// not ready yet (its `to` absent).
inline std::vector<Phase> phasesOf(const EntryTimes& entry) {
  std::vector<Phase> out;
  if (!entry.createTime) return out;
  auto ready = readyOf(entry);
  Phase base;
  base.entry = entry.key;
  base.party = detail::partyOf(entry.key);
  int64_t from = *entry.createTime;
  auto add = [&](const char* phase, std::optional<int64_t> to) {
    Phase p = base;
    p.phase = phase;
    p.from = from;
    p.to = to;
    detail::withReason(p, entry);
    out.push_back(std::move(p));
    if (to) from = *to;
  };
  if (!entry.pod) {
    add("programming", ready);
    return out;
  }
  const bool reserves = entry.reservingTime.has_value();
  for (const PhaseEnd& pe : reserves ? std::span<const PhaseEnd>(kReservedPodPhases)
                                     : std::span<const PhaseEnd>(kPodPhases)) {
    std::string_view phase = pe.phase;
    auto end = phase == "readiness" ? ready : entry.time(pe.time);
    if (phase == "pulling" && !entry.imagePullStartTime) end.reset();
    if (phase != "readiness" && end && ready && *end > *ready) end.reset();
    if (end || phase == "readiness") add(pe.phase, end);
  }
  if (!ready) {
    // Not ready yet: the pending phase is the one after the last time it reached.
    Phase pending = out.back();
    out.pop_back();
    bool scheduled = entry.scheduleTime || entry.waitingToStart;
    if (!entry.startTime && !scheduled && reserves)
      pending.phase = !entry.reservedTime      ? "reserving"
                      : !entry.schedulableTime ? "awaiting-parties"
                                               : "binding";
    else if (!entry.startTime)
      pending.phase = scheduled ? "accepting" : "scheduling";
    else if (!entry.imagePullEndTime &&
             (entry.imagePullStartTime || entry.reasons.count("pulling") > 0))
      pending.phase = "pulling"; // a Pulling Event, or a pull failure, and no Pulled yet
    else if (!entry.containersStartTime)
      pending.phase = "starting";
    else
      pending.phase = "readiness";
    pending.reason.clear();
    pending.message.clear();
    detail::withReason(pending, entry);
    out.push_back(std::move(pending));
  }
  return out;
}
inline std::vector<Phase> phasesOf(std::string_view key, const nlohmann::json& entry) {
  return phasesOf(entryTimes(key, entry));
}

// Sets each entry's "phases" (phasesOf, as JSON, the last one "ongoing" while the entry is not
// ready): what the web page and the Gantt chart draw.
inline void addPhases(nlohmann::json& doc, int64_t nowNanos) {
  if (!doc.contains("entries") || !doc["entries"].is_object()) return;
  for (auto& [key, entry] : doc["entries"].items()) {
    if (!entry.is_object()) continue;
    nlohmann::json list = nlohmann::json::array();
    for (const Phase& p : phasesOf(key, entry))
      list.push_back(detail::toJson(p, nowNanos));
    entry["phases"] = std::move(list);
  }
}

// A task's summary as values: what summarize() answers as JSON (toJson).
struct Summary {
  struct Party {
    int entries = 0, ready = 0;
    std::optional<int64_t> last; // the latest ready time of its entries
  };
  bool complete = false;
  std::optional<int64_t> createTime, allReadyTime;
  // The task's own ResourceCreated: its `preparing` (creation to it) is the task's, beside the
  // entries' phases (each pod's `creating` covers it from the pod's side).
  std::optional<int64_t> resourceCreated;
  std::map<std::string, Party> parties;
  std::string lastParty;
  std::vector<Phase> criticalPath; // earliest first (complete tasks)
  std::vector<Phase> pending;      // longest first (incomplete tasks)
  std::optional<Phase> blame;
  // Why a Failed task failed; why a waiting one is stuck (step 6).
  std::optional<failure::Classification> failure, stuck;

  // The task's creation to its last entry ready, in seconds (to the millisecond); none while the
  // task is incomplete or its creation is unknown.
  std::optional<double> startupSeconds() const {
    if (!complete || !createTime || !allReadyTime) return std::nullopt;
    return detail::seconds(*createTime, *allReadyTime);
  }
  // A party's startup: the task's creation to the party's last entry ready, in seconds; none
  // while one of its entries is not ready or the creation is unknown.
  std::optional<double> startupSeconds(const Party& p) const {
    if (p.ready != p.entries || !p.last || !createTime) return std::nullopt;
    return detail::seconds(*createTime, *p.last);
  }
};

namespace detail {

// The entries in key order: their addresses sorted, the entries left where they are (an entry is
// a few hundred bytes of strings and maps, which a sort of values moves many times).
inline std::vector<const EntryTimes*> sortedByKey(const std::vector<EntryTimes>& entries) {
  std::vector<const EntryTimes*> sorted;
  sorted.reserve(entries.size());
  for (const EntryTimes& e : entries)
    sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(),
            [](const EntryTimes* a, const EntryTimes* b) { return a->key < b->key; });
  return sorted;
}

// The longest of `phases` (an open one lasts until `now`); the first of equals.
inline std::optional<Phase> longestPhase(const std::vector<Phase>& phases, int64_t now) {
  const Phase* best = nullptr;
  int64_t bestLength = 0;
  for (const Phase& p : phases) {
    int64_t length = sdk::elapsed(p.from, p.to.value_or(now));
    if (best == nullptr || length > bestLength) {
      best = &p;
      bestLength = length;
    }
  }
  return best != nullptr ? std::optional<Phase>(*best) : std::nullopt;
}

// The pod a service belongs to: of the service's party, the pod with the longest name that the
// service's name extends with "-..."; nullptr when none.
inline const EntryTimes* podOfService(const std::vector<const EntryTimes*>& sorted,
                                      const EntryTimes& service) {
  std::string ns = partyOf(service.key);
  std::string name = service.key.substr(ns.size() + 1);
  const EntryTimes* pod = nullptr;
  std::size_t podLength = 0;
  for (const EntryTimes* at : sorted) {
    const EntryTimes& e = *at;
    std::string_view podName =
        std::string_view(e.key).substr(std::min(e.key.size(), ns.size() + 1));
    if (!e.pod || partyOf(e.key) != ns || podName.size() <= podLength ||
        name.size() <= podName.size() || name.compare(0, podName.size(), podName) != 0 ||
        name[podName.size()] != '-')
      continue;
    pod = &e;
    podLength = podName.size();
  }
  return pod;
}

// The pod of another party that reserved last after `after` and by `schedulable` (the first in
// key order of those that reserved then); nullptr when none did: `entry`'s own party reserved
// last, and its wait for the others was no wait for anyone.
inline const EntryTimes* lastReserver(const std::vector<const EntryTimes*>& sorted,
                                      const EntryTimes& entry, int64_t after, int64_t schedulable) {
  const std::string party = partyOf(entry.key);
  const EntryTimes* last = nullptr;
  for (const EntryTimes* e : sorted) {
    if (!e->pod || !e->createTime || !e->reservingTime || !e->reservedTime ||
        partyOf(e->key) == party)
      continue;
    if (*e->reservedTime <= after || *e->reservedTime > schedulable) continue;
    if (last == nullptr || *e->reservedTime > *last->reservedTime) last = e;
  }
  return last;
}

// Step 4: the walk back from the last-ready entry, ready at `end`, to the task's creation: its
// phases, through its pod when it is a service whose programming waited for the pod's Ready.
inline std::vector<Phase> criticalPathFrom(const std::vector<const EntryTimes*>& sorted,
                                           const EntryTimes* entry, int64_t end,
                                           std::optional<int64_t> taskCreate) {
  std::vector<Phase> path; // latest first until reversed
  if (!entry->pod && entry->createTime) {
    const EntryTimes* pod = podOfService(sorted, *entry);
    auto podReady = pod != nullptr ? readyOf(*pod) : std::nullopt;
    if (podReady && *podReady > *entry->createTime && *podReady <= end) {
      Phase p = phasesOf(*entry).front();
      p.from = *podReady;
      path.push_back(std::move(p));
      entry = pod;
    }
  }
  auto phases = phasesOf(*entry);
  for (std::size_t i = phases.size(); i-- > 0;) { // latest first
    Phase& phase = phases[i];
    // A pod that waited for the other parties' reservations waited for the last of them: the
    // path holds the wait from that party's reservation only and goes on through its pod.
    const EntryTimes* last = phase.phase == "awaiting-parties" && phase.to
                                 ? lastReserver(sorted, *entry, phase.from, *phase.to)
                                 : nullptr;
    std::vector<Phase> theirs = last != nullptr ? phasesOf(*last) : std::vector<Phase>();
    auto reserving = std::find_if(theirs.begin(), theirs.end(),
                                  [](const Phase& p) { return p.phase == "reserving" && p.to; });
    if (reserving == theirs.end()) {
      path.push_back(std::move(phase));
      continue;
    }
    phase.from = *reserving->to;
    path.push_back(std::move(phase));
    path.push_back(std::move(*reserving));
    entry = last;
    break;
  }
  if (entry->createTime && taskCreate) {
    Phase p;
    p.entry = entry->key;
    p.party = partyOf(entry->key);
    p.phase = "creating";
    p.from = *taskCreate;
    p.to = *entry->createTime;
    path.push_back(std::move(p));
  }
  std::reverse(path.begin(), path.end());
  return path;
}

// An entry's evidence: what its status says and, when it has a pending phase, why that waits.
inline void addEvidence(std::vector<failure::Evidence>& out, const EntryTimes& e,
                        const Phase* pending) {
  if (!e.terminationLog.empty()) out.push_back({e.key, e.evidenceReason, e.terminationLog, 0});
  if (!e.evidenceMessage.empty() || (e.terminationLog.empty() && !e.evidenceReason.empty()))
    out.push_back({e.key, e.evidenceReason, e.evidenceMessage, 0});
  if (pending != nullptr && (!pending->reason.empty() || !pending->message.empty()))
    out.push_back({e.key, pending->reason, pending->message, pending->from});
}

// Step 6: the summary's failure or stuck classification.
inline void diagnose(Summary& s, const std::vector<const EntryTimes*>& sorted, const TaskEnd& task,
                     int64_t nowNanos, int64_t stuckAfterNanos) {
  const bool failed = task.phase == "Failed";
  if (!failed && (s.complete || task.phase == "Succeeded")) return;
  auto pendingOf = [&s](std::string_view key) -> const Phase* {
    for (const Phase& p : s.pending)
      if (p.entry == key) return &p;
    return nullptr;
  };
  const Phase* longest = s.blame && !s.complete ? &*s.blame : nullptr;
  if (!failed) {
    const std::optional<int64_t> waiting = longest != nullptr ? longest->from : s.createTime;
    if (!waiting || sdk::elapsed(*waiting, nowNanos) < stuckAfterNanos) return;
  }
  std::vector<failure::Evidence> evidence;
  for (const EntryTimes* e : sorted)
    if (!e->partner && (failed || !readyOf(*e))) addEvidence(evidence, *e, pendingOf(e->key));
  if (!task.reason.empty() || !task.message.empty())
    evidence.push_back(
        {"", task.reason, task.message, failed ? task.completionTime.value_or(0) : 0, task.party});
  failure::Classification c = failure::classify(evidence);
  if (c.reason == failure::Reason::kRouteNotReady && !c.pair.empty() &&
      c.pair == task.outageRoute) {
    c.routeDownSince = task.outageSince;
    c.routeDownUntil = task.outageUntil;
    c.routeLastHeartbeat = task.lastHeartbeat;
  }
  if (!failed && c.entry.empty() && longest != nullptr) {
    // Nothing says why: where it waits longest is still a fact.
    c.entry = longest->entry;
    c.party = longest->party;
  }
  if (c.since == 0) {
    const Phase* waits = pendingOf(c.entry);
    if (failed)
      c.since = task.completionTime.value_or(0);
    else if (waits != nullptr)
      c.since = waits->from;
    else
      c.since = longest != nullptr ? longest->from : s.createTime.value_or(0);
  }
  (failed ? s.failure : s.stuck) = std::move(c);
}

} // namespace detail

// The summary of a task created at `taskCreate` (when known) with these entries; `nowNanos`
// dates the pending phases of an incomplete task, and tells whether it is stuck (`stuckAfter`).
// The entries are taken in key order, whatever order they come in.
inline Summary summarize(std::optional<int64_t> taskCreate, const std::vector<EntryTimes>& entries,
                         int64_t nowNanos, const TaskEnd& task = {},
                         int64_t stuckAfterNanos = kStuckAfterNanos) {
  Summary out;
  out.createTime = taskCreate;
  out.resourceCreated = task.resourceCreated;
  const std::vector<const EntryTimes*> sorted = detail::sortedByKey(entries);
  const EntryTimes* last = nullptr;
  std::optional<int64_t> allReady;
  bool complete =
      std::any_of(entries.begin(), entries.end(), [](const EntryTimes& e) { return !e.partner; });
  // Step 3: the last-ready entry and its tie-breaks.
  auto later = [&](const EntryTimes& e, int64_t ready) {
    if (!allReady) return true;
    int64_t a = ready / 1000000000, b = *allReady / 1000000000;
    if (a != b) return a > b;
    if (e.createTime != last->createTime)
      return e.createTime && (!last->createTime || *e.createTime < *last->createTime);
    if (e.pod != last->pod) return e.pod;
    return e.key < last->key;
  };
  for (const EntryTimes* at : sorted) {
    const EntryTimes& e = *at;
    if (e.partner) continue;
    Summary::Party& s = out.parties[detail::partyOf(e.key)];
    ++s.entries;
    auto ready = readyOf(e);
    if (!ready) {
      complete = false;
      continue;
    }
    ++s.ready;
    if (!s.last || *ready > *s.last) s.last = ready;
    if (later(e, *ready)) {
      last = &e;
      allReady = ready;
    }
  }
  if (!complete) {
    for (const EntryTimes* e : sorted)
      if (!readyOf(*e)) {
        auto phases = phasesOf(*e);
        // A partner's reservation pends while it reserves; its wait after is its pods' own.
        if (e->partner && (phases.empty() || phases.back().phase != "reserving")) continue;
        if (!phases.empty()) out.pending.push_back(std::move(phases.back()));
      }
    std::stable_sort(out.pending.begin(), out.pending.end(), [&](const Phase& a, const Phase& b) {
      return sdk::elapsed(a.from, nowNanos) > sdk::elapsed(b.from, nowNanos);
    });
    out.blame = detail::longestPhase(out.pending, nowNanos);
    detail::diagnose(out, sorted, task, nowNanos, stuckAfterNanos);
    return out;
  }
  out.criticalPath = detail::criticalPathFrom(sorted, last, *allReady, taskCreate);
  out.complete = true;
  out.allReadyTime = allReady;
  out.lastParty = detail::partyOf(last->key);
  out.blame = detail::longestPhase(out.criticalPath, *allReady);
  detail::diagnose(out, sorted, task, nowNanos, stuckAfterNanos);
  return out;
}

// The summary as the documents carry it ("summary", at the top of this file).
inline nlohmann::json toJson(const Summary& s, int64_t nowNanos) {
  using detail::toJson;
  using nlohmann::json;
  json out = {{"complete", s.complete}};
  if (s.createTime)
    out["createTime"] = sdk::formatTime(*s.createTime, sdk::TimePrecision::kAsGiven);
  if (s.createTime && s.resourceCreated)
    out["preparing"] = {{"phase", "preparing"},
                        {"from", sdk::formatTime(*s.createTime, sdk::TimePrecision::kAsGiven)},
                        {"to", sdk::formatTime(*s.resourceCreated, sdk::TimePrecision::kAsGiven)},
                        {"seconds", detail::seconds(*s.createTime, *s.resourceCreated)}};
  json parties = json::object();
  for (const auto& [party, p] : s.parties) {
    json j = {{"entries", p.entries}, {"readyEntries", p.ready}};
    if (p.ready == p.entries && p.last) {
      j["readyTime"] = sdk::formatTime(*p.last, sdk::TimePrecision::kAsGiven);
      if (auto startup = s.startupSeconds(p)) j["startupSeconds"] = *startup;
    }
    parties[party] = std::move(j);
  }
  out["parties"] = std::move(parties);
  if (s.failure) out["failure"] = failure::toJson(*s.failure);
  if (s.stuck) {
    json stuck = failure::toJson(*s.stuck);
    if (s.stuck->since != 0) stuck["seconds"] = detail::seconds(s.stuck->since, nowNanos);
    out["stuck"] = std::move(stuck);
  }
  if (!s.complete) {
    json list = json::array();
    for (const Phase& p : s.pending)
      list.push_back(toJson(p, nowNanos));
    out["pending"] = std::move(list);
    if (s.blame) out["blame"] = toJson(*s.blame, nowNanos);
    return out;
  }
  out["allReadyTime"] = sdk::formatTime(*s.allReadyTime, sdk::TimePrecision::kAsGiven);
  if (auto startup = s.startupSeconds()) out["startupSeconds"] = *startup;
  out["lastParty"] = s.lastParty;
  json list = json::array();
  for (const Phase& p : s.criticalPath)
    list.push_back(toJson(p));
  out["criticalPath"] = std::move(list);
  if (s.blame) out["blame"] = toJson(*s.blame);
  return out;
}

// The summary of a timeline document ({"createTime", "entries"}, and what its status says:
// "phase", "completionTime", "evidence"); `nowNanos` dates the pending phases of an incomplete
// task.
inline nlohmann::json summarize(const nlohmann::json& doc, int64_t nowNanos,
                                int64_t stuckAfterNanos = kStuckAfterNanos) {
  std::optional<int64_t> taskCreate;
  if (doc.contains("createTime") && doc["createTime"].is_string())
    taskCreate = sdk::parseTime(doc["createTime"].get<std::string>());
  std::vector<EntryTimes> entries = partnerEntries(doc);
  if (doc.contains("entries") && doc["entries"].is_object())
    for (const auto& [key, entry] : doc["entries"].items())
      entries.push_back(entryTimes(key, entry));
  return toJson(summarize(taskCreate, entries, nowNanos, TaskEnd::of(doc), stuckAfterNanos),
                nowNanos);
}

} // namespace kuscia_host::model::timeline

#endif // KUSCIA_HOST_TIMELINE_SUMMARY_HPP
