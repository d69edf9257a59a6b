#include "sim_agent.h"

#include <cmath>
#include <functional>

#include <kuscia_model/finished_tasks.h>
#include <kuscia_model/json_member.h>
#include <kuscia_model/kuscia.h>
#include <kuscia_model/kuscia_model.h>
#include <kuscia_model/kuscia_time.h>
#include <kuscia_model/status_entries.h>

#include "sim_interconn.h"

namespace kuscia_host::plugins::sim {

using nlohmann::json;

namespace {

enum TaskField { kParties, kInitiator, kPhase, kCreate, kLifecycle, kFault, kTaskFieldCount };
enum PodField {
  kPodTask,
  kPodPhase,
  kPodConditions,
  kPodStart,
  kPodIp,
  kPodContainers,
  kPodReason,
  kPodMessage,
  kPodFieldCount
};

// The annotation that has a party's pods play a fault: "<party>=<kind>".
constexpr const char* kFaultPointer = "/metadata/annotations/sim.kuscia-host~1fault";

using model::textOf;

// What Kuscia's task controller copies of a pod into its podStatuses entry (kt/handler/common.go:
// the pod's reason and message; the first terminated container's reason and its terminationLog;
// else PodScheduled=False's reason and message; else the first waiting container's), as
// {"reason", "message", "terminationLog"} with null for what it does not say. A container still
// being created is left out (Kuscia writes it too, with an empty message).
json kusciaPodStatus(const json& f) {
  std::string reason = model::fieldString(f, kPodReason),
              message = model::fieldString(f, kPodMessage);
  std::string log;
  const json containers = f[kPodContainers].is_array() ? f[kPodContainers] : json::array();
  auto out = [&] {
    auto orNull = [](const std::string& v) { return v.empty() ? json() : json(v); };
    return json{
        {"reason", orNull(reason)}, {"message", orNull(message)}, {"terminationLog", orNull(log)}};
  };
  for (const auto& c : containers) {
    for (const char* which : {"state", "lastState"}) {
      const json t = c.value(which, json::object()).value("terminated", json());
      if (!t.is_object()) continue;
      if (reason.empty()) reason = textOf(t, "reason");
      log = "container[" + textOf(c, "name") + "] " +
            (std::string(which) == "state" ? "" : "last ") + "terminated state reason \"" +
            textOf(t, "reason") + "\", message: \"" + textOf(t, "message") + "\"";
      return out();
    }
  }
  if (const json* c = model::findCondition(f[kPodConditions], "PodScheduled");
      c != nullptr && c->value("status", "") == "False") {
    if (reason.empty()) reason = textOf(*c, "reason");
    message = textOf(*c, "message");
    return out();
  }
  for (const auto& c : containers) {
    const json w = c.value("state", json::object()).value("waiting", json());
    if (!w.is_object() || textOf(w, "reason") == "ContainerCreating") continue;
    if (reason.empty()) reason = textOf(w, "reason");
    message = "container[" + textOf(c, "name") + "] waiting state reason: \"" +
              textOf(w, "reason") + "\", message: \"" + textOf(w, "message") + "\"";
    break;
  }
  return out();
}

// A container that ended: how each fault's container ends.
json terminatedContainer(const std::string& fault, const std::string& startedAt,
                         const std::string& at) {
  json t = {{"startedAt", startedAt}, {"finishedAt", at}};
  if (fault == "oom") {
    t["reason"] = "OOMKilled";
    t["exitCode"] = 137;
  } else {
    t["reason"] = "Error";
    t["exitCode"] = 1;
    t["message"] =
        fault == "peer-network"
            ? "Traceback (most recent call last):\n  File \"/root/psi.py\", line 88, in run\n"
              "grpc._channel._InactiveRpcError: status = StatusCode.UNAVAILABLE, details = \"HTTP "
              "503: upstream connect error or disconnect/reset before headers. reset reason: "
              "connection failure, transport failure reason: delayed connect error: 111\""
            : "Traceback (most recent call last):\n  File \"/root/psi.py\", line 42, in "
              "<module>\nValueError: input table 'alice_table' has no column 'id'";
  }
  return {{"name", "secretflow"}, {"ready", false},        {"started", false},
          {"restartCount", 0},    {"image", "secretflow"}, {"state", {{"terminated", t}}}};
}

// Merges `add` into a conditions array by type (what a strategic merge patch would do).
json withConditions(json conditions, const json& add) {
  if (!conditions.is_array()) conditions = json::array();
  for (const auto& c : add) {
    bool replaced = false;
    for (auto& have : conditions)
      if (have.value("type", "") == c.value("type", "")) {
        have = c;
        replaced = true;
      }
    if (!replaced) conditions.push_back(c);
  }
  return conditions;
}

// The party's one container, waiting to run (its image being pulled).
json creatingContainer() {
  return {{"name", "secretflow"},  {"ready", false},
          {"started", false},      {"restartCount", 0},
          {"image", "secretflow"}, {"state", {{"waiting", {{"reason", "ContainerCreating"}}}}}};
}

// The party's one container, running since `t`.
json runningContainer(bool ready, const std::string& t) {
  return {{"name", "secretflow"},  {"ready", ready},
          {"started", true},       {"restartCount", 0},
          {"image", "secretflow"}, {"state", {{"running", {{"startedAt", t}}}}}};
}

json condition(const std::string& type, const std::string& at) {
  return {
      {"type", type}, {"status", "True"}, {"lastProbeTime", nullptr}, {"lastTransitionTime", at}};
}

} // namespace

SimAgent::SimAgent(sdk::Host host, std::string_view domain, std::string_view configJson)
    : Plugin(host), config_(parseSimConfig(configJson)), domain_(domain),
      p2p_(host.deploymentMode() == "p2p"),
      rng_(static_cast<uint64_t>(config_.seed) ^ std::hash<std::string_view>{}(domain)) {
  taskSub_ = host.subscribe(model::taskSubscription(
      config_.taskNamespace,
      {"/spec/parties", "/spec/initiator", "/status/phase", "/metadata/creationTimestamp",
       "/spec/scheduleConfig/lifecycleSeconds", kFaultPointer}));
  // Every party's pods: the initiator's instance decides the task's phase from all of them.
  sdk::Subscription pods;
  pods.version = "v1";
  pods.resource = "pods";
  pods.scope = KH_SCOPE_ALL;
  pods.labelSelector = "kuscia.secretflow/controller=kusciatask";
  pods.fields = {model::kTaskIdPointer, "/status/phase",  "/status/conditions",
                 "/status/startTime",   "/status/podIP",  "/status/containerStatuses",
                 "/status/reason",      "/status/message"};
  podSub_ = host.subscribe(pods);
  sdk::Subscription services;
  services.version = "v1";
  services.resource = "services";
  services.scope = KH_SCOPE_DOMAIN;
  services.fields = {model::kTaskIdPointer};
  serviceSub_ = host.subscribe(services);
  jobs_.emplace(host, domain_, p2p_, config_.taskNamespace, config_.approveMillis);
  if (config_.reserveMillis >= 0) {
    sdk::Subscription trs;
    trs.group = model::kKusciaGroup;
    trs.version = model::kKusciaVersion;
    trs.resource = "taskresources";
    trs.scope = KH_SCOPE_ALL; // every party's: the group waits for all of them
    trs.fields = {model::kTaskIdPointer, "/status/phase"};
    taskResourceSub_ = host.subscribe(trs);
  }
}

std::string SimAgent::now() const {
  return model::formatTime(host().wallTimeNanos());
}

int64_t SimAgent::delay(int64_t millis) {
  auto d = static_cast<double>(millis);
  switch (config_.distribution) {
  case SimConfig::Distribution::kFixed: break;
  case SimConfig::Distribution::kUniform:
    d = std::uniform_real_distribution<double>(d * (1 - config_.spread),
                                               d * (1 + config_.spread))(rng_);
    break;
  case SimConfig::Distribution::kLognormal:
    d *= std::exp(std::normal_distribution<double>(0, config_.spread)(rng_));
    break;
  }
  return std::max<int64_t>(0, std::llround(d));
}

void SimAgent::send(const sdk::KubeRequest& r) {
  try {
    host().kubeRequest(r);
  } catch (const sdk::HostError& e) {
    host().debug("not sent (" + r.resource + "/" + r.name + "): " + e.what());
  }
}

void SimAgent::onEvent(const sdk::Event& e) {
  if (e.type == KH_EVENT_SYNCED) {
    for (const auto& [task, t] : tasks_)
      ensure(task);
    jobs_->onEvent(e);
    return;
  }
  if (e.subscriptionId == jobs_->subscription()) return jobs_->onEvent(e);
  if (e.subscriptionId == taskSub_) return onTask(e);
  if (e.subscriptionId == podSub_) return onPod(e);
  if (e.subscriptionId == taskResourceSub_ && taskResourceSub_ != 0) return onTaskResource(e);
  if (e.subscriptionId == serviceSub_) {
    if (e.type == KH_EVENT_DELETED)
      services_.erase(std::string(e.key));
    else
      services_[std::string(e.key)] = model::fieldString(model::parseFields(e.fieldsJson, 1), 0);
  }
}

void SimAgent::onTask(const sdk::Event& e) {
  std::string name(model::nameOf(e.key));
  if (e.type == KH_EVENT_DELETED) {
    tasks_.erase(name);
    jobs_->onTask(name, "", true);
    return;
  }
  json f = model::parseFields(e.fieldsJson, kTaskFieldCount);
  jobs_->onTask(name, model::fieldString(f, kPhase), false);
  Task& t = tasks_[name];
  t.uid = std::string(e.uid);
  t.resourceVersion = std::string(e.resourceVersion);
  t.parties = f[kParties].is_array() ? f[kParties] : json::array();
  t.initiator = model::fieldString(f, kInitiator);
  t.phase = model::fieldString(f, kPhase);
  t.createNanos = model::parseTime(model::fieldString(f, kCreate)).value_or(0);
  if (f[kLifecycle].is_number_integer() && f[kLifecycle].get<int64_t>() > 0)
    t.lifecycleSeconds = f[kLifecycle].get<int64_t>();
  const std::string fault = model::fieldString(f, kFault);
  if (auto eq = fault.find('='); eq != std::string::npos) {
    t.faultParty = fault.substr(0, eq);
    t.fault = fault.substr(eq + 1);
  }
  // Kuscia's TaskResourceGroup expires lifecycleSeconds after its creation (the task's, here).
  if (t.fault == "unschedulable" && t.expiryTimer == 0 && t.createNanos > 0 &&
      !model::finishedPhase(t.phase) && (p2p_ ? t.faultParty == domain_ : t.initiator == domain_)) {
    const int64_t left = t.createNanos + t.lifecycleSeconds * 1000000000 - host().wallTimeNanos();
    try {
      t.expiryTimer = host().startTimer(static_cast<uint64_t>(std::max<int64_t>(left / 1000000, 0)),
                                        0, kExpiry);
      timers_[t.expiryTimer] = name;
    } catch (const sdk::HostError&) {
    }
  }
  t.mine = false;
  for (const auto& p : t.parties)
    t.mine = t.mine || (p.is_object() && p.value("domainID", "") == domain_);
  ensure(name);
  settlePhase(name);
  if (model::finishedPhase(t.phase) && (t.cleaned || config_.cleanupMillis < 0)) release(name);
  if (model::finishedPhase(t.phase) && config_.cleanupMillis >= 0 && t.cleanupTimer == 0 &&
      !t.cleaned) {
    try {
      t.cleanupTimer = host().startTimer(static_cast<uint64_t>(config_.cleanupMillis), 0, kCleanup);
      timers_[t.cleanupTimer] = name;
    } catch (const sdk::HostError&) {
    }
  }
}

json SimAgent::allocatedPorts(const std::string& task, const Task& t) const {
  // W1 allocates the ports of the cluster's local parties (kt/handler/pending_handler.go): the
  // domain's own in p2p, every party in centralized. Named "<task>-0/<port>", as upstream.
  json out = json::array();
  for (const auto& p : t.parties) {
    const std::string domain = p.is_object() ? p.value("domainID", "") : "";
    if (domain.empty() || (p2p_ && domain != domain_)) continue;
    json named = json::object();
    for (std::size_t i = 0; i < config_.ports.size(); ++i)
      named[task + "-0/" + config_.ports[i].name] = 20000 + static_cast<int>(i);
    out.push_back({{"domainID", domain}, {"namedPort", std::move(named)}});
  }
  return out;
}

std::string SimAgent::podName(const std::string& task, const json& party, int index) const {
  std::string role = party.is_object() ? party.value("role", "") : "";
  return task + (role.empty() ? "" : "-" + role) + "-" + std::to_string(index);
}

void SimAgent::ensure(const std::string& task) {
  auto it = tasks_.find(task);
  if (it == tasks_.end() || !it->second.mine) return;
  const Task& t = it->second;
  if (model::finishedPhase(t.phase)) return;
  if (t.fault == "route-down") return failPreCheck(task, it->second);
  if (t.phase.empty() && (p2p_ || t.initiator == domain_)) {
    // W1 and W2 of Kuscia's task controller: ports allocated, then (pre-checks passed) the pods,
    // services and group created: ResourceCreated, which ends the task's preparing.
    const std::string at = now();
    auto condition = [&at](const char* type) {
      return json{{"type", type}, {"status", "True"}, {"lastTransitionTime", at}};
    };
    send(model::taskStatusPatch(config_.taskNamespace, task,
                                {{"phase", "Pending"},
                                 {"startTime", at},
                                 {"allocatedPorts", allocatedPorts(task, t)},
                                 {"conditions", json::array({condition("PortsAllocated"),
                                                             condition("ResourceCreated")})}}));
  }
  const json party = ownParty(t);
  for (int i = 0; i < config_.podsPerParty; ++i) {
    std::string name = podName(task, party, i);
    std::string key = domain_ + "/" + name;
    auto pod = pods_.find(key);
    if (pod == pods_.end()) {
      if (creating_.insert(key).second) createPod(task, t, i);
      continue;
    }
    if (!pod->second.uid.empty()) createServices(name, pod->second.uid, task);
  }
  // After the pods, as Kuscia's task controller creates the group and its TaskResources.
  if (reserves(t) && !t.reserving) createTaskResource(task, it->second);
}

json SimAgent::ownParty(const Task& t) const {
  json party;
  for (const auto& p : t.parties)
    if (p.is_object() && p.value("domainID", "") == domain_) party = p;
  return party;
}

bool SimAgent::reserves(const Task& t) const {
  return config_.reserveMillis >= 0 && t.fault != "route-down";
}

namespace {
// A merge patch of a TaskResource's status.
sdk::KubeRequest taskResourcePatch(const std::string& ns, const std::string& name,
                                   const json& status) {
  sdk::KubeRequest r;
  r.group = model::kKusciaGroup;
  r.version = model::kKusciaVersion;
  r.resource = "taskresources";
  r.namespaceName = ns;
  r.name = name;
  r.body = json{{"status", status}}.dump(); // no status subresource: the object itself
  return r;
}
json trCondition(const char* type, const char* reason, const std::string& at) {
  return {{"type", type}, {"status", "True"}, {"reason", reason}, {"lastTransitionTime", at}};
}
} // namespace

// This domain's TaskResource's conditions as Kuscia writes them, each kept with its time: Reserving
// (the group created it), Reserved once the party reserved, Schedulable at `schedulableAt` ("":
// not yet).
json SimAgent::reservationConditions(const Task& t, const std::string& schedulableAt) {
  json out = json::array(
      {trCondition("Reserving", "Create task resource from task resource group", t.reservingAt)});
  if (!t.reservedAt.empty())
    out.push_back(
        trCondition("Reserved", "The min set of pods has already reserved resource", t.reservedAt));
  if (!schedulableAt.empty())
    out.push_back(trCondition("Schedulable", "Pods belonging to task resource group can be bound",
                              schedulableAt));
  return out;
}

void SimAgent::createTaskResource(const std::string& task, Task& t) {
  t.reserving = true;
  const std::string at = now();
  t.reservingAt = at;
  const json party = ownParty(t);
  json pods = json::array();
  for (int i = 0; i < config_.podsPerParty; ++i)
    pods.push_back({{"name", podName(task, party, i)}, {"resources", json::object()}});
  json tr = {{"apiVersion", "kuscia.secretflow/v1alpha1"},
             {"kind", "TaskResource"},
             {"metadata",
              {{"name", taskResourceName(task)},
               {"namespace", domain_},
               {"labels", {{"kuscia.secretflow/task-resource-group-uid", t.uid}}},
               {"annotations",
                {{"kuscia.secretflow/initiator", t.initiator},
                 {model::kTaskIdAnnotation, task},
                 {"kuscia.secretflow/task-resource-group", task}}}}},
             {"spec",
              {{"minReservedPods", config_.podsPerParty},
               {"resourceReservedSeconds", 30},
               {"initiator", t.initiator},
               {"pods", pods}}},
             {"status",
              {{"phase", "Reserving"},
               {"startTime", at},
               {"lastTransitionTime", at},
               {"conditions", reservationConditions(t)}}}};
  sdk::KubeRequest r;
  r.verb = KH_KUBE_CREATE;
  r.group = model::kKusciaGroup;
  r.version = model::kKusciaVersion;
  r.resource = "taskresources";
  r.namespaceName = domain_;
  r.body = tr.dump();
  send(r);
  // p2p, the initiator's cluster: a stub for each partner (no pods), which the interconnection
  // moves from the partner's summary.
  if (p2p_ && t.initiator == domain_)
    for (const auto& p : t.parties) {
      const std::string party = p.is_object() ? p.value("domainID", "") : "";
      if (party.empty() || party == domain_) continue;
      json stub = tr;
      stub["metadata"]["name"] = task + "-" + party;
      stub["metadata"]["namespace"] = party;
      stub["metadata"]["labels"]["kuscia.secretflow/interconn-protocol-type"] = "kuscia";
      stub["metadata"]["annotations"]["kuscia.secretflow/interconn-kuscia-parties"] = party;
      stub["spec"]["pods"] = json::array();
      stub["status"] = {{"phase", "Reserving"}, {"startTime", at}, {"lastTransitionTime", at}};
      r.namespaceName = party;
      r.body = stub.dump();
      send(r);
    }
  // A party whose pods the scheduler cannot place never reserves.
  if (t.fault == "unschedulable" && t.faultParty == domain_) return;
  try {
    timers_[host().startTimer(static_cast<uint64_t>(delay(config_.reserveMillis)), 0, kReserve)] =
        task;
  } catch (const sdk::HostError&) {
  }
}

void SimAgent::reserve(const std::string& task) {
  auto it = tasks_.find(task);
  if (it == tasks_.end() || model::finishedPhase(it->second.phase)) return;
  // Its create has not come back yet (a loaded host): a patch now would find nothing. Again
  // shortly.
  if (taskResources_.count(domain_ + "/" + taskResourceName(task)) == 0) {
    try {
      timers_[host().startTimer(50, 0, kReserve)] = task;
    } catch (const sdk::HostError&) {
    }
    return;
  }
  const std::string at = now();
  it->second.reservedAt = at;
  // As kuscia-scheduler's PreBind writes it (the Reserving condition kept, Reserved added).
  send(taskResourcePatch(domain_, taskResourceName(task),
                         {{"phase", "Reserved"},
                          {"lastTransitionTime", at},
                          {"conditions", reservationConditions(it->second)}}));
  if (p2p_) Interconn::reserved(task, domain_, at); // into the summary
}

void SimAgent::onTaskResource(const sdk::Event& e) {
  const std::string key(e.key);
  if (e.type == KH_EVENT_DELETED) {
    taskResources_.erase(key);
    return;
  }
  json f = model::parseFields(e.fieldsJson, 2);
  Reservation& r = taskResources_[key];
  r.task = model::fieldString(f, 0);
  r.phase = model::fieldString(f, 1);
  auto t = tasks_.find(r.task);
  if (r.task.empty() || t == tasks_.end() || !t->second.mine) return;
  const std::string mine = domain_ + "/" + taskResourceName(r.task);
  auto own = taskResources_.find(mine);
  if (own == taskResources_.end()) return;
  if (own->second.phase == "Reserved") {
    // Every party of the task Reserved (or already Schedulable): the group lets the pods bind.
    std::size_t reserved = 0;
    for (const auto& [k, other] : taskResources_)
      reserved +=
          other.task == r.task && (other.phase == "Reserved" || other.phase == "Schedulable");
    if (reserved >= t->second.parties.size()) {
      const std::string at = now();
      own->second.phase = "Schedulable"; // decided once; its event confirms it
      send(taskResourcePatch(domain_, taskResourceName(r.task),
                             {{"phase", "Schedulable"},
                              {"lastTransitionTime", at},
                              {"completionTime", at},
                              {"conditions", reservationConditions(t->second, at)}}));
      // p2p: the group makes the stubs Schedulable too, and the summary tells the partners.
      if (p2p_) {
        for (const auto& [k, other] : taskResources_)
          if (other.task == r.task && k != mine)
            send(taskResourcePatch(std::string(model::namespaceOf(k)),
                                   std::string(model::nameOf(k)),
                                   {{"phase", "Schedulable"}, {"lastTransitionTime", at}}));
        Interconn::schedulable(r.task, at);
      }
    }
    return;
  }
  if (own->second.phase != "Schedulable" || key != mine) return;
  // Bound: this domain's pods of the task that wait for it.
  for (auto& [podKey, p] : pods_)
    if (p.task == r.task && p.namespaceName == domain_ && p.stage == Stage::kCreated &&
        p.timer == 0 && !p.stalled)
      step(podKey);
}

void SimAgent::onStart() {
  // p2p: what the interconnection brings from the other clusters, looked at ten times a second.
  if (p2p_ && config_.reserveMillis >= 0) host().startTimer(100, 100, kInterconn);
}

void SimAgent::interconnect() {
  for (auto& [task, t] : tasks_) {
    if (!t.mine || !t.reserving || model::finishedPhase(t.phase)) continue;
    if (t.initiator == domain_) {
      // The initiator's cluster: a partner's stub moves as that party's summary says.
      for (const auto& p : t.parties) {
        const std::string party = p.is_object() ? p.value("domainID", "") : "";
        if (party.empty() || party == domain_) continue;
        auto stub = taskResources_.find(party + "/" + task + "-" + party);
        auto at = Interconn::reservedAt(task, party);
        if (stub == taskResources_.end() || stub->second.phase != "Reserving" || !at) continue;
        stub->second.phase = "Reserved"; // sent once; its event confirms it
        send(taskResourcePatch(party, task + "-" + party,
                               {{"phase", "Reserved"}, {"lastTransitionTime", *at}}));
      }
      continue;
    }
    // A partner's cluster: its TaskResource becomes Schedulable when the initiator's group said.
    auto own = taskResources_.find(domain_ + "/" + taskResourceName(task));
    auto at = Interconn::schedulableAt(task);
    if (own == taskResources_.end() || own->second.phase != "Reserved" || !at) continue;
    own->second.phase = "Schedulable";
    send(taskResourcePatch(domain_, taskResourceName(task),
                           {{"phase", "Schedulable"},
                            {"lastTransitionTime", *at},
                            {"completionTime", *at},
                            {"conditions", reservationConditions(t, *at)}}));
  }
}

void SimAgent::failPreCheck(const std::string& task, Task& t) {
  // The task controller of the cluster whose pre-check fails: the party's own in p2p (each
  // cluster runs its task), the initiator's in centralized (one controller for every party).
  const bool checks = p2p_ ? t.faultParty == domain_ : t.initiator == domain_;
  const bool partner = p2p_ && t.faultParty != domain_;
  if (!(checks || partner) || model::finishedPhase(t.phase)) return;
  std::string other;
  for (const auto& p : t.parties)
    if (other.empty() && p.is_object() && p.value("domainID", "") != t.faultParty)
      other = p.value("domainID", "");
  if (checks && routeGoesDown(task, t, other)) return;
  json failed = json::array();
  for (const auto& p : t.parties)
    if (p.is_object())
      failed.push_back({{"domainID", p.value("domainID", "")}, {"phase", "Failed"}});
  const json ports = {
      {"type", "PortsAllocated"}, {"status", "True"}, {"lastTransitionTime", now()}};
  t.phase = "Failed";
  if (partner) {
    // As Kuscia's task controller words it once the partner's Failed party arrives
    // (kt/handler/pending_handler.go:258-280).
    return send(model::taskStatusPatch(
        config_.taskNamespace, task,
        {{"phase", "Failed"},
         {"startTime", now()},
         {"message", "The remaining no-failed party task counts " +
                         std::to_string(t.parties.size() - 1) +
                         " are less than the task success threshold " +
                         std::to_string(t.parties.size()) + ". failed party[" + t.faultParty + "]"},
         {"completionTime", now()},
         {"lastReconcileTime", now()},
         {"partyTaskStatus", failed}}));
  }
  // W1 (ports), then the fifth attempt's failKusciaTask and the Failed handler's completionTime
  // (kt/controller.go:598-631): about 0.1 s apart upstream, one write here. Two writes in a row
  // may land in either order (the host sends requests concurrently), and a Pending landing last
  // would undo the failure.
  const std::string error =
      "cdr-check " + other + " to " + t.faultParty + " failed with HeartBeatTimeout";
  send(
      model::taskStatusPatch(config_.taskNamespace, task,
                             {{"phase", "Failed"},
                              {"startTime", now()},
                              {"allocatedPorts", allocatedPorts(task, t)},
                              {"message", "KusciaTask failed after 3x retry, last error: " + error},
                              {"conditions", json::array({ports,
                                                          {{"type", "ResourceCreated"},
                                                           {"status", "False"},
                                                           {"reason", "KusciaTaskCreateFailed"},
                                                           {"message", error},
                                                           {"lastTransitionTime", now()}}})},
                              {"completionTime", now()},
                              {"lastReconcileTime", now()},
                              {"partyTaskStatus", failed}}));
}

bool SimAgent::routeGoesDown(const std::string& task, Task& t, const std::string& source) {
  if (t.routeTimer) return true;
  if (t.routeStage >= 2) return false;
  const std::string name = source + "-" + t.faultParty;
  if (t.routeStage == 0) {
    sdk::KubeRequest r;
    r.verb = KH_KUBE_CREATE;
    r.group = "kuscia.secretflow";
    r.version = "v1alpha1";
    r.resource = "clusterdomainroutes";
    r.body = json{{"apiVersion", "kuscia.secretflow/v1alpha1"},
                  {"kind", "ClusterDomainRoute"},
                  {"metadata",
                   {{"name", name},
                    {"labels",
                     {{"kuscia.secretflow/clusterdomainroute-source", source},
                      {"kuscia.secretflow/clusterdomainroute-destination", t.faultParty}}}}},
                  {"spec",
                   {{"source", source},
                    {"destination", t.faultParty},
                    {"interConnProtocol", "kuscia"},
                    {"authenticationType", "Token"}}}}
                 .dump();
    send(r); // 409 when an earlier task made it: it is there
  } else {
    // The CDR controller's sync that finds the partner's heartbeat missing
    // (cdr/domainroute.go:155-184): Ready False, stamped now.
    const std::string at = now();
    send(model::kusciaMergePatch("clusterdomainroutes", "", name, "status",
                                 json{{"status",
                                       {{"conditions",
                                         {{{"type", "Ready"},
                                           {"status", "False"},
                                           {"reason", "HeartBeatTimeout"},
                                           {"message", "HeartBeatTimeout"},
                                           {"lastUpdateTime", at},
                                           {"lastTransitionTime", at}}}}}}}
                                     .dump()));
  }
  ++t.routeStage;
  t.routeTimer = true;
  timers_[host().startTimer(static_cast<uint64_t>(config_.scheduleMillis), 0, kRoute)] = task;
  return true;
}

void SimAgent::createPod(const std::string& task, const Task& t, int index) {
  const json party = ownParty(t);
  std::string role = party.is_object() ? party.value("role", "") : "";
  std::string name = podName(task, party, index);
  std::string identity = t.uid + (role.empty() ? "" : "-" + role) + "-" + std::to_string(index);
  json ports = json::array();
  for (std::size_t i = 0; i < config_.ports.size(); ++i)
    ports.push_back({{"name", config_.ports[i].name},
                     {"containerPort", 20000 + static_cast<int>(i)},
                     {"protocol", "TCP"}});
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name},
        {"namespace", domain_},
        {"labels",
         {{"kuscia.secretflow/controller", "kusciatask"},
          {"kuscia.secretflow/task-uid", t.uid},
          {"kuscia.secretflow/pod-identity", identity},
          {"kuscia.secretflow/pod-role", role},
          {"kuscia.secretflow/communication-role-server", "true"},
          {"kuscia.secretflow/communication-role-client", "true"}}},
        {"annotations",
         {{"kuscia.secretflow/initiator", t.initiator},
          {model::kTaskIdAnnotation, task},
          {"kuscia.secretflow/task-resource-group", task},
          {"kuscia.secretflow/task-resource", task + "-" + domain_}}}}},
      {"spec",
       {{"schedulerName", "kuscia-scheduler"},
        {"nodeSelector", {{"kuscia.secretflow/namespace", domain_}}},
        {"restartPolicy", "Never"},
        {"containers",
         {{{"name", "secretflow"},
           {"image", party.is_object() ? party.value("appImageRef", "secretflow") : "secretflow"},
           {"ports", ports}}}}}}};
  sdk::KubeRequest r;
  r.verb = KH_KUBE_CREATE;
  r.version = "v1";
  r.resource = "pods";
  r.namespaceName = domain_;
  r.body = pod.dump();
  try {
    creates_[host().kubeRequest(r)] = domain_ + "/" + name;
  } catch (const sdk::HostError& e) {
    creating_.erase(domain_ + "/" + name);
    host().debug("pod " + name + " not created: " + e.what());
  }
}

