// The timeline document of a KusciaTask (header-only; needs nlohmann/json): what task-timeline
// serves at /api/v1/timelines/<task>, what `kuscia-host timeline -o json` prints, and what the
// timeline web page draws. Built from the task's status (podStatuses, serviceStatuses), so any
// tool that reads KusciaTasks can produce it.
//
//   {"task", "namespace", "phase", "createTime",
//    "entries": {"<ns>/<name>": {"kind": "pod"|"service", "namespace", "name", "podPhase",
//                                "times": {"createTime", "scheduleTime", "startTime", "readyTime",
//                                          "firstReadyTime", "imagePullStartTime",
//                                          "imagePullEndTime", "containersStartTime"},
//                                "durations": {"createToStart": seconds, ...},
//                                "missing": ["readyTime", ...], "negative": ["createToStart"],
//                                "waiting": {"phase", "reason", "message", "since", "seconds"},
//                                "evidence": {"reason", "message", "terminationLog"}}},
//    "completionTime", "evidence": {"reason", "message"}}
//
// readyTime is the latest Ready=True (what the status holds, as Kuscia's controller writes it);
// firstReadyTime, when the source knows it (task-timeline does for its own domain's pods), is the
// first Ready=True of the pod's incarnation, and the "...ToReady" durations start the startup
// from it: a readiness flap after startup does not lengthen the startup.
//
// imagePullStartTime (the first Pulling Event), imagePullEndTime (the last Pulled Event) and
// containersStartTime (every container running) come from the pod and its Events, never from
// the status (Kuscia's CRD has no such fields); "reasons" ({"<phase>": {"reason", "message"}})
// keeps why each phase of the critical path waited (timeline_summary.h).
//
// "evidence" is what the status says of why a pod waits or ended (Kuscia's task controller copies
// the pod's reason, message and terminationLog into podStatuses, and keeps them after it deletes
// the pod), and at the top what it says of the task (its reason and message); each text an
// excerpt (failure.h). With completionTime, they are what summary.failure and summary.stuck are
// classified from (timeline_summary.h).
//
// Entries are an object keyed like the status maps, so that documents of several sources (the
// instances of several domains) merge key by key.
#ifndef KUSCIA_HOST_TIMELINE_HPP
#define KUSCIA_HOST_TIMELINE_HPP

#include <kuscia_host/kube_text.hpp>
#include <kuscia_model/failure.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace kuscia_host::model::timeline {

// A duration between two times of an entry.
struct Span {
  const char* name;
  const char* from;
  const char* to;
};
inline constexpr Span kPodSpans[] = {{"createToSchedule", "createTime", "scheduleTime"},
                                     {"scheduleToStart", "scheduleTime", "startTime"},
                                     {"createToStart", "createTime", "startTime"},
                                     {"startToReady", "startTime", "readyTime"},
                                     {"createToReady", "createTime", "readyTime"}};
inline constexpr Span kImagePullSpan = {"imagePull", "imagePullStartTime", "imagePullEndTime"};
inline constexpr Span kServiceSpans[] = {{"createToReady", "createTime", "readyTime"}};
// The times of an entry, in phase order. scheduleTime exists only with scheduler-time, so its
// absence is never "missing".
inline constexpr const char* kPodTimes[] = {"createTime", "scheduleTime", "startTime", "readyTime"};
inline constexpr const char* kServiceTimes[] = {"createTime", "readyTime"};
// What a status entry says of why its pod waits or ended, in name order: an entry's "evidence".
inline constexpr const char* kEvidenceFields[] = {"message", "reason", "terminationLog"};

