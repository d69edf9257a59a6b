// sim-agent (embedded setups only): plays, for its domain, what a Kuscia deployment's task
// controller, scheduler, agent and endpoints controller do, so that the whole product runs on one
// machine. For each KusciaTask listing its domain as a party it creates the party's pods and
// services the way Kuscia does (names, labels, annotations, ownerReferences), then moves each pod
// through scheduled (spec.nodeName, PodScheduled=True), started (status.startTime, a Pulling
// Event), running (containers running, phase Running, Pulled, Created and Started Events) and
// ready (Ready and ContainersReady True), and fills the services' Endpoints, with delays drawn
// from its config (fixed, uniform or lognormal, seeded). Optionally some pods fail to start.
// Like Kuscia's task controller it keeps each of its pods' podPhase in the task's podStatuses
// current. The initiator's instance (every instance in p2p mode, where each cluster has its own
// copy) moves the task's phase Pending -> Running when all its pods are ready, and Succeeded
// after runMillis (Failed when a pod failed); with cleanupMillis set, a finished task's pods and
// services are deleted, as Kuscia does.
//
// A task annotated `sim.kuscia-host/fault: <party>=<kind>` has that party's pods play a fault the
// way Kubernetes and Kuscia show it (docs/design/failure.md): `unschedulable` (PodScheduled=False
// with the scheduler's message, a FailedScheduling Event; the task fails once its
// spec.scheduleConfig.lifecycleSeconds ran out, as Kuscia's TaskResourceGroup expires),
// `image-missing` (ErrImagePull, then ImagePullBackOff with their Events: the pod waits forever,
// as Kuscia lets it), `oom`, `crash` and `peer-network` (the container ends OOMKilled, with a
// traceback, or with the gateway's connection error in its log: the pod and the task fail), and
// `route-down` (the route between the initiator and the party is not Ready: that party's task
// controller fails the task at its route pre-check, before any pod, with Kuscia's `cdr-check
// <src> to <dst> failed with HeartBeatTimeout`; in p2p the other clusters' tasks fail as
// Kuscia's do when a partner failed, `failed party[<party>]`, here at once and without pods).
// Like Kuscia's task controller it copies each pod's reason, message and terminationLog into the
// task's podStatuses (kt/handler/common.go), which keeps them after the pods are deleted.
//
// With reserveMillis, each party's pods reserve through a TaskResource and are bound once every
// party's is Schedulable (in p2p through the initiator's stubs and the interconnection's summary:
// sim_interconn.h). It also plays Kuscia's kusciajob controller (sim_jobs.h): a KusciaJob's
// approval and its tasks.
//
// It is level-triggered like the others: a restarted host continues each pod from the stage its
// status shows.
#pragma once

#include <kuscia_host/plugin.hpp>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>

#include "sim_config.h"
#include "sim_jobs.h"

namespace kuscia_host::plugins::sim {

class SimAgent final : public sdk::Plugin {
public:
  SimAgent(sdk::Host host, std::string_view domain, std::string_view configJson);
  static void validateConfig(std::string_view configJson) { parseSimConfig(configJson); }

  void onStart() override;
  void onEvent(const sdk::Event& event) override;
  void onTimer(uint64_t timerId, uint64_t userTag) override;
  void onKubeResult(const sdk::KubeResult& result) override;

private:
  enum class Stage { kCreated, kScheduled, kStarted, kRunning, kReady, kFailed };
  struct Pod {
    std::string task, name, namespaceName, uid;
    Stage stage = Stage::kCreated;
    std::string conditions = "[]"; // as last seen (JSON): a merge patch replaces the whole list
    std::string phase;             // status.phase as last seen
    std::string startedAt;         // its container's start, kept when it becomes ready
    std::string written;           // the podStatuses entry last written (JSON)
    std::string fault;             // the fault it plays ("" none)
    bool stalled = false;          // waits for good (a fault): no next step
    nlohmann::json said;           // what Kuscia copies of it: reason, message, terminationLog
    bool endpoints = false;        // its services' Endpoints are written
    uint64_t timer = 0;            // the next step is scheduled
  };
  struct Task {
    std::string uid, initiator, phase, resourceVersion;
    std::string faultParty, fault; // its annotation's
    int64_t createNanos = 0, lifecycleSeconds = 300;
    uint64_t expiryTimer = 0;
    nlohmann::json parties = nlohmann::json::array();
    bool mine = false;        // lists this domain as a party
    uint64_t finishTimer = 0; // Running -> Succeeded
    // route-down: the route created (1), then found not ready (2), then the pre-check fails;
    // whether the next step's timer runs.
    int routeStage = 0;
    bool routeTimer = false;
    uint64_t cleanupTimer = 0;
    bool cleaned = false;
    bool reserving = false;              // this domain's TaskResource is created (reserveMillis)
    std::string reservingAt, reservedAt; // its conditions' times, kept as the group rewrites it
  };
  // A TaskResource as this instance sees it (every namespace): its task and phase.
  struct Reservation {
    std::string task, phase;
  };
  enum Tag : uint64_t {
    kStep = 1,
    kEndpoints = 2,
    kFinish = 3,
    kCleanup = 4,
    kExpiry = 5,
    kReserve = 6,
    kInterconn = 8,
    kRoute = 9
  };
  static_assert(SimJobs::kApproveTag == 7);

