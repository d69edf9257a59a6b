#include "job_watch.h"

#include <kuscia_host/kube_text.hpp>
#include <kuscia_model/json_member.h>
#include <kuscia_model/kuscia.h>
#include <kuscia_model/kuscia_model.h>

#include <algorithm>
#include <vector>

namespace kuscia_host::plugins::timeline {

using nlohmann::json;

namespace {

// A job's approval waits on people: up to a day.
const std::vector<double>& jobBuckets() {
  static const std::vector<double> b = {0.5, 1,   2.5, 5,    10,    30,   60,
                                        120, 300, 900, 3600, 14400, 86400};
  return b;
}

} // namespace

JobWatch::JobWatch(sdk::Host host, std::string taskNamespace, Writes writes, TaskDoc taskDoc)
    : host_(host), namespace_(std::move(taskNamespace)), writes_(std::move(writes)),
      taskDoc_(std::move(taskDoc)),
      approval_(host.histogram("kuscia_timeline_job_approval_seconds",
                               "A KusciaJob's creation to it leaving AwaitingApproval (observed: "
                               "Kuscia writes no time for it)",
                               {}, jobBuckets())),
      queued_(host.histogram("kuscia_timeline_job_queued_seconds",
                             "A job's task waiting in the job's queue: the job leaving approval, "
                             "or its last dependency finishing, to the KusciaTask's creation",
                             {"reason"}, jobBuckets())),
      failedWrites_(host.counter("kuscia_timeline_job_observation_writes_total",
                                 "Writes of a job's observed times onto the job (ok, failed)",
                                 {"outcome"})) {
  sub_ = host_.subscribe(model::job::jobSubscription(namespace_));
  startedNanos_ = host_.wallTimeNanos();
}

std::optional<model::control::Job> JobWatch::jobOf(const std::string& name,
                                                   std::string* kept) const {
  std::optional<model::control::Job> job;
  host_.cacheGet(sub_, namespace_ + "/" + name, [&](const sdk::Object& o) {
    model::job::JobFields f = model::job::jobOfFields(o.fieldsJson);
    job = std::move(f.job);
    if (kept != nullptr) *kept = std::move(f.observed);
  });
  return job;
}

void JobWatch::onEvent(const sdk::Event& e) {
  if (e.type == KH_EVENT_SYNCED) return;
  const std::string name(model::nameOf(e.key));
  if (e.type == KH_EVENT_DELETED) {
    jobs_.erase(name);
    std::erase_if(jobOfTask_, [&](const auto& kv) { return kv.second == name; });
    return;
  }
  const model::job::JobFields f = model::job::jobOfFields(e.fieldsJson);
  const model::control::Job& job = f.job;
  if (!writes_(job.initiator)) {
    jobs_.erase(name);
    return;
  }
  Held& h = jobs_[name];
  for (const auto& t : job.tasks)
    if (!t.name.empty()) jobOfTask_[t.name] = name;
  const std::string& kept = f.observed;
  if (kept != h.kept) {
    // What a previous run (or this one) kept, under what this run saw.
    h.kept = kept;
    const model::job::Observations stored = model::job::observationsOf(kept);
    if (!h.observed.awaiting) h.observed.awaiting = stored.awaiting;
    if (!h.observed.approved) h.observed.approved = stored.approved;
    for (const auto& [party, at] : stored.accepted)
      h.observed.accepted.try_emplace(party, at);
    h.approvalCounted = h.approvalCounted || stored.approved.has_value(); // by the run that saw it
  }
  const bool watched = h.sawAwaiting;
  model::job::observe(h.observed, job, host_.wallTimeNanos(), watched);
  h.sawAwaiting = h.sawAwaiting || job.phase == "AwaitingApproval";
  if (const std::string text = model::job::observationsText(h.observed);
      text != h.kept && text != model::job::observationsText({})) {
    sdk::KubeRequest r = model::kusciaMergePatch(model::control::kKusciaJobs, namespace_, name, "",
                                                 model::job::observationsPatch(h.observed));
    r.userTag = kWriteTag;
    try {
      host_.kubeRequest(r);
    } catch (const sdk::HostError& err) {
      failedWrites_.add(1, {"failed"});
      host_.debug("job " + name + ": observations not written: " + err.what());
    }
  }
  observeHistograms(job, h);
}

bool JobWatch::onKubeResult(const sdk::KubeResult& r) {
  if (r.userTag != kWriteTag) return false;
  const bool ok = r.httpCode >= 200 && r.httpCode < 300;
  failedWrites_.add(1, {ok ? "ok" : "failed"});
  if (!ok && r.httpCode != 404 && !loggedFailure_) {
    loggedFailure_ = true; // once: the next write tries again
    host_.warn("writing a job's observed times failed (" + std::to_string(r.httpCode) +
               "): " + std::string(r.message));
  }
  return true;
}

void JobWatch::observeHistograms(const model::control::Job& job, Held& h) {
  if (!h.approvalCounted && h.observed.approved && job.created) {
    h.approvalCounted = true;
    approval_.observe(static_cast<double>(*h.observed.approved - *job.created) / 1e9);
  }
  if (job.phase != "Running" && job.phase != "Succeeded" && job.phase != "Failed") return;
  // A task's wait is known once it exists: its document says from when.
  std::map<std::string, json> docs;
  for (const auto& t : job.tasks)
    if (h.queuedCounted.count(t.name) == 0 && job.taskPhases.count(t.name) != 0) {
      for (const auto& d : job.tasks)
        if (auto doc = taskDoc_(d.name)) docs[d.name] = std::move(*doc);
      break;
    }
  if (docs.empty()) return;
  const json view = model::job::jobDocument(job, h.observed, docs, host_.wallTimeNanos());
  for (const auto& t : model::arrayOf(view, "tasks")) {
    const json& q = model::objectOf(t, "queued");
    const std::string task = model::textOf(t, "task");
    if (!q.contains("to") || !q.contains("seconds") || !h.queuedCounted.insert(task).second)
      continue;
    // A task created before this run was counted by the run that saw it.
    if (sdk::parseTime(q["to"].get<std::string>()).value_or(0) < startedNanos_ - 1000000000)
      continue;
    const std::string reason = q.value("reason", std::string("job"));
    queued_.observe(q["seconds"].get<double>(), {reason.c_str()});
  }
}

std::optional<json> JobWatch::document(const std::string& name) const {
  auto held = jobs_.find(name);
  if (held == jobs_.end()) return std::nullopt;
  auto job = jobOf(name, nullptr);
  if (!job) return std::nullopt;
  std::map<std::string, json> docs;
  for (const auto& t : job->tasks)
    if (auto doc = taskDoc_(t.name)) docs[t.name] = std::move(*doc);
  return model::job::jobDocument(*job, held->second.observed, docs, host_.wallTimeNanos());
}

std::optional<json> JobWatch::context(const std::string& task) const {
  auto it = jobOfTask_.find(task);
  if (it == jobOfTask_.end()) return std::nullopt;
  auto doc = document(it->second);
  if (!doc) return std::nullopt;
  json c = model::job::jobContext(*doc, task);
  if (c.is_null()) return std::nullopt;
  return c;
}

json JobWatch::list(std::size_t limit) const {
  std::vector<std::pair<std::string, json>> items;
  for (const auto& [name, h] : jobs_)
    if (auto job = jobOf(name, nullptr)) {
      json item = {{"phase", job->phase}, {"initiator", job->initiator}};
      if (job->created) item["createTime"] = sdk::formatTime(*job->created);
      items.emplace_back(name, std::move(item));
    }
  // Newest first; by name (an object, so that the answers of a host's instances merge).
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
    return std::pair(a.second.value("createTime", ""), b.first) >
           std::pair(b.second.value("createTime", ""), a.first);
  });
  if (items.size() > limit) items.resize(limit);
  json jobs = json::object();
  for (auto& [name, item] : items)
    jobs[name] = std::move(item);
  return {{"jobs", jobs}};
}

} // namespace kuscia_host::plugins::timeline