void SimAgent::createServices(const std::string& pod, const std::string& podUid,
                              const std::string& task) {
  for (std::size_t i = 0; i < config_.ports.size(); ++i) {
    const PortSpec& port = config_.ports[i];
    std::string name = pod + "-" + port.name;
    if (!name.empty() && std::isdigit(static_cast<unsigned char>(name[0]))) name = "svc-" + name;
    if (name.size() > 63) { // as Kuscia: a stable hash of the long name
      char hash[17];
      std::snprintf(hash, sizeof hash, "%016llx",
                    static_cast<unsigned long long>(std::hash<std::string>{}(name)));
      name = name.substr(0, 46) + "-" + hash;
    }
    std::string key = domain_ + "/" + name;
    if (services_.count(key) > 0 || !creating_.insert(key).second) continue;
    json labels = {{"kuscia.secretflow/port-name", port.name},
                   {"kuscia.secretflow/port-scope", port.scope},
                   {"kuscia.secretflow/task-uid", tasks_[task].uid}};
    if (port.scope != "Domain") labels["kuscia.secretflow/loadbalancer"] = "domainroute";
    std::string access;
    for (const auto& p : tasks_[task].parties)
      if (p.is_object()) access += (access.empty() ? "" : ",") + p.value("domainID", "");
    json svc = {{"apiVersion", "v1"},
                {"kind", "Service"},
                {"metadata",
                 {{"name", name},
                  {"namespace", domain_},
                  {"labels", labels},
                  {"annotations",
                   {{"kuscia.secretflow/initiator", tasks_[task].initiator},
                    {"kuscia.secretflow/protocol", "GRPC"},
                    {"kuscia.secretflow/access-domain", access},
                    {model::kTaskIdAnnotation, task}}},
                  {"ownerReferences",
                   {{{"apiVersion", "v1"},
                     {"kind", "Pod"},
                     {"name", pod},
                     {"uid", podUid},
                     {"controller", true},
                     {"blockOwnerDeletion", true}}}}}},
                {"spec",
                 {{"clusterIP", "None"},
                  {"publishNotReadyAddresses", true},
                  {"selector", {{"kuscia.secretflow/pod-identity", ""}}},
                  {"ports",
                   {{{"name", port.name},
                     {"port", 20000 + static_cast<int>(i)},
                     {"protocol", "TCP"},
                     {"targetPort", 20000 + static_cast<int>(i)}}}}}}};
    sdk::KubeRequest r;
    r.verb = KH_KUBE_CREATE;
    r.version = "v1";
    r.resource = "services";
    r.namespaceName = domain_;
    r.body = svc.dump();
    try {
      creates_[host().kubeRequest(r)] = key;
    } catch (const sdk::HostError&) {
      creating_.erase(key);
    }
  }
}

