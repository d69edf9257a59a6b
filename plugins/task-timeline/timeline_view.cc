// The timeline documents task-timeline serves on the admin server:
//   GET /api/v1/timelines          {"tasks": {"<task>": {"phase", "createTime", "entries"}},
//                                   "continue": "<token>"}, newest first, `limit` (default 500,
//                                  at most 1000) and `continue` in the query
//   GET /api/v1/timelines/<task>   the document of kuscia_model/timeline.h, with "waiting",
//                                  and its "summary" (kuscia_model/timeline_summary.h)
// Entries come from the task's status (every party's, as written), completed by the pods and
// services this instance knows that are not written yet; "waiting" only for this instance's
// domain. Several instances (centralized mode) answer the same task: the host merges their
// documents key by key (RFC 7386), which is why entries and tasks are objects, not arrays.
#include <kuscia_host/query.hpp>
#include <kuscia_model/timeline.h>
#include <kuscia_model/timeline_summary.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "entry_board.h"
#include "task_timeline.h"
#include "timeline_page.h"
#include <kuscia_model/json_text.h>
#include <kuscia_model/kept_facts.h>
#include <kuscia_model/kuscia.h>
#include <kuscia_model/kuscia_time.h>
#include <kuscia_model/list_key.h>
#include <kuscia_model/status_entries.h>