namespace detail {
// What entry() reads and derives of a status entry, before it is laid out: as a DOM (entry()),
// or as text by a source that writes the document's text itself.
struct EntryParts {
  // the instants read, in the order read (at most every EntryTimes field: 11)
  std::pair<const char*, int64_t> times[11];
  std::size_t nTimes = 0;
  std::pair<const char*, double> durations[std::size(kPodSpans) + 1]; // in span order
  std::size_t nDurations = 0;
  const char* missing[std::size(kPodTimes)];
  std::size_t nMissing = 0;
  const char* negative[std::size(kPodSpans) + 1];
  std::size_t nNegative = 0;
  const nlohmann::json* podPhase = nullptr; // pods only
  const nlohmann::json* reasons = nullptr;  // an object, or null
  // The status's reason, message and terminationLog (kEvidenceFields), each null when absent.
  const nlohmann::json* evidence[3] = {nullptr, nullptr, nullptr};

  std::optional<int64_t> instant(std::string_view field) const {
    for (std::size_t i = 0; i < nTimes; ++i)
      if (times[i].first == field) return times[i].second;
    return std::nullopt;
  }
};

// The times, durations, missing and negative of an entry, from `timeOf(field)`: the instant of
// each time field the entry holds as a time (nullopt for one it lacks or holds as anything else).
// What entryParts() derives from a DOM; a source that reads an entry's text itself derives the
// same from its times.
template <class TimeOf> EntryParts entryTimeParts(bool pod, const TimeOf& timeOf) {
  EntryParts p;
  auto read = [&](const char* field) {
    std::optional<int64_t> t = timeOf(field);
    if (!t) return false;
    p.times[p.nTimes++] = {field, *t};
    return true;
  };
  auto collect = [&](const char* field) {
    if (!read(field) && std::string_view(field) != "scheduleTime") p.missing[p.nMissing++] = field;
  };
  if (pod) {
    for (const char* f : kPodTimes)
      collect(f);
    // Times only some sources know: never "missing". The last three are the party's
    // reservation (its TaskResource), where Kuscia reserves.
    for (const char* field :
         {"firstReadyTime", "imagePullStartTime", "imagePullEndTime", "containersStartTime",
          "reservingTime", "reservedTime", "schedulableTime"})
      read(field);
  } else
    for (const char* f : kServiceTimes)
      collect(f);
  const bool firstReady = p.instant("firstReadyTime").has_value();
  auto span = [&](const Span& s) {
    const char* toField =
        firstReady && std::string_view(s.to) == "readyTime" ? "firstReadyTime" : s.to;
    auto from = p.instant(s.from);
    auto to = from ? p.instant(toField) : std::nullopt;
    if (!from || !to) return;
    double seconds = static_cast<double>(sdk::elapsed(*from, *to)) / 1e9;
    p.durations[p.nDurations++] = {s.name, seconds};
    if (seconds < 0) p.negative[p.nNegative++] = s.name;
  };
  if (pod) {
    for (const Span& s : kPodSpans)
      span(s);
    span(kImagePullSpan);
  } else
    for (const Span& s : kServiceSpans)
      span(s);
  return p;
}

inline EntryParts entryParts(const nlohmann::json& status, bool pod) {
  using nlohmann::json;
  // A member of the status, or null.
  auto member = [&status](const char* field) -> const json* {
    if (!status.is_object()) return nullptr;
    auto it = status.find(field);
    return it == status.end() ? nullptr : &*it;
  };
  EntryParts p = entryTimeParts(pod, [&member](const char* field) -> std::optional<int64_t> {
    const json* v = member(field);
    return v != nullptr && v->is_string() ? sdk::parseTime(v->get_ref<const std::string&>())
                                          : std::nullopt;
  });
  if (pod) p.podPhase = member("podPhase");
  if (const json* reasons = member("reasons"); reasons != nullptr && reasons->is_object())
    p.reasons = reasons;
  for (std::size_t i = 0; i < std::size(kEvidenceFields); ++i)
    if (const json* v = member(kEvidenceFields[i]);
        v != nullptr && v->is_string() && !v->get_ref<const std::string&>().empty())
      p.evidence[i] = v;
  return p;
}

// {"<field>": excerpt, ...} of the texts given (null: absent), in the order of `names`; null
// when none is given.
template <std::size_t N>
nlohmann::json evidenceOf(const char* const (&names)[N], const nlohmann::json* const (&texts)[N]) {
  nlohmann::json out;
  for (std::size_t i = 0; i < N; ++i)
    if (texts[i] != nullptr && texts[i]->is_string())
      out[names[i]] = failure::excerpt(texts[i]->template get_ref<const std::string&>());
  return out;
}
} // namespace detail

