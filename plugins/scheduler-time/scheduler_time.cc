#include "scheduler_time.h"

#include <kuscia_model/kuscia.h>
#include <kuscia_model/kuscia_model.h>
#include <kuscia_model/kuscia_time.h>
#include <kuscia_model/write_contest.h>

namespace kuscia_host::plugins::scheduler {

using nlohmann::json;

namespace {

enum PodField { kTask, kCreate, kConditions, kPhase, kFieldCount };
// The task subscription's: the phase and completion first, for FinishedTasks.
enum TaskField { kTaskPhase, kTaskCompletion, kTaskPods, kTaskServices, kTaskFieldCount };

} // namespace

SchedulerTime::SchedulerTime(sdk::Host host, std::string_view /*domain*/,
                             std::string_view configJson)
    : Plugin(host), config_(parseSchedulerConfig(configJson)),
      malformed_(host.counter("kuscia_scheduler_time_malformed_inputs_total",
                              "Times that did not parse (scheduleTime left unset)", {"input"})),
      writer_(
          host, config_, "kuscia_scheduler_time",
          [this](const std::string& task) { return diff(task); },
          [this](const std::string& task, const model::StatusPatch& status, uint64_t version) {
            written(task, status, version);
          }) {
  sdk::Subscription pods;
  pods.version = "v1";
  pods.resource = "pods";
  pods.scope = KH_SCOPE_DOMAIN;
  pods.fields = {model::kTaskIdPointer, "/metadata/creationTimestamp", "/status/conditions",
                 "/status/phase"};
  podSub_ = host.subscribe(pods);
  taskSub_ = host.subscribe(model::taskSubscription(
      config_.taskNamespace, {"/status/phase", "/status/completionTime", "/status/podStatuses",
                              "/status/serviceStatuses"}));
  // A finished task is released as soon as this instance has no pod of it.
  finished_.emplace(host, taskSub_, config_.taskNamespace, kTaskPhase, kTaskCompletion, 0,
                    [this](const std::string& task) {
                      return tasks_.count(task) > 0 || !pods_.members(task).empty();
                    });
  finished_->waitFor(podSub_);
}

void SchedulerTime::onEvent(const sdk::Event& e) {
  if (e.type == KH_EVENT_SYNCED) return finished_->onEvent(e);
  std::string key(e.key);
  if (e.subscriptionId == taskSub_) {
    onTask(e);
    return finished_->onEvent(e); // after: it asks whether the task is still held
  }
  if (e.subscriptionId != podSub_) return;
  if (e.type == KH_EVENT_DELETED) return release(pods_.forget(key));
  json f = model::parseFields(e.fieldsJson, kFieldCount);
  Pod* found = pods_.apply(key, e.uid, model::fieldString(f, kTask));
  if (found == nullptr) return;
  Pod& p = *found;
  const std::string& task = *p.task;
  p.phase = model::fieldString(f, kPhase);
  p.create = model::parseTime(model::fieldString(f, kCreate));
  const json* sched = model::trueCondition(f[kConditions], "PodScheduled");
  if (sched != nullptr && !p.scheduled) {
    std::string text = sched->value("lastTransitionTime", "");
    if (auto t = model::parseTime(text)) {
      p.scheduled = t;
    } else {
      malformed_.add(1, {"PodScheduled lastTransitionTime"});
      if (!p.loggedMalformed) {
        p.loggedMalformed = true;
        host().warn(key + ": malformed PodScheduled lastTransitionTime '" + text +
                    "': scheduleTime stays unset");
      }
    }
  }
  touch(task);
}

void SchedulerTime::onTask(const sdk::Event& e) {
  std::string task(model::nameOf(e.key));
  if (e.type == KH_EVENT_DELETED) {
    tasks_.erase(task);
    writer_.forget(task);
    return;
  }
  // Held only while this instance has pods of the task: nothing else is its to write.
  if (pods_.members(task).empty()) return release(task);
  json f = model::parseFields(e.fieldsJson, kTaskFieldCount);
  Task& t = tasks_[task];
  t.pods = f[kTaskPods].is_object() ? f[kTaskPods] : json::object();
  t.version = model::versionNumber(e.resourceVersion);
  writer_.observed(task, e.resourceVersion, t.pods, f[kTaskServices]);
  touch(task);
}

bool SchedulerTime::differs(const Pod& p, const json* entry, model::StatusPatch::Entry* patch) {
  const bool present = entry != nullptr && entry->is_object();
  // An earlier incarnation's scheduleTime is cleared while this one's is not known.
  const bool earlier = present && !model::sameIncarnation(entry, p.create);
  if (!setEntryTime(patch, entry, model::TimeField::kSchedule, p.scheduled, earlier)) return false;
  if (patch != nullptr && !present) { // a new entry
    patch->identify = true;
    patch->podPhase = p.phase;
  }
  return true;
}

void SchedulerTime::release(const std::string& task) {
  if (!pods_.members(task).empty()) return;
  if (tasks_.erase(task) > 0) writer_.forget(task);
  finished_->recheck(task);
}

void SchedulerTime::touch(const std::string& task) {
  auto t = tasks_.find(task);
  if (t == tasks_.end()) { // not held yet: as the host's cache has it
    Task held;
    host().cacheGet(taskSub_, config_.taskNamespace + "/" + task, [&held](const sdk::Object& o) {
      json f = model::parseFields(o.fieldsJson, kTaskFieldCount);
      held.pods = f[kTaskPods].is_object() ? f[kTaskPods] : json::object();
      held.version = model::versionNumber(o.resourceVersion);
    });
    if (held.pods.is_null()) return; // applied when the task appears
    t = tasks_.emplace(task, std::move(held)).first;
  }
  const json& pods = t->second.pods;
  for (const auto& key : pods_.members(task)) {
    auto e = pods.find(key);
    if (differs(pods_.at(key), e == pods.end() ? nullptr : &*e)) return writer_.changed(task);
  }
}

model::StatusPatch SchedulerTime::diff(const std::string& task) {
  model::StatusPatch status;
  auto t = tasks_.find(task);
  if (t == tasks_.end()) return status;
  const json& pods = t->second.pods;
  for (const auto& key : pods_.members(task)) {
    auto e = pods.find(key);
    model::StatusPatch::Entry patch{model::StatusPatch::kPods, key};
    if (differs(pods_.at(key), e == pods.end() ? nullptr : &*e, &patch))
      status.add(std::move(patch));
  }
  return status;
}

void SchedulerTime::written(const std::string& task, const model::StatusPatch& status,
                            uint64_t version) {
  auto t = tasks_.find(task);
  if (t == tasks_.end() || !status.touches(model::StatusPatch::kPods)) return;
  // The events of this write, and maybe of another writer's change after it, came first: the
  // view holds the task as it is now, and the patch would put back what that writer replaced.
  if (version != 0 && t->second.version >= version) return;
  // Later diffs start from what was written while its event is on its way.
  status.applyTo(model::StatusPatch::kPods, t->second.pods);
}

void SchedulerTime::onTimer(uint64_t timerId, uint64_t /*userTag*/) {
  writer_.onTimer(timerId);
}

void SchedulerTime::onKubeResult(const sdk::KubeResult& result) {
  writer_.onKubeResult(result);
}

} // namespace kuscia_host::plugins::scheduler
