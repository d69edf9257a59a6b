// The task-level answer of a timeline document (header-only; needs nlohmann/json): how long the
// task took to start, which party finished last, the critical path that set the moment the last
// entry was ready, and the one phase to blame. task-timeline puts it in every document it serves,
// `kuscia-host timeline` prints it, and the web page draws it: one function, one answer.
//
//   "summary": {"complete": bool, "createTime", "allReadyTime", "startupSeconds",
//               "parties": {"<party>": {"entries", "readyEntries", "readyTime", "startupSeconds"}},
//               "lastParty", "criticalPath": [phase, ...], "blame": phase,
//               "pending": [phase, ...]}
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
//                (-> containersStartTime), readiness (-> ready);
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
//     moment only and goes on through the pod's phases. Otherwise the path is the entry's phases,
//     then its creating phase.
//  5. blame is the longest phase on the path (the earliest of equals). An incomplete task has no
//     path: each entry not ready yet has a pending phase, from the last time it reached to now,
//     longest first, and blame is the longest of them (marked "ongoing").
// Phases keep the reason they waited for when the document's entry has it
// ("reasons": {"<phase>": {"reason", "message"}}). Negative seconds (clocks that disagree) are
// kept as they are and never blamed over a positive phase.
#ifndef KUSCIA_HOST_TIMELINE_SUMMARY_HPP
#define KUSCIA_HOST_TIMELINE_SUMMARY_HPP

#include <kuscia_host/kube_text.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kuscia_host::sdk::timeline {