// The timeline of one status entry (a PodStatus or ServiceStatus as the task holds it).
inline nlohmann::json entry(std::string_view key, const nlohmann::json& status, bool pod) {
  using nlohmann::json;
  const detail::EntryParts p = detail::entryParts(status, pod);
  auto slash = key.find('/');
  // Built member by member into the objects' maps: an initializer list copies every pair.
  json out(json::value_t::object);
  auto& members = out.get_ref<json::object_t&>();
  members.emplace("kind", pod ? "pod" : "service");
  members.emplace("namespace", std::string(key.substr(0, slash == key.npos ? 0 : slash)));
  members.emplace("name", std::string(key.substr(slash == key.npos ? 0 : slash + 1)));
  json times(json::value_t::object);
  for (std::size_t i = 0; i < p.nTimes; ++i) // normalizeTime(), each parsed once
    times.get_ref<json::object_t&>().emplace(
        p.times[i].first, sdk::formatTime(p.times[i].second, sdk::TimePrecision::kAsGiven));
  json durations(json::value_t::object);
  for (std::size_t i = 0; i < p.nDurations; ++i)
    durations.get_ref<json::object_t&>().emplace(p.durations[i].first, p.durations[i].second);
  json missing(json::value_t::array);
  for (std::size_t i = 0; i < p.nMissing; ++i)
    missing.push_back(p.missing[i]);
  json negative(json::value_t::array);
  for (std::size_t i = 0; i < p.nNegative; ++i)
    negative.push_back(p.negative[i]);
  if (p.podPhase != nullptr) members.emplace("podPhase", *p.podPhase);
  members.emplace("times", std::move(times));
  members.emplace("durations", std::move(durations));
  if (json evidence = detail::evidenceOf(kEvidenceFields, p.evidence); !evidence.is_null())
    members.emplace("evidence", std::move(evidence));
  members.emplace("missing", std::move(missing));
  members.emplace("negative", std::move(negative));
  if (p.reasons != nullptr) members.emplace("reasons", *p.reasons);
  return out;
}

// The parts of a task a document is built from; null when the task has none.
struct TaskParts {
  std::string_view name, namespaceName;
  const nlohmann::json* phase = nullptr;
  const nlohmann::json* creationTimestamp = nullptr;
  const nlohmann::json* podStatuses = nullptr;     // entries only when an object
  const nlohmann::json* serviceStatuses = nullptr; // likewise
  // The task's own status: when it ended, and why (each null when absent).
  const nlohmann::json* completionTime = nullptr;
  const nlohmann::json* reason = nullptr;
  const nlohmann::json* message = nullptr;
  const nlohmann::json* conditions = nullptr; // its status's, for ResourceCreated
  // The partners' reservations this domain knows of (an object, "partnerReservations" of
  // timeline_summary.h), or null.
  const nlohmann::json* partnerReservations = nullptr;
  const nlohmann::json* allocatedPorts = nullptr; // its status's, for localParty()
  // The outage of the route its pre-check failed on (an object, "routeOutage" of
  // route_outage.h), or null.
  const nlohmann::json* routeOutage = nullptr;
};

// The lastTransitionTime of a task status's ResourceCreated=True condition ("" when none): when
// the task controller had allocated the ports, passed the pre-checks and created the objects.
inline std::string resourceCreatedTime(const nlohmann::json* conditions) {
  if (conditions == nullptr || !conditions->is_array()) return {};
  for (const auto& c : *conditions)
    if (c.is_object() && c.value("type", "") == "ResourceCreated" &&
        c.value("status", "") == "True")
      return c.value("lastTransitionTime", "");
  return {};
}