void SimAgent::onPod(const sdk::Event& e) {
  std::string key(e.key);
  if (e.type == KH_EVENT_DELETED) {
    pods_.erase(key);
    return;
  }
  json f = model::parseFields(e.fieldsJson, kPodFieldCount);
  Pod& p = pods_[key];
  bool known = !p.uid.empty();
  p.uid = std::string(e.uid);
  p.task = model::fieldString(f, kPodTask);
  p.namespaceName = std::string(model::namespaceOf(key));
  p.name = std::string(model::nameOf(key));
  const json& conds = f[kPodConditions];
  p.conditions = conds.is_array() ? conds.dump() : "[]";
  p.phase = model::fieldString(f, kPodPhase);
  p.said = kusciaPodStatus(f);
  if (auto t = tasks_.find(p.task); t != tasks_.end() && t->second.faultParty == p.namespaceName)
    p.fault = t->second.fault;
  // A fault that waits for good: unschedulable, or the image that cannot be pulled.
  p.stalled = false;
  if (const json* c = model::findCondition(conds, "PodScheduled");
      c != nullptr && c->value("status", "") == "False")
    p.stalled = true;
  if (f[kPodContainers].is_array())
    for (const auto& c : f[kPodContainers]) {
      const std::string waiting =
          textOf(c.value("state", json::object()).value("waiting", json::object()), "reason");
      p.stalled = p.stalled || waiting == "ErrImagePull" || waiting == "ImagePullBackOff";
    }
  auto isTrue = [&](const char* type) {
    const json* c = model::findCondition(conds, type);
    return c != nullptr && c->value("status", "") == "True";
  };
  bool running = false;
  if (f[kPodContainers].is_array())
    for (const auto& c : f[kPodContainers])
      if (c.is_object() && c.contains("state") && c["state"].is_object() &&
          c["state"].contains("running")) {
        running = true;
        const json& r = c["state"]["running"];
        if (r.is_object() && r.contains("startedAt") && r["startedAt"].is_string())
          p.startedAt = r["startedAt"].get<std::string>();
      }
  if (p.phase == "Failed")
    p.stage = Stage::kFailed;
  else if (isTrue("Ready"))
    p.stage = Stage::kReady;
  else if (running)
    p.stage = Stage::kRunning;
  else if (!model::fieldString(f, kPodStart).empty())
    p.stage = Stage::kStarted;
  else if (isTrue("PodScheduled"))
    p.stage = Stage::kScheduled;
  else
    p.stage = Stage::kCreated;
  if (p.namespaceName == domain_) {
    creating_.erase(key);
    if (!known && !p.task.empty()) createServices(p.name, p.uid, p.task);
    advance(key);
    writePodStatus(p);
  }
  if (!p.task.empty()) settlePhase(p.task);
}

