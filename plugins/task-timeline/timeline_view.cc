// The timeline documents task-timeline serves on the admin server:
//   GET /api/v1/timelines          {"tasks": {"<task>": {"phase", "createTime", "entries"}}}
//   GET /api/v1/timelines/<task>   the document of kuscia_host/timeline.hpp, with "waiting",
//                                  and its "summary" (kuscia_host/timeline_summary.hpp)
// Entries come from the task's status (every party's, as written), completed by the pods and
// services this instance knows that are not written yet; "waiting" only for this instance's
// domain. Several instances (centralized mode) answer the same task: the host merges their
// documents key by key (RFC 7386), which is why entries and tasks are objects, not arrays.
#include <kuscia_host/timeline.hpp>
#include <kuscia_host/timeline_summary.hpp>

#include <cmath>

#include "entry_board.h"
#include "kuscia.h"
#include "kuscia_time.h"
#include "task_timeline.h"
#include "timeline_page.h"

namespace kuscia_host::plugins::timeline {

using nlohmann::json;

json TaskTimeline::entryTimeline(const std::string& task, const std::string& key, const json& entry,
                                 bool pod) const {
  // Beside the status: what the instances of this host know of their own domain's entries (the
  // first ready, the image pull, the containers' start, why each phase waited, what it waits
  // for now), read from the entry board so that every instance answers alike.
  json own = entry.is_object() ? entry : json::object();
  json facts = EntryBoard::process().get(key);
  json waiting;
  if (facts.is_object())
    for (auto& [field, value] : facts.items()) {
      if (field == "waiting")
        waiting = value;
      else
        own[field] = value;
    }
  // This instance's values of the fields it yielded to another writer.
  json yielded = json::object();
  const char* group = pod ? "podStatuses" : "serviceStatuses";
  auto mine = [&](const char* field, const std::optional<Time>& t) {
    if (t && writer_.contest().yielded(task, group, key, field)) yielded[field] = t->text;
  };
  if (pod) {
    if (auto p = pods_.find(key); p != pods_.end()) {
      mine("createTime", p->second.create);
      mine("startTime", p->second.start);
      mine("readyTime", p->second.ready);
    }
  } else if (auto s = services_.find(key); s != services_.end()) {
    mine("createTime", s->second.create);
    mine("readyTime", s->second.ready);
  }
  json out = sdk::timeline::entry(key, own, pod);
  if (!yielded.empty()) out["yielded"] = std::move(yielded);
  if (waiting.is_object() && !out["missing"].empty()) {
    int64_t since = waiting.value("since", int64_t{0});
    double seconds = since > 0 ? secondsBetween(since, host().wallTimeNanos()) : 0.0;
    waiting["since"] = since > 0 ? json(formatTime(since)) : json();
    waiting["seconds"] = std::round(seconds * 1000) / 1000;
    out["waiting"] = std::move(waiting);
  }
  return out;
}

std::optional<json> TaskTimeline::timeline(const std::string& task, bool phases) const {
  // Held while this instance has objects of it; otherwise as the host's cache has it.
  std::optional<Task> cached;
  const Task* t = nullptr;
  if (auto it = tasks_.find(task); it != tasks_.end())
    t = &it->second;
  else if ((cached = cachedTask(task)))
    t = &*cached;
  const auto& ownPods = pods_.members(task);
  const auto& ownServices = services_.members(task);
  bool known = (t != nullptr && t->exists) || !ownPods.empty() || !ownServices.empty();
  if (!known) return std::nullopt;
  json entries = json::object();
  json doc = {{"task", task}, {"namespace", config_.taskNamespace}};
  if (t != nullptr && t->exists) {
    if (!t->phase.empty()) doc["phase"] = t->phase;
    if (!t->createTime.empty()) doc["createTime"] = t->createTime;
    for (const auto& [key, entry] : t->podStatuses.items())
      entries[key] = entryTimeline(task, key, entry, true);
    for (const auto& [key, entry] : t->serviceStatuses.items())
      entries[key] = entryTimeline(task, key, entry, false);
  }
  // Objects of this domain whose entries are not written yet (the task is not there, or the
  // write is on its way).
  auto pending = [](const std::optional<Time>& time) { return time ? json(time->text) : json(); };
  for (const auto& key : ownPods)
    if (!entries.contains(key)) {
      const Pod& p = pods_.at(key);
      json e = {{"podPhase", p.phase}};
      for (auto [field, value] :
           {std::pair{"createTime", &p.create}, std::pair{"startTime", &p.start},
            std::pair{"readyTime", &p.ready}})
        if (*value) e[field] = pending(*value);
      entries[key] = entryTimeline(task, key, e, true);
    }
  for (const auto& key : ownServices)
    if (!entries.contains(key)) {
      const Service& s = services_.at(key);
      json e = json::object();
      if (s.create) e["createTime"] = s.create->text;
      if (s.ready) e["readyTime"] = s.ready->text;
      entries[key] = entryTimeline(task, key, e, false);
    }
  doc["entries"] = std::move(entries);
  doc["summary"] = sdk::timeline::summarize(doc, host().wallTimeNanos());
  if (phases) sdk::timeline::addPhases(doc, host().wallTimeNanos());
  return doc;
}

json TaskTimeline::taskList() const {
  // Every task the host's cache has (finished ones included), read on demand.
  json tasks = json::object();
  host().cacheList(taskSub_, "", [&tasks](const sdk::Object& o) {
    Task t = taskFrom(o.fieldsJson);
    tasks[std::string(nameOf(o.key))] = {
        {"phase", t.phase},
        {"createTime", t.createTime},
        {"entries", t.podStatuses.size() + t.serviceStatuses.size()}};
    return false;
  });
  return {{"tasks", std::move(tasks)}};
}

void TaskTimeline::onHttpRequest(const sdk::HttpRequest& request, sdk::HttpResponse& response) {
  if (request.path == kPagePrefix || request.path == std::string(kPagePrefix) + "/") {
    response.status = 200;
    response.contentType = "text/html; charset=utf-8";
    response.body = timelinePageHtml();
    return;
  }
  if (request.path.rfind(kPagePrefix, 0) == 0) {
    response.status = 404;
    response.body = json{{"message", "not found: " + std::string(request.path)}}.dump();
    return;
  }
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
