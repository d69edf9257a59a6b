#include <kuscia_host/kube_text.hpp>
#include <kuscia_model/control_plane.h>
#include <kuscia_model/json_member.h>
#include <kuscia_model/kuscia.h>

#include <algorithm>
#include <array>
#include <string_view>

namespace kuscia_host::model::control {

using nlohmann::json;

namespace {

std::string annotation(const json& object, const char* name) {
  return textOf(objectOf(objectOf(object, "metadata"), "annotations"), name);
}

int integerIn(const json& obj, const char* key, int otherwise) {
  if (!obj.is_object()) return otherwise;
  auto it = obj.find(key);
  return it != obj.end() && it->is_number_integer() ? it->get<int>() : otherwise;
}

std::vector<std::string> domainsOf(const json& parties) {
  std::vector<std::string> out;
  for (const auto& p : parties)
    if (std::string d = textOf(p, "domainID"); !d.empty()) out.push_back(std::move(d));
  return out;
}

} // namespace

std::vector<Condition> conditionsOf(const json& status) {
  std::vector<Condition> out;
  for (const auto& c : arrayOf(status, "conditions")) {
    if (!c.is_object()) continue;
    out.push_back({textOf(c, "type"), textOf(c, "status"), textOf(c, "reason"),
                   textOf(c, "message"), timeIn(c, "lastTransitionTime")});
  }
  return out;
}

const Condition* conditionOf(const std::vector<Condition>& conditions, std::string_view type) {
  auto it = std::find_if(conditions.begin(), conditions.end(),
                         [type](const Condition& c) { return c.type == type; });
  return it != conditions.end() ? &*it : nullptr;
}

TaskResource taskResourceOf(const json& object) {
  TaskResource t;
  const json& meta = objectOf(object, "metadata");
  const json& status = objectOf(object, "status");
  t.party = textOf(meta, "namespace");
  t.key = t.party + "/" + textOf(meta, "name");
  t.task = annotation(object, "kuscia.secretflow/task-id");
  t.phase = textOf(status, "phase");
  t.stub = arrayOf(objectOf(object, "spec"), "pods").empty();
  t.created = timeIn(meta, "creationTimestamp");
  t.start = timeIn(status, "startTime");
  const auto conditions = conditionsOf(status);
  const Condition* reserved = conditionOf(conditions, "Reserved");
  const Condition* schedulable = conditionOf(conditions, "Schedulable");
  const Condition* failed = conditionOf(conditions, "Failed");
  const bool reservedPhase = t.phase == "Reserved" || t.phase == "Schedulable";
  if (reserved != nullptr && reserved->isTrue())
    t.reserved = reserved->lastTransitionTime;
  else if (reserved == nullptr && t.phase == "Reserved")
    t.reserved = timeIn(status, "lastTransitionTime"); // a stub moved without conditions
  if (schedulable != nullptr && schedulable->isTrue())
    t.schedulable = schedulable->lastTransitionTime;
  else if (t.phase == "Schedulable") {
    t.schedulable = timeIn(status, "completionTime");
    if (!t.schedulable) t.schedulable = timeIn(status, "lastTransitionTime");
  }
  if (!reservedPhase && t.phase != "Reserving") t.reserved.reset();
  if (t.phase == "Failed") {
    t.failedReason = failed != nullptr ? failed->reason : std::string();
    t.failed = failed != nullptr && failed->lastTransitionTime
                   ? failed->lastTransitionTime
                   : timeIn(status, "lastTransitionTime");
  }
  return t;
}

namespace {
// taskResourceSubscription()'s fields, in order: each goes back where it came from.
constexpr std::array<const char*, 7> kTaskResourceFields = {kTaskIdPointer,
                                                            "/status/phase",
                                                            "/status/startTime",
                                                            "/status/lastTransitionTime",
                                                            "/status/completionTime",
                                                            "/status/conditions",
                                                            "/spec/pods"};
} // namespace

sdk::Subscription taskResourceSubscription() {
  sdk::Subscription s;
  s.group = "kuscia.secretflow";
  s.version = "v1alpha1";
  s.resource = kTaskResources;
  s.scope = KH_SCOPE_DOMAIN;
  s.fields.assign(kTaskResourceFields.begin(), kTaskResourceFields.end());
  return s;
}

sdk::Subscription partnerTaskResourceSubscription() {
  sdk::Subscription s = taskResourceSubscription();
  s.scope = KH_SCOPE_ALL;
  s.labelSelector = "kuscia.secretflow/interconn-protocol-type=kuscia";
  return s;
}

sdk::Subscription allTaskResourceSubscription() {
  sdk::Subscription s = taskResourceSubscription();
  s.scope = KH_SCOPE_ALL;
  return s;
}

TaskResource taskResourceOfFields(std::string_view key, std::string_view fieldsJson) {
  const json fields = parseFields(fieldsJson, kTaskResourceFields.size());
  json object = json::object();
  const std::size_t slash = key.find('/');
  object["metadata"]["namespace"] = std::string(key.substr(0, slash));
  object["metadata"]["name"] =
      std::string(key.substr(slash == std::string_view::npos ? 0 : slash + 1));
  for (std::size_t i = 0; i < kTaskResourceFields.size(); ++i)
    if (!fields[i].is_null()) object[json::json_pointer(kTaskResourceFields[i])] = fields[i];
  return taskResourceOf(object);
}

ReservationTimes reservationTimesOf(const TaskResource& r) {
  return {r.start ? r.start : r.created, r.reserved, r.schedulable};
}

json reservationJson(std::string_view key, const ReservationTimes& times) {
  json j = {{"taskResource", key}};
  for (std::size_t i = 0; i < times.size(); ++i)
    if (times[i])
      j[kReservationTimes[i]] = sdk::formatTime(*times[i], sdk::TimePrecision::kAsGiven);
  return j;
}

std::optional<std::pair<std::string, std::string>> Reservations::onEvent(const sdk::Event& e) {
  if (e.type == KH_EVENT_DELETED) return std::nullopt; // its times stay (above)
  const TaskResource r = taskResourceOfFields(e.key, e.fieldsJson);
  if (r.task.empty()) return std::nullopt;
  Held& held = byTask_[r.task][r.party];
  const ReservationTimes times = reservationTimesOf(r);
  held.key = r.key;
  if (held.times == times) return std::nullopt;
  held.times = times;
  return std::pair{r.task, r.party};
}

const ReservationTimes* Reservations::of(const std::string& task, std::string_view party) const {
  auto t = byTask_.find(task);
  if (t == byTask_.end()) return nullptr;
  auto p = t->second.find(party);
  return p != t->second.end() ? &p->second.times : nullptr;
}

json Reservations::partners(const std::string& task,
                            const std::function<bool(std::string_view party)>& held) const {
  json out = json::object();
  auto t = byTask_.find(task);
  if (t == byTask_.end()) return out;
  for (const auto& [party, r] : t->second) {
    if (!held(party) && r.times[0]) out[party] = reservationJson(r.key, r.times);
  }
  return out;
}

void Reservations::forget(const std::string& task) {
  byTask_.erase(task);
}

void Reservations::forgetUnless(const std::function<bool(const std::string& task)>& keep) {
  for (auto it = byTask_.begin(); it != byTask_.end();)
    it = keep(it->first) ? std::next(it) : byTask_.erase(it);
}

TaskResourceGroup taskResourceGroupOf(const json& object) {
  TaskResourceGroup g;
  const json& meta = objectOf(object, "metadata");
  const json& spec = objectOf(object, "spec");
  const json& status = objectOf(object, "status");
  g.task = textOf(meta, "name");
  g.phase = textOf(status, "phase");
  g.minReservedMembers = integerIn(spec, "minReservedMembers", 0);
  g.lifecycleSeconds = integerIn(spec, "lifecycleSeconds", 0);
  if (g.lifecycleSeconds <= 0) g.lifecycleSeconds = 300; // Kuscia's default (kt/handler/common.go)
  g.parties = domainsOf(arrayOf(spec, "parties"));
  g.otherParties = domainsOf(arrayOf(spec, "outOfControlledParties"));
  g.created = timeIn(meta, "creationTimestamp");
  g.start = timeIn(status, "startTime");
  for (const Condition& c : conditionsOf(status)) {
    if (c.type == "TaskResourcesReserved" && c.isTrue()) g.reserved = c.lastTransitionTime;
    if (c.type == "TaskResourceGroupExpired" && c.isTrue()) {
      g.expired = true;
      g.expiredAt = c.lastTransitionTime;
    }
    // Three condition types say a failure when True; the others when False.
    const bool failure = c.type == "TaskResourceGroupExpired" || c.type == "DependentTaskFailed" ||
                         c.type == "TaskResourceGroupFailed";
    if ((failure && c.isTrue()) || (!failure && c.status == "False"))
      g.failedReasons.push_back(c.reason.empty() ? c.type : c.reason);
  }
  return g;
}

std::vector<std::string> Job::awaitingApproval() const {
  std::vector<std::string> out;
  for (const Task& t : tasks)
    for (const std::string& p : t.parties) {
      if (p == initiator || std::find(out.begin(), out.end(), p) != out.end()) continue;
      auto it = approvals.find(p);
      if (it == approvals.end() || it->second != "JobAccepted") out.push_back(p);
    }
  return out;
}

std::string Job::rejectedBy() const {
  for (const auto& [party, answer] : approvals)
    if (answer == "JobRejected") return party;
  return {};
}

Job jobOf(const json& object) {
  Job j;
  const json& meta = objectOf(object, "metadata");
  const json& spec = objectOf(object, "spec");
  const json& status = objectOf(object, "status");
  j.name = textOf(meta, "name");
  j.namespaceName = textOf(meta, "namespace");
  j.initiator = textOf(spec, "initiator");
  j.phase = textOf(status, "phase");
  j.reason = textOf(status, "reason");
  j.message = textOf(status, "message");
  j.created = timeIn(meta, "creationTimestamp");
  j.start = timeIn(status, "startTime");
  j.completion = timeIn(status, "completionTime");
  j.maxParallelism = std::max(1, integerIn(spec, "maxParallelism", 1));
  for (auto [from, to] :
       {std::pair{"approveStatus", &j.approvals}, std::pair{"taskStatus", &j.taskPhases}})
    for (const auto& [k, v] : objectOf(status, from).items())
      if (v.is_string()) (*to)[k] = v.get<std::string>();
  for (const auto& t : arrayOf(spec, "tasks")) {
    Job::Task task;
    task.alias = textOf(t, "alias");
    task.name = textOf(t, "taskID");
    for (const auto& d : arrayOf(t, "dependencies"))
      if (d.is_string()) task.dependencies.push_back(d.get<std::string>());
    task.parties = domainsOf(arrayOf(t, "parties"));
    j.tasks.push_back(std::move(task));
  }
  return j;
}

Route routeOf(const json& object) {
  Route r;
  const json& spec = objectOf(object, "spec");
  r.name = textOf(objectOf(object, "metadata"), "name");
  r.source = textOf(spec, "source");
  r.destination = textOf(spec, "destination");
  const auto conditions = conditionsOf(objectOf(object, "status"));
  if (const Condition* ready = conditionOf(conditions, "Ready")) {
    r.ready = ready->isTrue();
    r.reason = ready->reason;
    r.message = ready->message;
    r.checkedAt = ready->lastTransitionTime;
  }
  return r;
}

} // namespace kuscia_host::model::control