void SimAgent::advance(const std::string& key) {
  Pod& p = pods_[key];
  if (p.stage == Stage::kFailed || p.stalled) return;
  // Where the party reserves, the pod is bound when its TaskResource becomes Schedulable
  // (onTaskResource), not after a delay; an unschedulable pod plays its fault as before.
  auto owner = tasks_.find(p.task);
  if (p.stage == Stage::kCreated && owner != tasks_.end() && reserves(owner->second) &&
      p.fault != "unschedulable")
    return;
  if (p.timer == 0 && p.stage != Stage::kReady) {
    int64_t ms = p.stage == Stage::kCreated     ? config_.scheduleMillis
                 : p.stage == Stage::kScheduled ? config_.startMillis
                 : p.stage == Stage::kStarted   ? config_.pullMillis
                                                : config_.readyMillis;
    try {
      p.timer = host().startTimer(static_cast<uint64_t>(delay(ms)), 0, kStep);
      timers_[p.timer] = key;
    } catch (const sdk::HostError&) {
    }
  }
  if (!p.endpoints && (p.stage == Stage::kRunning || p.stage == Stage::kReady)) {
    p.endpoints = true;
    try {
      timers_[host().startTimer(static_cast<uint64_t>(delay(config_.endpointsMillis)), 0,
                                kEndpoints)] = key;
    } catch (const sdk::HostError&) {
      p.endpoints = false;
    }
  }
}