  void onTask(const sdk::Event& e);
  // The host may forget the task (ABI 1.3): it is finished and cleaned up.
  void release(const std::string& task);
  void onPod(const sdk::Event& e);
  // Creates what the task needs of this domain and is not there yet.
  void ensure(const std::string& task);
  void createPod(const std::string& task, const Task& t, int index);
  // route-down: the task fails at its route pre-check (this domain's task controller) or for
  // the partner whose pre-check failed (p2p), as Kuscia writes it. The checking domain first
  // creates the ClusterDomainRoute `<other>-<party>` and makes its Ready False
  // (HeartBeatTimeout), a phase apart, as the route's controller would: the route is down before
  // the task checks it.
  void failPreCheck(const std::string& task, Task& t);
  // The next step of the route going down; whether it is still going (the task checks it later).
  bool routeGoesDown(const std::string& task, Task& t, const std::string& source);
  // The task's party entry of this domain (null when it has none).
  nlohmann::json ownParty(const Task& t) const;
  // The task's status.allocatedPorts as this domain's task controller writes it.
  nlohmann::json allocatedPorts(const std::string& task, const Task& t) const;
  // This domain's TaskResource's conditions, each with its time kept (Schedulable when given).
  static nlohmann::json reservationConditions(const Task& t, const std::string& schedulableAt = "");
  // reserveMillis: whether the task's pods reserve through TaskResources.
  bool reserves(const Task& t) const;
  // Creates this domain's TaskResource of the task, Reserving, and its reservation's timer (p2p,
  // the initiator's cluster: and a stub of each partner's).
  void createTaskResource(const std::string& task, Task& t);
  // kuscia-scheduler reserved the party's pods: Reserved.
  void reserve(const std::string& task);
  // A TaskResource changed: once every party's is Reserved this domain's becomes Schedulable
  // (as the group makes them all), and once it is, this domain's pods of the task are bound.
  void onTaskResource(const sdk::Event& e);
  // p2p: what the interconnection brought from the other clusters (sim_interconn.h): the
  // initiator's stubs Reserved as their parties reserved, a partner's TaskResource Schedulable
  // as the initiator's group decided.
  void interconnect();
  std::string taskResourceName(const std::string& task) const { return task + "-" + domain_; }
  void createServices(const std::string& pod, const std::string& podUid, const std::string& task);
  // Schedules the next step of the pod after its delay, unless one is scheduled.
  void advance(const std::string& key);
  void step(const std::string& key);
  void writeEndpoints(const std::string& key);
  // Creates a core (v1) object; the answer does not matter (the watch brings it).
  void createObject(const char* resource, const std::string& ns, const nlohmann::json& body);
  // An Event on the pod, as kubelet records it.
  void recordEvent(const Pod& p, const std::string& reason, const std::string& message,
                   const std::string& at, const std::string& type = "Normal");
  // The pod's podPhase, reason, message and terminationLog in the task's podStatuses, as
  // Kuscia's task controller keeps them.
  void writePodStatus(Pod& p);
  // Its podStatuses entry: podPhase and what Kuscia copies of the pod (null: no longer said).
  static nlohmann::json statusEntry(const Pod& p);
  // The fault step of a pod that plays one; false when it has none at this stage.
  bool faultStep(Pod& p, const std::string& at, nlohmann::json& status);
  // The task's lifecycle ran out: Failed, as Kuscia's TaskResourceGroup expires, unless every
  // pod was scheduled (then it was reserved, and nothing expires).
  void expire(const std::string& task);
  // Deletes a finished task's pods and services of this domain (after cleanupMillis).
  void cleanup(const std::string& task);
  // The task's phase from its pods: Running, then Succeeded after runMillis, or Failed.
  void settlePhase(const std::string& task);
  int64_t delay(int64_t millis);
  void send(const sdk::KubeRequest& r);
  std::string podName(const std::string& task, const nlohmann::json& party, int index) const;
  std::string now() const;

  SimConfig config_;
  std::string domain_;
  std::optional<SimJobs> jobs_; // the KusciaJobs' controller
  bool p2p_ = false;
  uint64_t taskSub_ = 0, podSub_ = 0, serviceSub_ = 0, taskResourceSub_ = 0;
  std::map<std::string, Reservation> taskResources_; // "<ns>/<name>"
  std::map<std::string, Task> tasks_;
  std::map<std::string, Pod> pods_;             // "<ns>/<name>", every namespace (all parties)
  std::map<std::string, std::string> services_; // "<ns>/<name>" of this domain -> task
  std::set<std::string> creating_;              // objects whose create is in flight
  std::map<uint64_t, std::string> timers_;      // timer id -> pod key or task
  std::map<uint64_t, std::string> creates_;     // request id -> pod key being created
  std::mt19937_64 rng_;
  uint64_t events_ = 0; // Events recorded (their names' suffix)
};

} // namespace kuscia_host::plugins::sim
