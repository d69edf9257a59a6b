#include "sim_jobs.h"

#include <kuscia_model/finished_tasks.h>
#include <kuscia_model/json_member.h>
#include <kuscia_model/kuscia.h>
#include <kuscia_model/kuscia_model.h>
#include <kuscia_model/kuscia_time.h>

#include <algorithm>

namespace kuscia_host::plugins::sim {

using nlohmann::json;

namespace {

constexpr const char* kFaultAnnotation = "sim.kuscia-host/fault";
// A party playing `approval-wait` accepts after this many times approveMillis.
constexpr int64_t kSlowApproval = 8;

} // namespace

SimJobs::SimJobs(sdk::Host host, std::string domain, bool p2p, std::string taskNamespace,
                 int64_t approveMillis)
    : host_(host), domain_(std::move(domain)), namespace_(std::move(taskNamespace)), p2p_(p2p),
      approveMillis_(approveMillis) {
  sub_ = host_.subscribe(model::kusciaSubscription(model::control::kKusciaJobs, namespace_,
                                                   {"/metadata", "/spec", "/status"}));
}

std::string SimJobs::now() const {
  return model::formatTime(host_.wallTimeNanos());
}

bool SimJobs::runs(const Held& h) const {
  return p2p_ || h.job.initiator == domain_;
}

void SimJobs::onEvent(const sdk::Event& e) {
  if (e.type == KH_EVENT_SYNCED) {
    for (const auto& [name, h] : jobs_)
      reconcile(name);
    return;
  }
  const std::string name(model::nameOf(e.key));
  if (e.type == KH_EVENT_DELETED) {
    jobs_.erase(name);
    return;
  }
  const json f = model::parseFields(e.fieldsJson, 3);
  const json object = {{"metadata", f[0]}, {"spec", f[1]}, {"status", f[2]}};
  Held& h = jobs_[name];
  h.job = model::control::jobOf(object);
  h.uid = std::string(e.uid);
  h.spec = f[1].is_object() ? f[1] : json::object();
  const json annotations = model::objectOf(model::objectOf(object, "metadata"), "annotations");
  h.annotationFault = model::textOf(annotations, kFaultAnnotation);
  h.fault.clear();
  h.faultParty.clear();
  if (auto eq = h.annotationFault.find('='); eq != std::string::npos) {
    h.faultParty = h.annotationFault.substr(0, eq);
    h.fault = h.annotationFault.substr(eq + 1);
  }
  reconcile(name);
}

void SimJobs::onTask(const std::string& task, const std::string& phase, bool deleted) {
  if (deleted) {
    taskPhases_.erase(task);
    return;
  }
  auto [it, fresh] = taskPhases_.try_emplace(task, phase);
  if (!fresh && it->second == phase) return;
  it->second = phase;
  for (auto& [name, h] : jobs_) {
    h.creating.erase(task);
    for (const auto& t : h.job.tasks)
      if (t.name == task) reconcile(name);
  }
}

void SimJobs::reconcile(const std::string& name) {
  auto it = jobs_.find(name);
  if (it == jobs_.end() || !runs(it->second)) return;
  Held& h = it->second;
  if (model::control::finishedJobPhase(h.job.phase)) return;
  if (h.job.phase.empty()) return initialize(name, h);
  if (h.job.phase == "AwaitingApproval") return approve(name, h);
  if (h.job.phase == "Pending") {
    json stages = json::object();
    for (const auto& t : h.job.tasks)
      for (const auto& p : t.parties)
        stages[p] = "JobCreateStageSucceeded";
    return patchStatus(
        name, {{"phase", "Running"}, {"stageStatus", stages}, {"lastReconcileTime", now()}});
  }
  if (h.job.phase == "Running") run(name, h);
}

void SimJobs::initialize(const std::string& name, Held& h) {
  const std::string at = now();
  // As Kuscia's interconnection jobs, and a party that approves by hand (approval-wait).
  const bool awaits = !h.job.awaitingApproval().empty() && (p2p_ || h.fault == "approval-wait");
  json stages = json::object();
  stages[p2p_ ? domain_ : h.job.initiator] = "JobCreateStageSucceeded";
  json status = {
      {"phase", awaits ? "AwaitingApproval" : "Pending"},
      {"conditions",
       json::array({{{"type", "JobValidated"}, {"status", "True"}, {"lastTransitionTime", at}}})},
      {"stageStatus", stages},
      {"startTime", at},
      {"lastReconcileTime", at}};
  if (awaits) status["approveStatus"] = {{h.job.initiator, "JobAccepted"}};
  patchStatus(name, status);
}

void SimJobs::approve(const std::string& name, Held& h) {
  const std::vector<std::string> waiting = h.job.awaitingApproval();
  if (waiting.empty()) {
    h.approving.clear();
    return patchStatus(name, {{"phase", "Pending"}, {"lastReconcileTime", now()}});
  }
  for (const auto& party : waiting) {
    if (!h.approving.insert(party).second) continue;
    const int64_t millis =
        approveMillis_ * (h.fault == "approval-wait" && h.faultParty == party ? kSlowApproval : 1);
    try {
      timers_[host_.startTimer(static_cast<uint64_t>(std::max<int64_t>(millis, 0)), 0,
                               kApproveTag)] = {name, party};
    } catch (const sdk::HostError&) {
      h.approving.erase(party);
    }
  }
}

void SimJobs::onTimer(uint64_t timerId) {
  auto it = timers_.find(timerId);
  if (it == timers_.end()) return;
  auto [name, party] = std::move(it->second);
  timers_.erase(it);
  auto job = jobs_.find(name);
  if (job == jobs_.end()) return;
  job->second.approving.erase(party);
  if (job->second.job.phase != "AwaitingApproval") return;
  patchStatus(name, {{"approveStatus", {{party, "JobAccepted"}}}, {"lastReconcileTime", now()}});
}

void SimJobs::run(const std::string& name, Held& h) {
  json taskStatus = json::object();
  std::set<std::string> succeeded; // aliases
  std::size_t active = 0, finished = 0;
  bool failed = false;
  for (const auto& t : h.job.tasks) {
    auto it = taskPhases_.find(t.name);
    if (t.name.empty() || it == taskPhases_.end()) continue;
    // A created task without a phase counts as Pending (Kuscia's kusciajob controller).
    const std::string phase = it->second.empty() ? "Pending" : it->second;
    taskStatus[t.name] = phase;
    if (phase == "Succeeded") succeeded.insert(t.alias);
    failed = failed || phase == "Failed";
    finished += model::finishedPhase(phase);
    active += !model::finishedPhase(phase);
  }
  if (failed || finished == h.job.tasks.size()) {
    if (h.ending) return; // written once: its event is on its way
    h.ending = true;
    if (failed) stopUnfinished(h);
    const std::string at = now();
    json status = {{"phase", failed ? "Failed" : "Succeeded"},
                   {"taskStatus", taskStatus},
                   {"completionTime", at},
                   {"lastReconcileTime", at}};
    if (failed) status["reason"] = "KusciaTaskFailed";
    return patchStatus(name, status);
  }
  if (taskStatus != json(h.job.taskPhases))
    patchStatus(name, {{"taskStatus", taskStatus}, {"lastReconcileTime", now()}});
  const json specTasks = model::arrayOf(h.spec, "tasks");
  for (std::size_t i = 0; i < h.job.tasks.size() && i < specTasks.size(); ++i) {
    const auto& t = h.job.tasks[i];
    if (t.name.empty() || taskPhases_.count(t.name) != 0 || h.creating.count(t.name) != 0) continue;
    const bool ready = std::all_of(t.dependencies.begin(), t.dependencies.end(),
                                   [&](const std::string& d) { return succeeded.count(d) != 0; });
    if (!ready || active + h.creating.size() >= static_cast<std::size_t>(h.job.maxParallelism))
      continue;
    createTask(name, h, specTasks[i]);
  }
}

void SimJobs::createTask(const std::string& name, Held& h, const json& task) {
  const std::string taskName = model::textOf(task, "taskID");
  h.creating.insert(taskName);
  json parties = json::array();
  for (const auto& p : model::arrayOf(task, "parties")) {
    json party = {{"domainID", model::textOf(p, "domainID")},
                  {"appImageRef", model::textOf(task, "appImage")}};
    if (!model::textOf(p, "role").empty()) party["role"] = model::textOf(p, "role");
    parties.push_back(party);
  }
  json annotations = {{"kuscia.secretflow/job-id", name},
                      {"kuscia.secretflow/task-alias", model::textOf(task, "alias")},
                      {"kuscia.secretflow/self-cluster-as-participant", "true"},
                      {"kuscia.secretflow/initiator", h.job.initiator}};
  // The task's own faults (a job's approval-wait is the job's).
  if (!h.annotationFault.empty() && h.fault != "approval-wait")
    annotations[kFaultAnnotation] = h.annotationFault;
  const json object = {
      {"apiVersion", "kuscia.secretflow/v1alpha1"},
      {"kind", "KusciaTask"},
      {"metadata",
       {{"name", taskName},
        {"namespace", namespace_},
        {"labels",
         {{"kuscia.secretflow/controller", "kuscia-job"}, {"kuscia.secretflow/job-uid", h.uid}}},
        {"annotations", annotations},
        {"ownerReferences", json::array({{{"apiVersion", "kuscia.secretflow/v1alpha1"},
                                          {"kind", "KusciaJob"},
                                          {"name", name},
                                          {"uid", h.uid},
                                          {"controller", true},
                                          {"blockOwnerDeletion", true}}})}}},
      {"spec",
       {{"initiator", h.job.initiator},
        {"taskInputConfig", model::textOf(task, "taskInputConfig")},
        {"scheduleConfig", model::objectOf(task, "scheduleConfig")},
        {"parties", parties}}}};
  sdk::KubeRequest r;
  r.verb = KH_KUBE_CREATE;
  r.group = model::kKusciaGroup;
  r.version = model::kKusciaVersion;
  r.resource = model::kKusciaTasks;
  r.namespaceName = namespace_;
  r.body = object.dump();
  try {
    host_.kubeRequest(r);
  } catch (const sdk::HostError& e) {
    h.creating.erase(taskName);
    host_.debug("not sent (kusciatasks/" + taskName + "): " + e.what());
  }
}

void SimJobs::stopUnfinished(Held& h) {
  for (const auto& t : h.job.tasks) {
    auto it = taskPhases_.find(t.name);
    if (it == taskPhases_.end() || model::finishedPhase(it->second)) continue;
    const std::string at = now();
    try {
      host_.kubeRequest(model::taskStatusPatch(namespace_, t.name,
                                               {{"phase", "Failed"},
                                                {"reason", "KusciaJobStopped"},
                                                {"message", "Job was stopped"},
                                                {"completionTime", at},
                                                {"lastReconcileTime", at}}));
    } catch (const sdk::HostError&) {
    }
  }
}

void SimJobs::patchStatus(const std::string& name, const json& status) {
  try {
    host_.kubeRequest(model::kusciaMergePatch(model::control::kKusciaJobs, namespace_, name,
                                              "status", json{{"status", status}}.dump()));
  } catch (const sdk::HostError& e) {
    host_.debug("not sent (kusciajobs/" + name + "): " + e.what());
  }
}

} // namespace kuscia_host::plugins::sim