void SimAgent::onTimer(uint64_t timerId, uint64_t userTag) {
  if (userTag == SimJobs::kApproveTag) return jobs_->onTimer(timerId);
  if (userTag == kInterconn) return interconnect();
  auto it = timers_.find(timerId);
  if (it == timers_.end()) return;
  std::string target = std::move(it->second);
  timers_.erase(it);
  if (userTag == kCleanup) return cleanup(target);
  if (userTag == kExpiry) return expire(target);
  if (userTag == kReserve) return reserve(target);
  if (userTag == kRoute) {
    if (auto t = tasks_.find(target); t != tasks_.end()) t->second.routeTimer = false;
    return ensure(target);
  }
  if (userTag == kFinish) {
    auto t = tasks_.find(target);
    if (t == tasks_.end()) return;
    t->second.finishTimer = 0;
    send(model::taskStatusPatch(
        config_.taskNamespace, target,
        {{"phase", "Succeeded"}, {"completionTime", now()}, {"lastReconcileTime", now()}}));
    return;
  }
  auto pod = pods_.find(target);
  if (pod == pods_.end()) return;
  if (userTag == kEndpoints) return writeEndpoints(target);
  pod->second.timer = 0;
  step(target);
}

void SimAgent::step(const std::string& key) {
  Pod& p = pods_[key];
  std::string t = now();
  sdk::KubeRequest r;
  r.version = "v1";
  r.resource = "pods";
  r.namespaceName = p.namespaceName;
  r.name = p.name;
  r.subresource = "status";
  json status;
  if (faultStep(p, t, status)) {
    r.body = json{{"status", status}}.dump();
    return send(r);
  }
  switch (p.stage) {
  case Stage::kCreated: {
    // The scheduler binds the pod to the domain's node.
    sdk::KubeRequest bind = r;
    bind.subresource.clear();
    bind.body = json{{"spec", {{"nodeName", domain_ + "-node-0"}}}}.dump();
    send(bind);
    status = {{"conditions", withConditions(json::parse(p.conditions),
                                            json::array({condition("PodScheduled", t)}))}};
    break;
  }
  case Stage::kScheduled:
    if (std::uniform_real_distribution<double>(0, 1)(rng_) < config_.failureRate) {
      recordEvent(p, "Failed", "Failed to pull image \"secretflow\": simulated", t, "Warning");
      status = {{"phase", "Failed"},
                {"reason", config_.failureReason},
                {"message", "simulated: the container failed to start"},
                {"startTime", t},
                {"containerStatuses",
                 {{{"name", "secretflow"},
                   {"ready", false},
                   {"restartCount", 0},
                   {"image", "secretflow"},
                   {"state", {{"waiting", {{"reason", config_.failureReason}}}}}}}}};
      break;
    }
    // The agent accepted the pod; the sandbox is up and the image is being pulled.
    status = {{"phase", "Pending"},
              {"startTime", t},
              {"hostIP", "172.18.0.2"},
              {"podIP", "10.42.0." + std::to_string(1 + rng_() % 250)},
              {"conditions", withConditions(json::parse(p.conditions),
                                            json::array({condition("Initialized", t)}))},
              {"containerStatuses", json::array({creatingContainer()})}};
    recordEvent(p, "Pulling", "Pulling image \"secretflow\"", t);
    break;
  case Stage::kStarted: {
    char pulled[96];
    std::snprintf(pulled, sizeof pulled, "Successfully pulled image \"secretflow\" in %.3fs",
                  static_cast<double>(config_.pullMillis) / 1000);
    recordEvent(p, "Pulled", pulled, t);
    recordEvent(p, "Created", "Created container secretflow", t);
    recordEvent(p, "Started", "Started container secretflow", t);
    status = {{"phase", "Running"},
              {"containerStatuses", json::array({runningContainer(false, t)})}};
    break;
  }
  case Stage::kRunning:
    status = {{"conditions", withConditions(json::parse(p.conditions),
                                            json::array({condition("Ready", t),
                                                         condition("ContainersReady", t)}))},
              {"containerStatuses",
               json::array({runningContainer(true, p.startedAt.empty() ? t : p.startedAt)})}};
    break;
  case Stage::kReady:
  case Stage::kFailed: return;
  }
  r.body = json{{"status", status}}.dump();
  send(r);
}