// The task's party whose cluster wrote its status, when the status says so: the one domain its
// status.allocatedPorts lists (Kuscia allocates ports, and runs the pre-checks, for the cluster's
// local parties only: one in p2p; every party in centralized, where none is named). "" else.
inline std::string localParty(const nlohmann::json* allocatedPorts) {
  if (allocatedPorts == nullptr || !allocatedPorts->is_array() || allocatedPorts->size() != 1)
    return {};
  const nlohmann::json& p = (*allocatedPorts)[0];
  auto id = p.is_object() ? p.find("domainID") : p.end();
  return id != p.end() && id->is_string() ? id->get<std::string>() : std::string();
}

// What a task's status says of it at the top of its document: "evidence" ({"message", "reason"},
// excerpts of those given, and "party": its local party, localParty()), null when it says nothing.
inline nlohmann::json taskEvidence(std::string_view reason, std::string_view message,
                                   std::string_view party = {}) {
  nlohmann::json out;
  if (!message.empty()) out["message"] = failure::excerpt(message);
  if (!reason.empty()) out["reason"] = failure::excerpt(reason);
  if (!out.is_null() && !party.empty()) out["party"] = std::string(party);
  return out;
}
// The string a part holds, "" when it is absent or not a string.
inline std::string_view partText(const nlohmann::json* part) {
  return part != nullptr && part->is_string()
             ? std::string_view(part->get_ref<const std::string&>())
             : std::string_view();
}
inline nlohmann::json taskEvidence(const TaskParts& t) {
  return taskEvidence(partText(t.reason), partText(t.message), localParty(t.allocatedPorts));
}

// The document of a task from its parts, read where they are (nothing copied but the entries).
inline nlohmann::json fromParts(const TaskParts& t) {
  using nlohmann::json;
  json doc = {{"task", std::string(t.name)},
              {"namespace", std::string(t.namespaceName)},
              {"entries", json::object()}};
  if (t.phase != nullptr) doc["phase"] = *t.phase;
  if (t.creationTimestamp != nullptr) doc["createTime"] = *t.creationTimestamp;
  if (t.completionTime != nullptr && t.completionTime->is_string())
    doc["completionTime"] = *t.completionTime;
  if (std::string created = resourceCreatedTime(t.conditions); !created.empty())
    doc["resourceCreatedTime"] = std::move(created);
  if (json evidence = taskEvidence(t); !evidence.is_null()) doc["evidence"] = std::move(evidence);
  if (t.partnerReservations != nullptr && t.partnerReservations->is_object() &&
      !t.partnerReservations->empty())
    doc["partnerReservations"] = *t.partnerReservations;
  if (t.routeOutage != nullptr && t.routeOutage->is_object()) doc["routeOutage"] = *t.routeOutage;
  json& entries = doc["entries"];
  for (auto [group, pod] : {std::pair{t.podStatuses, true}, std::pair{t.serviceStatuses, false}})
    if (group != nullptr && group->is_object())
      for (auto it = group->begin(); it != group->end(); ++it)
        entries[it.key()] = entry(it.key(), *it, pod);
  return doc;
}

// The document of a task from its object (metadata, status); entries from every party it holds.
inline nlohmann::json fromTask(const nlohmann::json& task) {
  using nlohmann::json;
  auto member = [](const json* obj, const char* key) -> const json* {
    if (obj == nullptr || !obj->is_object()) return nullptr;
    auto it = obj->find(key);
    return it == obj->end() ? nullptr : &*it;
  };
  const json* meta = member(&task, "metadata");
  const json* status = member(&task, "status");
  auto text = [&](const char* key) {
    const json* v = member(meta, key);
    return v != nullptr && v->is_string() ? std::string_view(v->get_ref<const std::string&>())
                                          : std::string_view();
  };
  return fromParts({text("name"), text("namespace"), member(status, "phase"),
                    member(meta, "creationTimestamp"), member(status, "podStatuses"),
                    member(status, "serviceStatuses"), member(status, "completionTime"),
                    member(status, "reason"), member(status, "message"),
                    member(status, "conditions"), nullptr, member(status, "allocatedPorts")});
}

} // namespace kuscia_host::model::timeline

#endif // KUSCIA_HOST_TIMELINE_HPP