namespace kuscia_host::plugins::timeline {

using nlohmann::json;

json TaskTimeline::entryTimeline(const std::string& task, const std::string& key, const json& entry,
                                 bool pod, const json& kept) const {
  // Beside the status: what the instances of this host know of their own domain's entries (the
  // first ready, the image pull, the containers' start, why each phase waited, what it waits
  // for now), read from the entry board so that every instance answers alike; under them what
  // was kept on the task, so that the answer stays once the pod and its Events are gone.
  json own = entry.is_object() ? entry : json::object();
  if (const json* k = pod ? model::keptFor(kept, key, own) : nullptr) model::addKeptFacts(own, *k);
  json facts;
  board_.read(key, [&facts](const EntryFacts& f) { facts = f.toJson(); });
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
  // Times the status does not hold yet (deferred, or a write on its way; status_writer.h) are
  // shown as the write will bring them: for the incarnation the entry is of (`ours`), as the
  // writer judges it.
  auto mine = [&](const char* field, const Instant& t, bool ours) {
    if (!t) return;
    if (writer_.contest().yielded(task, group, key, field)) yielded[field] = t.text();
    if (ours && !model::entryHas(&own, field)) own[field] = t.text();
  };
  if (pod) {
    if (auto p = pods_.find(key); p != pods_.end()) {
      const bool ours = model::sameIncarnation(&own, p->second.create.optional());
      mine("createTime", p->second.create, ours);
      mine("startTime", p->second.start, ours);
      mine("readyTime", p->second.ready, ours);
    }
  } else if (auto s = services_.find(key); s != services_.end()) {
    const bool ours = model::sameIncarnation(&own, s->second.create.optional());
    mine("createTime", s->second.create, ours);
    mine("readyTime", s->second.ready, ours);
  }
  json out = model::timeline::entry(key, own, pod);
  if (!yielded.empty()) out["yielded"] = std::move(yielded);
  if (waiting.is_object() && !out["missing"].empty()) {
    int64_t since = waiting.value("since", int64_t{0});
    double seconds = since > 0 ? model::secondsBetween(since, host().wallTimeNanos()) : 0.0;
    waiting["since"] = since > 0 ? json(model::formatTime(since)) : json();
    waiting["seconds"] = std::round(seconds * 1000) / 1000;
    out["waiting"] = std::move(waiting);
  }
  return out;
}

json TaskTimeline::partnersOf(const std::string& task, std::string_view kept,
                              const std::function<bool(std::string_view party)>& holds) const {
  return model::partnerReservations(kept, reservations_.partners(task, holds), holds);
}

std::optional<json> TaskTimeline::timeline(const std::string& task, bool phases,
                                           bool withJob) const {
  // A held task: this domain's entries as held (they hold what was written before its watch
  // event came back), the other parties' as the host's cache has them. Otherwise every entry as
  // the cache has it.
  std::optional<Task> cached;
  ParsedEntries others;
  const Task* t = nullptr;
  if (auto it = tasks_.find(task); it != tasks_.end()) {
    t = &it->second;
    others = cachedOthers(task);
  } else if ((cached = cachedTask(task, true))) {
    t = &*cached;
  }
  const auto& ownPods = pods_.members(task);
  const auto& ownServices = services_.members(task);
  bool known = (t != nullptr && t->exists) || !ownPods.empty() || !ownServices.empty();
  if (!known) return std::nullopt;
  json entries = json::object();
  const json kept = t != nullptr ? model::keptEntries(t->kept) : json::object();
  json doc = {{"task", task}, {"namespace", config_.taskNamespace}};
  if (t != nullptr && t->exists) {
    if (!t->phase.empty()) doc["phase"] = t->phase;
    if (!t->createTime.empty()) doc["createTime"] = t->createTime;
    if (!t->completionTime.empty()) doc["completionTime"] = t->completionTime;
    if (!t->resourceCreated.empty()) doc["resourceCreatedTime"] = t->resourceCreated;
    if (json evidence = model::timeline::taskEvidence(t->reason, t->message, t->localParty);
        !evidence.is_null())
      doc["evidence"] = std::move(evidence);
    if (json outage = routes_->outageFor(t->message, model::parseTime(t->completionTime));
        !outage.is_null())
      doc["routeOutage"] = std::move(outage);
    for (const ParsedEntries& from :
         {ParsedEntries{t->pods.toJson(), t->services.toJson()}, std::move(others)}) {
      for (const auto& [key, entry] : from.podStatuses.items())
        entries[key] = entryTimeline(task, key, entry, true, kept);
      for (const auto& [key, entry] : from.serviceStatuses.items())
        entries[key] = entryTimeline(task, key, entry, false, kept);
    }
  }
  // Objects of this domain whose entries are not written yet (the task is not there, or the
  // write is on its way).
  auto pending = [](const Instant& time) { return time ? json(time.text()) : json(); };
  for (const auto& key : ownPods)
    if (!entries.contains(key)) {
      const Pod& p = pods_.at(key);
      json e = {{"podPhase", *p.phase}};
      for (auto [field, value] :
           {std::pair{"createTime", &p.create}, std::pair{"startTime", &p.start},
            std::pair{"readyTime", &p.ready}})
        if (*value) e[field] = pending(*value);
      entries[key] = entryTimeline(task, key, e, true, kept);
    }
  for (const auto& key : ownServices)
    if (!entries.contains(key)) {
      const Service& s = services_.at(key);
      json e = json::object();
      if (s.create) e["createTime"] = s.create.text();
      if (s.ready) e["readyTime"] = s.ready.text();
      entries[key] = entryTimeline(task, key, e, false, kept);
    }
  // The parties whose pods this cluster does not hold: their reservation (p2p: the stubs), what
  // is kept of it (the stubs go with the group) under what is seen.
  auto holds = [&entries](std::string_view party) {
    return model::timeline::holdsParty(entries, party);
  };
  json partners = partnersOf(task, t != nullptr ? std::string_view(t->kept) : "", holds);
  if (!partners.empty()) doc["partnerReservations"] = std::move(partners);
  doc["entries"] = std::move(entries);
  doc["summary"] = model::timeline::summarize(doc, host().wallTimeNanos(),
                                              config_.stuckAfterSeconds * int64_t{1000000000});
  if (phases) model::timeline::addPhases(doc, host().wallTimeNanos());
  if (withJob)
    if (auto before = jobs_->context(task)) doc["job"] = std::move(*before);
  return doc;
}

namespace {

constexpr std::size_t kDefaultListLimit = 500;
constexpr std::size_t kMaxListLimit = 1000;

// A list's ?limit= (the default without one); `bad` says why one is refused.
template <class Query> std::size_t listLimit(const Query& query, std::string& bad) {
  auto it = query.find("limit");
  if (it == query.end()) return kDefaultListLimit;
  auto n = model::parseListLimit(it->second, kMaxListLimit);
  if (!n) bad = "limit must be an integer from 1 to " + std::to_string(kMaxListLimit);
  return n.value_or(kDefaultListLimit);
}

} // namespace

json TaskTimeline::taskList(std::size_t limit, std::string_view after) const {
  std::optional<model::ListKey> from;
  if (!after.empty()) from = model::ListKey::fromToken(after);
  // The `limit` + 1 first tasks after `from`, in a heap whose top is the last of them: one pass
  // over the cache, reading each task's phase and creation only.
  struct Listed {
    model::ListKey key;
    std::string phase, createTime;
  };
  auto later = [](const Listed& a, const Listed& b) { return a.key.before(b.key); };
  std::vector<Listed> heap;
  host().cacheList(taskSub_, "", [&](const sdk::Object& o) {
    auto lead = model::leadingStrings(o.fieldsJson, 2);
    Listed l{{model::parseTime(lead[kTaskCreate]).value_or(0), std::string(model::nameOf(o.key))},
             std::move(lead[kTaskPhase]),
             std::move(lead[kTaskCreate])};
    if (l.key.created < 0) l.key.created = 0;
    if (from && !from->before(l.key)) return false;
    if (heap.size() > limit && !l.key.before(heap.front().key)) return false;
    heap.push_back(std::move(l));
    std::push_heap(heap.begin(), heap.end(), later);
    if (heap.size() > limit + 1) {
      std::pop_heap(heap.begin(), heap.end(), later);
      heap.pop_back();
    }
    return false;
  });
  std::sort_heap(heap.begin(), heap.end(), later);
  json out = json::object();
  if (heap.size() > limit) {
    heap.pop_back();
    out["continue"] = heap.back().key.token();
  }
  json tasks = json::object();
  for (auto& l : heap) {
    // Only the listed tasks' timing maps are read, to count their entries: scanned, not parsed
    // (text the scanner cannot walk takes the full parser).
    std::size_t entries = 0;
    host().cacheGet(taskSub_, config_.taskNamespace + "/" + l.key.name,
                    [&entries](const sdk::Object& o) {
                      if (auto spans = model::arrayElements(o.fieldsJson);
                          spans && spans->size() == kTaskFieldCount) {
                        auto pods = model::countEntries((*spans)[kTaskPods]);
                        auto services = model::countEntries((*spans)[kTaskServices]);
                        if (pods && services) {
                          entries = *pods + *services;
                          return;
                        }
                      }
                      Task t = taskFrom(o.fieldsJson);
                      entries = t.pods.size() + t.services.size();
                    });
    tasks[l.key.name] = {{"phase", std::move(l.phase)},
                         {"createTime", std::move(l.createTime)},
                         {"entries", entries}};
  }
  out["tasks"] = std::move(tasks);
  return out;
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
  if (constexpr std::string_view kJobs = "/api/v1/jobs"; request.path.rfind(kJobs, 0) == 0)
    return serveJob(request.path.substr(kJobs.size()), request.query, response);
  constexpr std::string_view kPrefix = "/api/v1/timelines";
  std::string_view rest = request.path.substr(std::min(request.path.size(), kPrefix.size()));
  response.contentType = "application/json";
  if (rest.empty() || rest == "/") {
    const auto query = sdk::parseQuery(request.query);
    std::string bad;
    const std::size_t limit = listLimit(query, bad);
    std::string after;
    if (auto it = query.find("continue"); it != query.end()) {
      after = it->second;
      if (!model::ListKey::fromToken(after)) bad = "continue is not a token this list gave";
    }
    if (!bad.empty()) {
      response.status = 400;
      response.body = json{{"message", bad}}.dump();
      return;
    }
    response.status = 200;
    response.body = taskList(limit, after).dump();
    return;
  }
  std::string task(rest.substr(1));
  if (!model::isDnsSubdomain(task)) {
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
  response.body = model::dumpJson(*doc);
}

void TaskTimeline::serveJob(std::string_view rest, std::string_view query,
                            sdk::HttpResponse& response) const {
  response.contentType = "application/json";
  if (rest.empty() || rest == "/") {
    std::string bad;
    const std::size_t limit = listLimit(sdk::parseQuery(query), bad);
    if (!bad.empty()) {
      response.status = 400;
      response.body = json{{"message", bad}}.dump();
      return;
    }
    response.status = 200;
    response.body = jobs_->list(limit).dump();
    return;
  }
  const std::string job(rest.substr(1));
  auto doc = model::isDnsSubdomain(job) ? jobTimeline(job) : std::nullopt;
  if (!doc) {
    response.status = 404;
    response.body = json{{"message", "unknown job " + job}}.dump();
    return;
  }
  response.status = 200;
  response.body = model::dumpJson(*doc);
}

} // namespace kuscia_host::plugins::timeline