void SimAgent::writeEndpoints(const std::string& key) {
  const Pod& p = pods_[key];
  for (std::size_t i = 0; i < config_.ports.size(); ++i) {
    std::string name = p.name + "-" + config_.ports[i].name;
    json ep = {{"apiVersion", "v1"},
               {"kind", "Endpoints"},
               {"metadata", {{"name", name}, {"namespace", p.namespaceName}}},
               {"subsets",
                {{{"addresses",
                   {{{"ip", "10.42.0.1"},
                     {"targetRef",
                      {{"kind", "Pod"},
                       {"namespace", p.namespaceName},
                       {"name", p.name},
                       {"uid", p.uid}}}}}},
                  {"ports",
                   {{{"name", config_.ports[i].name},
                     {"port", 20000 + static_cast<int>(i)},
                     {"protocol", "TCP"}}}}}}}};
    createObject("endpoints", p.namespaceName, ep);
  }
}

void SimAgent::createObject(const char* resource, const std::string& ns, const json& body) {
  sdk::KubeRequest r;
  r.verb = KH_KUBE_CREATE;
  r.version = "v1";
  r.resource = resource;
  r.namespaceName = ns;
  r.body = body.dump();
  send(r);
}

void SimAgent::recordEvent(const Pod& p, const std::string& reason, const std::string& message,
                           const std::string& at, const std::string& type) {
  char suffix[24];
  std::snprintf(suffix, sizeof suffix, ".%016llx",
                static_cast<unsigned long long>(rng_() ^ ++events_));
  json event = {{"apiVersion", "v1"},
                {"kind", "Event"},
                {"metadata", {{"name", p.name + suffix}, {"namespace", p.namespaceName}}},
                {"involvedObject",
                 {{"apiVersion", "v1"},
                  {"kind", "Pod"},
                  {"namespace", p.namespaceName},
                  {"name", p.name},
                  {"uid", p.uid}}},
                {"reason", reason},
                {"message", message},
                {"type", type},
                {"count", 1},
                {"source", {{"component", "sim-agent"}, {"host", domain_ + "-node-0"}}},
                {"reportingComponent", "sim-agent"},
                {"firstTimestamp", at},
                {"lastTimestamp", at}};
  createObject("events", p.namespaceName, event);
}

