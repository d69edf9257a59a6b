// The timeline documents task-timeline serves on the admin server:
//   GET /api/v1/timelines          {"tasks": {"<task>": {"phase", "createTime", "entries"}}}
//   GET /api/v1/timelines/<task>   {"task", "namespace", "phase", "createTime", "entries": {
//       "<ns>/<name>": {"kind": "pod"|"service", "namespace", "name", "times": {...},
//                       "durations": {"createToStart": s, ...}, "missing": [...],
//                       "negative": [...], "waiting": {"phase", "reason", "message", "since",
//                       "seconds"}}}}
// Entries come from the task's status (every party's, as written), completed by the pods and
// services this instance knows that are not written yet; "waiting" only for this instance's
// domain. Several instances (centralized mode) answer the same task: the host merges their
// documents key by key (RFC 7386), which is why entries and tasks are objects, not arrays.
#include <cmath>
#include <vector>

#include "kuscia.h"
#include "kuscia_time.h"
#include "task_timeline.h"

namespace kuscia_host::plugins::timeline {

using nlohmann::json;

namespace {

// The durations between phases, in seconds, each when both ends are known.
struct Span {
  const char* name;
  const char* from;
  const char* to;
};
constexpr Span kPodSpans[] = {{"createToSchedule", "createTime", "scheduleTime"},
                              {"scheduleToStart", "scheduleTime", "startTime"},
                              {"createToStart", "createTime", "startTime"},
                              {"startToReady", "startTime", "readyTime"},
                              {"createToReady", "createTime", "readyTime"}};
constexpr Span kServiceSpans[] = {{"createToReady", "createTime", "readyTime"}};

json timeOf(const json& entry, const char* field) {
  if (!entry.is_object() || !entry.contains(field) || !entry[field].is_string()) return nullptr;
  auto t = normalizeTime(entry[field].get<std::string>());
  return t ? json(*t) : json(nullptr);
}

} // namespace

json TaskTimeline::entryTimeline(const std::string& key, const json& entry, bool pod) const {
  json out = {{"kind", pod ? "pod" : "service"},
              {"namespace", std::string(namespaceOf(key))},
              {"name", std::string(nameOf(key))}};
  json times = json::object();
  json missing = json::array();
  static const std::vector<const char*> kPodTimes = {"createTime", "scheduleTime", "startTime",
                                                     "readyTime"};
  static const std::vector<const char*> kServiceTimes = {"createTime", "readyTime"};
  for (const char* f : pod ? kPodTimes : kServiceTimes) {
    json t = timeOf(entry, f);
    if (t.is_null()) {
      if (std::string_view(f) != "scheduleTime") missing.push_back(f); // only with the plugin
    } else {
      times[f] = std::move(t);
    }
  }
  json durations = json::object();
  json negative = json::array();
  const Span* spans = pod ? kPodSpans : kServiceSpans;
  std::size_t n = pod ? std::size(kPodSpans) : std::size(kServiceSpans);
  for (std::size_t i = 0; i < n; ++i) {
    if (!times.contains(spans[i].from) || !times.contains(spans[i].to)) continue;
    auto from = parseTime(times[spans[i].from].get<std::string>());
    auto to = parseTime(times[spans[i].to].get<std::string>());
    double s = secondsBetween(*from, *to);
    durations[spans[i].name] = s;
    if (s < 0) negative.push_back(spans[i].name);
  }
  out["times"] = std::move(times);
  out["durations"] = std::move(durations);
  out["missing"] = std::move(missing);
  out["negative"] = std::move(negative);
  if (pod && entry.is_object() && entry.contains("podPhase")) out["podPhase"] = entry["podPhase"];
  // Why it waits: known only to the instance of the entry's domain.
  std::optional<Waiting> w;
  if (pod) {
    if (auto p = pods_.find(key); p != pods_.end()) w = p->second.waiting;
  } else if (auto s = services_.find(key); s != services_.end()) {
    w = serviceWaiting(s->second);
  }
  if (w && !out["missing"].empty()) {
    double seconds =
        w->sinceNanos > 0 ? secondsBetween(w->sinceNanos, host().wallTimeNanos()) : 0.0;
    out["waiting"] = {{"phase", w->phase},
                      {"reason", w->reason},
                      {"message", w->message},
                      {"since", w->sinceNanos > 0 ? json(formatTime(w->sinceNanos)) : json()},
                      {"seconds", std::round(seconds * 1000) / 1000}};
  }
  return out;
}

std::optional<json> TaskTimeline::timeline(const std::string& task) const {
  auto t = tasks_.find(task);
  auto ownPods = taskPods_.find(task);
  auto ownServices = taskServices_.find(task);
  bool known = (t != tasks_.end() && t->second.exists) ||
               (ownPods != taskPods_.end() && !ownPods->second.empty()) ||
               (ownServices != taskServices_.end() && !ownServices->second.empty());
  if (!known) return std::nullopt;
  json entries = json::object();
  json doc = {{"task", task}, {"namespace", config_.taskNamespace}};
  if (t != tasks_.end() && t->second.exists) {
    if (!t->second.phase.empty()) doc["phase"] = t->second.phase;
    if (!t->second.createTime.empty()) doc["createTime"] = t->second.createTime;
    for (const auto& [key, entry] : t->second.podStatuses.items())
      entries[key] = entryTimeline(key, entry, true);
    for (const auto& [key, entry] : t->second.serviceStatuses.items())
      entries[key] = entryTimeline(key, entry, false);
  }
  // Objects of this domain whose entries are not written yet (the task is not there, or the
  // write is on its way).
  auto pending = [](const std::optional<Time>& time) { return time ? json(time->text) : json(); };
  if (ownPods != taskPods_.end())
    for (const auto& key : ownPods->second)
      if (!entries.contains(key)) {
        const Pod& p = pods_.at(key);
        json e = {{"podPhase", p.phase}};
        for (auto [field, value] :
             {std::pair{"createTime", &p.create}, std::pair{"startTime", &p.start},
              std::pair{"readyTime", &p.ready}})
          if (*value) e[field] = pending(*value);
        entries[key] = entryTimeline(key, e, true);
      }
  if (ownServices != taskServices_.end())
    for (const auto& key : ownServices->second)
      if (!entries.contains(key)) {
        const Service& s = services_.at(key);
        json e = json::object();
        if (s.create) e["createTime"] = s.create->text;
        if (s.ready) e["readyTime"] = s.ready->text;
        entries[key] = entryTimeline(key, e, false);
      }
  doc["entries"] = std::move(entries);
  return doc;
}

json TaskTimeline::taskList() const {
  json tasks = json::object();
  for (const auto& [name, t] : tasks_) {
    if (!t.exists) continue;
    tasks[name] = {{"phase", t.phase},
                   {"createTime", t.createTime},
                   {"entries", t.podStatuses.size() + t.serviceStatuses.size()}};
  }
  return {{"tasks", std::move(tasks)}};
}

void TaskTimeline::onHttpRequest(const sdk::HttpRequest& request, sdk::HttpResponse& response) {
  constexpr std::string_view kPrefix = "/api/v1/timelines";
  std::string_view rest = request.path.substr(std::min(request.path.size(), kPrefix.size()));
  response.contentType = "application/json";
  if (rest.empty() || rest == "/") {
    response.status = 200;
    response.body = taskList().dump();
    return;
  }
  std::string task(rest.substr(1));
  if (!isDnsSubdomain(task)) {
    response.status = 404;
    response.body = json{{"message", "not a task name: " + task}}.dump();
    return;
  }
  auto doc = timeline(task);
  if (!doc) {
    response.status = 404;
    response.body = json{{"message", "unknown task " + task}}.dump();
    return;
  }
  response.status = 200;
  response.body = doc->dump();
}

} // namespace kuscia_host::plugins::timeline
