#include <kuscia_model/finished_tasks.h>

#include <algorithm>
#include <utility>

#include <kuscia_model/kuscia_time.h>
#include <kuscia_model/status_entries.h>

namespace kuscia_host::model {

FinishedTasks::FinishedTasks(sdk::Host host, uint64_t taskSubscription, std::string taskNamespace,
                             std::size_t phaseField, std::size_t completionField,
                             int64_t keepSeconds, Busy busy)
    : host_(host), taskSub_(taskSubscription), prefix_(std::move(taskNamespace) + "/"),
      phaseField_(phaseField), completionField_(completionField), keepNanos_(keepSeconds * kSecond),
      busy_(std::move(busy)) {}

bool FinishedTasks::finished(std::string_view fieldsJson, int64_t* completion) const {
  auto lead = leadingStrings(fieldsJson, std::max(phaseField_, completionField_) + 1);
  if (!finishedPhase(lead[phaseField_])) return false;
  if (completion != nullptr) *completion = parseTime(lead[completionField_]).value_or(0);
  return true;
}

void FinishedTasks::onEvent(const sdk::Event& e) {
  if (e.type == KH_EVENT_SYNCED) {
    if (waiting_.erase(e.subscriptionId) == 0 || !waiting_.empty()) return;
    // Every awaited initial list is in: what the cache holds finished is looked at once; the
    // events that follow (the rest of the tasks' own initial list too) take it from here.
    host_.cacheList(taskSub_, "", [this](const sdk::Object& o) {
      if (o.key.substr(0, prefix_.size()) == prefix_)
        consider(std::string(o.key.substr(prefix_.size())), o.resourceVersion, o.fieldsJson);
      return false;
    });
    return;
  }
  if (e.subscriptionId != taskSub_ || e.key.substr(0, prefix_.size()) != prefix_) return;
  std::string name(e.key.substr(prefix_.size()));
  if (e.type == KH_EVENT_DELETED) {
    due_.erase(name);
    return;
  }
  if (!ready()) return; // looked at when every initial list is in
  consider(name, e.resourceVersion, e.fieldsJson);
}

void FinishedTasks::consider(const std::string& name, std::string_view resourceVersion,
                             std::string_view fieldsJson) {
  int64_t completion = 0;
  if (!finished(fieldsJson, &completion)) {
    due_.erase(name); // running again (a retried task): not ours to release
    return;
  }
  const int64_t now = host_.wallTimeNanos();
  auto it = due_.find(name);
  // Without a completionTime: counted from when this instance first saw it finished.
  int64_t from = completion > 0 ? completion : it != due_.end() ? it->second.at - keepNanos_ : now;
  int64_t at = from + keepNanos_;
  if (at <= now && !busy_(name)) {
    if (it != due_.end()) due_.erase(it);
    return release(name, std::string(resourceVersion));
  }
  Due& d = it != due_.end() ? it->second : due_[name];
  d.at = at;
  d.resourceVersion = std::string(resourceVersion);
}

void FinishedTasks::recheck(const std::string& task) {
  auto it = due_.find(task);
  if (it == due_.end() || it->second.at > host_.wallTimeNanos() || busy_(task)) return;
  std::string rv = std::move(it->second.resourceVersion);
  due_.erase(it);
  release(task, rv);
}

void FinishedTasks::tick() {
  const int64_t now = host_.wallTimeNanos();
  std::vector<std::pair<std::string, std::string>> ready;
  for (const auto& [name, d] : due_)
    if (d.at <= now && !busy_(name)) ready.emplace_back(name, d.resourceVersion);
  for (auto& [name, rv] : ready) {
    due_.erase(name);
    release(name, rv);
  }
}

void FinishedTasks::release(const std::string& name, const std::string& resourceVersion) {
  // A newer version than the one seen (a change this subscription does not see, or one whose
  // event is on its way): released too when it is still finished.
  host_.cacheRelease(taskSub_, prefix_ + name, resourceVersion,
                     [this](const sdk::Object& o) { return finished(o.fieldsJson, nullptr); });
}

} // namespace kuscia_host::model