bool SimAgent::faultStep(Pod& p, const std::string& at, json& status) {
  if (p.fault == "unschedulable" && p.stage == Stage::kCreated) {
    const std::string why = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes "
                            "are available: 1 No preemption victims found for incoming pod.";
    json unscheduled = condition("PodScheduled", at);
    unscheduled["status"] = "False";
    unscheduled["reason"] = "Unschedulable";
    unscheduled["message"] = why;
    status = {
        {"phase", "Pending"},
        {"conditions", withConditions(json::parse(p.conditions), json::array({unscheduled}))}};
    recordEvent(p, "FailedScheduling", why, at, "Warning");
    return true;
  }
  if (p.fault == "image-missing" && p.stage == Stage::kScheduled) {
    const std::string image = "secretflow/secretflow-missing:1.11";
    recordEvent(p, "Pulling", "Pulling image \"" + image + "\"", at);
    recordEvent(p, "Failed",
                "Failed to pull image \"" + image +
                    "\": rpc error: code = NotFound desc = "
                    "failed to pull and unpack image \"" +
                    image + "\": not found",
                at, "Warning");
    recordEvent(p, "BackOff", "Back-off pulling image \"" + image + "\"", at);
    json waiting = creatingContainer();
    waiting["state"] = {{"waiting",
                         {{"reason", "ImagePullBackOff"},
                          {"message", "Back-off pulling image \"" + image + "\""}}}};
    status = {{"phase", "Pending"},
              {"startTime", at},
              {"hostIP", "172.18.0.2"},
              {"conditions", withConditions(json::parse(p.conditions),
                                            json::array({condition("Initialized", at)}))},
              {"containerStatuses", json::array({waiting})}};
    return true;
  }
  if ((p.fault == "oom" || p.fault == "crash" || p.fault == "peer-network") &&
      p.stage == Stage::kRunning) {
    status = {
        {"phase", "Failed"},
        {"containerStatuses",
         json::array({terminatedContainer(p.fault, p.startedAt.empty() ? at : p.startedAt, at)})}};
    return true;
  }
  return false;
}