// One phase of an entry's startup: [from, to] (to absent while it lasts).
struct Phase {
  std::string entry;
  std::string party;
  std::string phase;
  int64_t from = 0;
  std::optional<int64_t> to;
  std::string reason;
  std::string message;
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

// Every phase a critical path may hold, in the order of a startup.
inline constexpr const char* kPhaseNames[] = {"creating", "scheduling", "accepting",  "pulling",
                                              "starting", "readiness",  "programming"};

namespace detail {

inline std::optional<int64_t> timeOf(const nlohmann::json& entry, const char* field) {
  if (!entry.is_object() || !entry.contains("times") || !entry["times"].is_object()) return {};
  const auto& times = entry["times"];
  auto it = times.find(field);
  if (it == times.end() || !it->is_string()) return {};
  return parseTime(it->get<std::string>());
}

// obj[key] when it is a string, else "" (documents from elsewhere may hold anything).
inline std::string text(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

inline bool isPod(const nlohmann::json& entry) {
  return text(entry, "kind") == "pod";
}

inline std::string partyOf(std::string_view key) {
  auto slash = key.find('/');
  return std::string(slash == std::string_view::npos ? std::string_view() : key.substr(0, slash));
}

inline double seconds(int64_t from, int64_t to) {
  return std::round(static_cast<double>(to - from) / 1e6) / 1e3;
}

inline void withReason(Phase& p, const nlohmann::json& entry) {
  if (!entry.is_object() || !entry.contains("reasons") || !entry["reasons"].is_object()) return;
  const auto& reasons = entry["reasons"];
  auto it = reasons.find(p.phase);
  if (it == reasons.end() || !it->is_object()) return;
  p.reason = text(*it, "reason");
  p.message = text(*it, "message");
}

inline nlohmann::json toJson(const Phase& p, std::optional<int64_t> now = {}) {
  nlohmann::json j = {{"entry", p.entry},
                      {"party", p.party},
                      {"phase", p.phase},
                      {"from", formatTime(p.from, TimePrecision::kAsGiven)}};
  if (p.to) {
    j["to"] = formatTime(*p.to, TimePrecision::kAsGiven);
    j["seconds"] = seconds(p.from, *p.to);
  } else {
    j["ongoing"] = true;
    if (now) j["seconds"] = seconds(p.from, *now);
  }
  if (!p.reason.empty()) j["reason"] = p.reason;
  if (!p.message.empty()) j["message"] = p.message;
  return j;
}

} // namespace detail

// The time an entry's startup ended: its first ready (pods), its ready-time (services).
inline std::optional<int64_t> readyOf(const nlohmann::json& entry) {
  if (detail::isPod(entry))
    if (auto t = detail::timeOf(entry, "firstReadyTime")) return t;
  return detail::timeOf(entry, "readyTime");
}

// The phases an entry completed (step 2 above), earliest first, and the one it is in when it is
// not ready yet (its `to` absent).
inline std::vector<Phase> phasesOf(std::string_view key, const nlohmann::json& entry) {
  std::vector<Phase> out;
  auto create = detail::timeOf(entry, "createTime");
  if (!create) return out;
  auto ready = readyOf(entry);
  Phase base;
  base.entry = std::string(key);
  base.party = detail::partyOf(key);
  int64_t from = *create;
  auto add = [&](const char* phase, std::optional<int64_t> to) {
    Phase p = base;
    p.phase = phase;
    p.from = from;
    p.to = to;
    detail::withReason(p, entry);
    out.push_back(std::move(p));
    if (to) from = *to;
  };
  if (!detail::isPod(entry)) {
    add("programming", ready);
    return out;
  }
  for (const PhaseEnd& pe : kPodPhases) {
    std::string_view phase = pe.phase;
    auto end = phase == "readiness" ? ready : detail::timeOf(entry, pe.time);
    if (phase == "pulling" && !detail::timeOf(entry, "imagePullStartTime")) end.reset();
    if (phase != "readiness" && end && ready && *end > *ready) end.reset();
    if (end || phase == "readiness") add(pe.phase, end);
  }
  if (!ready) {
    // Not ready yet: the pending phase is the one after the last time it reached.
    Phase pending = out.back();
    out.pop_back();
    auto hasReason = [&entry](const char* phase) {
      return entry.contains("reasons") && entry["reasons"].is_object() &&
             entry["reasons"].contains(phase);
    };
    bool scheduled = detail::timeOf(entry, "scheduleTime") ||
                     (entry.contains("waiting") && entry["waiting"].is_object() &&
                      detail::text(entry["waiting"], "phase") == "starting");
    if (!detail::timeOf(entry, "startTime"))
      pending.phase = scheduled ? "accepting" : "scheduling";
    else if (!detail::timeOf(entry, "imagePullEndTime") &&
             (detail::timeOf(entry, "imagePullStartTime") || hasReason("pulling")))
      pending.phase = "pulling"; // a Pulling Event, or a pull failure, and no Pulled yet
    else if (!detail::timeOf(entry, "containersStartTime"))
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

// The summary of a timeline document ({"createTime", "entries"}); `nowNanos` dates the pending
// phases of an incomplete task.
inline nlohmann::json summarize(const nlohmann::json& doc, int64_t nowNanos) {
  using detail::toJson;
  using nlohmann::json;
  json out = {{"complete", false}};
  std::optional<int64_t> taskCreate;
  if (doc.contains("createTime") && doc["createTime"].is_string())
    taskCreate = parseTime(doc["createTime"].get<std::string>());
  if (taskCreate) out["createTime"] = formatTime(*taskCreate, TimePrecision::kAsGiven);
  const json empty = json::object();
  const json& entries =
      doc.contains("entries") && doc["entries"].is_object() ? doc["entries"] : empty;

  struct Seen {
    int entries = 0, ready = 0;
    std::optional<int64_t> last;
  };
  std::map<std::string, Seen> parties;
  std::string lastKey;
  std::optional<int64_t> allReady;
  bool complete = !entries.empty();
  // Step 3: the last-ready entry and its tie-breaks.
  auto later = [&](const std::string& key, int64_t ready) {
    if (!allReady) return true;
    int64_t a = ready / 1000000000, b = *allReady / 1000000000;
    if (a != b) return a > b;
    const json& other = entries[lastKey];
    auto c1 = detail::timeOf(entries[key], "createTime");
    auto c2 = detail::timeOf(other, "createTime");
    if (c1 != c2) return c1 && (!c2 || *c1 < *c2);
    if (detail::isPod(entries[key]) != detail::isPod(other)) return detail::isPod(entries[key]);
    return key < lastKey;
  };
  for (const auto& [key, entry] : entries.items()) {
    Seen& s = parties[detail::partyOf(key)];
    ++s.entries;
    auto ready = readyOf(entry);
    if (!ready) {
      complete = false;
      continue;
    }
    ++s.ready;
    if (!s.last || *ready > *s.last) s.last = ready;
    if (later(key, *ready)) {
      lastKey = key;
      allReady = ready;
    }
  }
  json partiesOut = json::object();
  for (const auto& [party, s] : parties) {
    json p = {{"entries", s.entries}, {"readyEntries", s.ready}};
    if (s.ready == s.entries && s.last) {
      p["readyTime"] = formatTime(*s.last, TimePrecision::kAsGiven);
      if (taskCreate) p["startupSeconds"] = detail::seconds(*taskCreate, *s.last);
    }
    partiesOut[party] = std::move(p);
  }
  out["parties"] = std::move(partiesOut);

  auto longest = [](const std::vector<Phase>& phases, int64_t now) -> const Phase* {
    const Phase* best = nullptr;
    int64_t bestLength = 0;
    for (const Phase& p : phases) {
      int64_t length = p.to.value_or(now) - p.from;
      if (best == nullptr || length > bestLength) {
        best = &p;
        bestLength = length;
      }
    }
    return best;
  };

  if (!complete) {
    std::vector<Phase> pending;
    for (const auto& [key, entry] : entries.items())
      if (!readyOf(entry)) {
        auto phases = phasesOf(key, entry);
        if (!phases.empty()) pending.push_back(phases.back());
      }
    std::stable_sort(pending.begin(), pending.end(), [&](const Phase& a, const Phase& b) {
      return nowNanos - a.from > nowNanos - b.from;
    });
    json list = json::array();
    for (const Phase& p : pending)
      list.push_back(toJson(p, nowNanos));
    out["pending"] = std::move(list);
    if (const Phase* b = longest(pending, nowNanos)) out["blame"] = toJson(*b, nowNanos);
    return out;
  }

  // Step 4: the walk back from the last-ready entry.
  std::vector<Phase> path; // latest first
  std::string key = lastKey;
  int64_t end = *allReady;
  const json* entry = &entries[key];
  if (!detail::isPod(*entry)) {
    std::string ns = detail::partyOf(key);
    std::string name = key.substr(ns.size() + 1);
    std::string pod;
    for (const auto& [other, e] : entries.items()) {
      std::string podName = other.substr(std::min(other.size(), ns.size() + 1));
      if (!detail::isPod(e) || detail::partyOf(other) != ns || podName.size() <= pod.size() ||
          name.rfind(podName + "-", 0) != 0)
        continue;
      pod = podName;
    }
    auto create = detail::timeOf(*entry, "createTime");
    if (!pod.empty() && create) {
      std::string podKey = ns + "/" + pod;
      auto podReady = readyOf(entries[podKey]);
      if (podReady && *podReady > *create && *podReady <= end) {
        Phase p = phasesOf(key, *entry).front();
        p.from = *podReady;
        path.push_back(std::move(p));
        key = podKey;
        end = *podReady;
        entry = &entries[key];
      }
    }
  }
  auto phases = phasesOf(key, *entry);
  for (auto it = phases.rbegin(); it != phases.rend(); ++it)
    path.push_back(*it);
  if (auto create = detail::timeOf(*entry, "createTime"); create && taskCreate) {
    Phase p;
    p.entry = key;
    p.party = detail::partyOf(key);
    p.phase = "creating";
    p.from = *taskCreate;
    p.to = *create;
    path.push_back(std::move(p));
  }
  std::reverse(path.begin(), path.end());

  out["complete"] = true;
  out["allReadyTime"] = formatTime(*allReady, TimePrecision::kAsGiven);
  if (taskCreate) out["startupSeconds"] = detail::seconds(*taskCreate, *allReady);
  out["lastParty"] = detail::partyOf(lastKey);
  json list = json::array();
  for (const Phase& p : path)
    list.push_back(toJson(p));
  out["criticalPath"] = std::move(list);
  if (const Phase* b = longest(path, *allReady)) out["blame"] = toJson(*b);
  return out;
}

} // namespace kuscia_host::sdk::timeline

#endif // KUSCIA_HOST_TIMELINE_SUMMARY_HPP
