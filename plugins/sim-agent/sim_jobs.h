// sim-agent's job controller: plays, for the KusciaJobs of the task namespace, what Kuscia's
// kusciajob controller (and, in p2p, the interconnection's approval) writes, with the object
// shapes and write order of docs/design/control-plane.md:
//  - a new job gets JobValidated, its own parties' stageStatus, startTime, and AwaitingApproval
//    with the initiator's JobAccepted when it awaits approval (p2p, as Kuscia's interconnection
//    jobs do, or when a party plays `approval-wait`), else Pending;
//  - each other party accepts after approveMillis (a party annotated `<party>=approval-wait` after
//    eight times that), as a partner cluster's auto-approval and the summary bring it; once every
//    party accepted the job is Pending, then Running;
//  - a Running job creates the KusciaTasks whose dependencies succeeded, at most maxParallelism
//    Pending or Running at once, named after their taskID with Kuscia's labels, annotations and
//    ownerReference (the job's `sim.kuscia-host/fault` copied on), keeps taskStatus current, and
//    ends Succeeded when every task did, Failed once one failed (its unfinished tasks stopped:
//    Failed, KusciaJobStopped).
// It runs in the initiator's instance (every instance in p2p, where each cluster has its own copy
// of the job) and is level-triggered: a restarted host continues each job from its status.
#pragma once

#include <kuscia_host/plugin.hpp>
#include <kuscia_model/control_plane.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>

namespace kuscia_host::plugins::sim {

class SimJobs {
public:
  // `taskNamespace`: where the jobs and their tasks are; `approveMillis`: a party's approval.
  SimJobs(sdk::Host host, std::string domain, bool p2p, std::string taskNamespace,
          int64_t approveMillis);
  uint64_t subscription() const { return sub_; }
  void onEvent(const sdk::Event& e);
  // A task's phase as the task subscription shows it ("" created, not written yet).
  void onTask(const std::string& task, const std::string& phase, bool deleted);
  // A timer of this controller (tag kApproveTag): a party accepts.
  void onTimer(uint64_t timerId);
  static constexpr uint64_t kApproveTag = 7;

private:
  // Its members' special functions are nothrow; clang-tidy cannot see it through std::set.
  struct Held { // NOLINT(bugprone-exception-escape)
    model::control::Job job;
    std::string uid, fault, faultParty, annotationFault;
    nlohmann::json spec;             // as the job has it
    std::set<std::string> approving; // parties whose acceptance is scheduled
    std::set<std::string> creating;  // tasks whose create is in flight
    bool ending = false;             // its end is written
  };
  bool runs(const Held& h) const;
  void reconcile(const std::string& name);
  void initialize(const std::string& name, Held& h);
  void approve(const std::string& name, Held& h);
  void run(const std::string& name, Held& h);
  void createTask(const std::string& name, Held& h, const nlohmann::json& task);
  void stopUnfinished(Held& h);
  void patchStatus(const std::string& name, const nlohmann::json& status);
  std::string now() const;

  sdk::Host host_;
  std::string domain_, namespace_;
  bool p2p_;
  int64_t approveMillis_;
  uint64_t sub_ = 0;
  std::map<std::string, Held> jobs_;
  std::map<std::string, std::string> taskPhases_;                  // created tasks
  std::map<uint64_t, std::pair<std::string, std::string>> timers_; // -> job, party
};

} // namespace kuscia_host::plugins::sim