void SimAgent::expire(const std::string& task) {
  auto it = tasks_.find(task);
  if (it == tasks_.end() || model::finishedPhase(it->second.phase)) return;
  Task& t = it->second;
  t.expiryTimer = 0;
  bool reserved = true;
  for (const auto& [key, p] : pods_)
    if (p.task == task) reserved = reserved && p.stage != Stage::kCreated;
  if (reserved) return;
  t.phase = "Failed";
  send(model::taskStatusPatch(
      config_.taskNamespace, task,
      {{"phase", "Failed"},
       {"reason", "TaskResourceGroupPhaseFailed"},
       {"message", "The task was not scheduled within " + std::to_string(t.lifecycleSeconds) +
                       " seconds of its entire lifecycle"},
       {"completionTime", now()},
       {"lastReconcileTime", now()}}));
}

json SimAgent::statusEntry(const Pod& p) {
  json entry = {{"namespace", p.namespaceName}, {"podName", p.name}, {"podPhase", p.phase}};
  entry.update(p.said); // nulls remove what no longer holds
  return entry;
}

void SimAgent::writePodStatus(Pod& p) {
  if (p.task.empty() || p.phase.empty()) return;
  const json entry = statusEntry(p);
  std::string text = entry.dump();
  if (text == p.written) return;
  p.written = std::move(text);
  send(model::taskStatusPatch(config_.taskNamespace, p.task,
                              {{"podStatuses", {{p.namespaceName + "/" + p.name, entry}}}}));
}

void SimAgent::cleanup(const std::string& task) {
  auto it = tasks_.find(task);
  if (it != tasks_.end()) {
    it->second.cleanupTimer = 0;
    it->second.cleaned = true;
  }
  auto remove = [this](const char* resource, const std::string& key) {
    sdk::KubeRequest r;
    r.verb = KH_KUBE_DELETE;
    r.version = "v1";
    r.resource = resource;
    r.namespaceName = std::string(model::namespaceOf(key));
    r.name = std::string(model::nameOf(key));
    send(r);
  };
  for (const auto& [key, p] : pods_)
    if (p.task == task && p.namespaceName == domain_) remove("pods", key);
  for (const auto& [key, owner] : services_)
    if (owner == task) remove("services", key);
  release(task);
}

void SimAgent::release(const std::string& task) {
  auto it = tasks_.find(task);
  if (it == tasks_.end()) return;
  // Finished and cleaned up: nothing of it is left for this agent to do while it stays finished.
  host().cacheRelease(taskSub_, config_.taskNamespace + "/" + task, it->second.resourceVersion,
                      [](const sdk::Object& o) {
                        return model::finishedPhase(
                            model::leadingStrings(o.fieldsJson, kPhase + 1)[kPhase]);
                      });
}

void SimAgent::settlePhase(const std::string& task) {
  auto it = tasks_.find(task);
  if (it == tasks_.end()) return;
  Task& t = it->second;
  if (!(p2p_ ? t.mine : t.initiator == domain_)) return;
  if (model::finishedPhase(t.phase)) return;
  std::size_t parties = 0;
  for (const auto& p : t.parties)
    parties += p.is_object() && (!p2p_ || p.value("domainID", "") == domain_);
  std::size_t expected = parties * static_cast<std::size_t>(config_.podsPerParty);
  std::size_t ready = 0;
  std::set<std::string> failed; // the parties of failed pods
  for (const auto& [key, p] : pods_) {
    if (p.task != task) continue;
    ready += p.stage == Stage::kReady;
    if (p.stage == Stage::kFailed) failed.insert(p.namespaceName);
  }
  if (!failed.empty()) {
    t.phase = "Failed";
    // As Kuscia's task controller words it (kt/handler/pending_handler.go:258-280).
    std::string names;
    for (const auto& party : failed)
      names += (names.empty() ? "" : " ") + party;
    const std::string message = "The remaining no-failed party task counts " +
                                std::to_string(parties - failed.size()) +
                                " are less than the task success threshold " +
                                std::to_string(parties) + ". failed party[" + names + "]";
    // In the same write, as Kuscia's controller refreshes podStatuses with the phase: what the
    // failed pods say.
    json podStatuses = json::object();
    for (const auto& [key, p] : pods_)
      if (p.task == task && p.stage == Stage::kFailed) podStatuses[key] = statusEntry(p);
    return send(model::taskStatusPatch(config_.taskNamespace, task,
                                       {{"phase", "Failed"},
                                        {"message", message},
                                        {"completionTime", now()},
                                        {"podStatuses", std::move(podStatuses)}}));
  }
  if (ready < expected || expected == 0) return;
  if (t.phase != "Running") {
    t.phase = "Running";
    send(model::taskStatusPatch(config_.taskNamespace, task,
                                {{"phase", "Running"}, {"lastReconcileTime", now()}}));
  }
  if (t.finishTimer == 0) {
    try {
      t.finishTimer = host().startTimer(static_cast<uint64_t>(config_.runMillis), 0, kFinish);
      timers_[t.finishTimer] = task;
    } catch (const sdk::HostError&) {
    }
  }
}

void SimAgent::onKubeResult(const sdk::KubeResult& r) {
  auto it = creates_.find(r.requestId);
  if (it == creates_.end()) {
    if (r.httpCode != 0 && (r.httpCode < 200 || r.httpCode > 299) && r.httpCode != 409)
      host().debug("write failed (" + std::to_string(r.httpCode) + "): " + std::string(r.message));
    return;
  }
  std::string key = std::move(it->second);
  creates_.erase(it);
  if (r.httpCode >= 200 && r.httpCode < 300) return; // the watch brings it
  creating_.erase(key);
  if (r.httpCode != 409 && r.httpCode != 0)
    host().warn("creating " + key + " failed (" + std::to_string(r.httpCode) +
                "): " + std::string(r.message));
}

} // namespace kuscia_host::plugins::sim
