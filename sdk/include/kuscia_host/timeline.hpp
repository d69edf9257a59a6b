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
//                                "waiting": {"phase", "reason", "message", "since", "seconds"}}}}
//
// readyTime is the latest Ready=True (what the status holds, as Kuscia's controller writes it);
// firstReadyTime, when the source knows it (task-timeline does for its own domain's pods), is the
// first Ready=True of the pod's incarnation, and the "...ToReady" durations start the startup
// from it: a readiness flap after startup does not lengthen the startup.
//
// imagePullStartTime (the first Pulling Event), imagePullEndTime (the last Pulled Event) and
// containersStartTime (every container running) come from the pod and its Events, never from
// the status (Kuscia's CRD has no such fields); "reasons" ({"<phase>": {"reason", "message"}})
// keeps why each phase of the critical path waited (timeline_summary.hpp).
//
// Entries are an object keyed like the status maps, so that documents of several sources (the
// instances of several domains) merge key by key.
#ifndef KUSCIA_HOST_TIMELINE_HPP
#define KUSCIA_HOST_TIMELINE_HPP

#include <kuscia_host/kube_text.hpp>

#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace kuscia_host::sdk::timeline {

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

// The timeline of one status entry (a PodStatus or ServiceStatus as the task holds it).
inline nlohmann::json entry(std::string_view key, const nlohmann::json& status, bool pod) {
  using nlohmann::json;
  auto slash = key.find('/');
  json out = {{"kind", pod ? "pod" : "service"},
              {"namespace", std::string(key.substr(0, slash == key.npos ? 0 : slash))},
              {"name", std::string(key.substr(slash == key.npos ? 0 : slash + 1))}};
  json times = json::object();
  json missing = json::array();
  auto collect = [&](const char* field) {
    std::optional<std::string> t;
    if (status.is_object() && status.contains(field) && status[field].is_string())
      t = normalizeTime(status[field].get<std::string>());
    if (t)
      times[field] = *t;
    else if (std::string_view(field) != "scheduleTime")
      missing.push_back(field);
  };
  if (pod) {
    for (const char* f : kPodTimes)
      collect(f);
    // Times only some sources know: never "missing".
    for (const char* field :
         {"firstReadyTime", "imagePullStartTime", "imagePullEndTime", "containersStartTime"})
      if (status.is_object() && status.contains(field) && status[field].is_string())
        if (auto t = normalizeTime(status[field].get<std::string>())) times[field] = *t;
  } else
    for (const char* f : kServiceTimes)
      collect(f);
  json durations = json::object();
  json negative = json::array();
  auto span = [&](const Span& s) {
    const char* toField = std::string_view(s.to) == "readyTime" && times.contains("firstReadyTime")
                              ? "firstReadyTime"
                              : s.to;
    if (!times.contains(s.from) || !times.contains(toField)) return;
    int64_t from = *parseTime(times[s.from].get<std::string>());
    int64_t to = *parseTime(times[toField].get<std::string>());
    double seconds = static_cast<double>(to - from) / 1e9;
    durations[s.name] = seconds;
    if (seconds < 0) negative.push_back(s.name);
  };
  if (pod) {
    for (const Span& s : kPodSpans)
      span(s);
    span(kImagePullSpan);
  } else
    for (const Span& s : kServiceSpans)
      span(s);
  if (pod && status.is_object() && status.contains("podPhase"))
    out["podPhase"] = status["podPhase"];
  out["times"] = std::move(times);
  out["durations"] = std::move(durations);
  out["missing"] = std::move(missing);
  out["negative"] = std::move(negative);
  if (status.is_object() && status.contains("reasons") && status["reasons"].is_object())
    out["reasons"] = status["reasons"];
  return out;
}

// The document of a task from its object (metadata, status); entries from every party it holds.
inline nlohmann::json fromTask(const nlohmann::json& task) {
  using nlohmann::json;
  const json& meta = task.value("metadata", json::object());
  const json& status =
      task.contains("status") && task["status"].is_object() ? task["status"] : json::object();
  json doc = {{"task", meta.value("name", "")},
              {"namespace", meta.value("namespace", "")},
              {"entries", json::object()}};
  if (status.contains("phase")) doc["phase"] = status["phase"];
  if (meta.contains("creationTimestamp")) doc["createTime"] = meta["creationTimestamp"];
  if (status.contains("podStatuses") && status["podStatuses"].is_object())
    for (const auto& [key, e] : status["podStatuses"].items())
      doc["entries"][key] = entry(key, e, true);
  if (status.contains("serviceStatuses") && status["serviceStatuses"].is_object())
    for (const auto& [key, e] : status["serviceStatuses"].items())
      doc["entries"][key] = entry(key, e, false);
  return doc;
}

} // namespace kuscia_host::sdk::timeline

#endif // KUSCIA_HOST_TIMELINE_HPP
