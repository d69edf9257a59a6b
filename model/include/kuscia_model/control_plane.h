// Kuscia's control plane before and around a task's pods, as upstream's controllers write it
// (docs/design/control-plane.md): the KusciaJob that creates the tasks (its approval and its
// queue), the TaskResourceGroup and each party's TaskResource (the gang reservation across
// parties), and the ClusterDomainRoute a task's pre-check reads. Each reader takes the object as
// the API server serves it (or a projection holding the same paths) and keeps the facts the
// timeline uses: the times Kuscia writes (a condition's lastTransitionTime, startTime,
// creationTimestamp), never one it does not.
#pragma once

#include <kuscia_host/plugin.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kuscia_host::model::control {

inline constexpr const char* kTaskResources = "taskresources";
inline constexpr const char* kTaskResourceGroups = "taskresourcegroups";
inline constexpr const char* kKusciaJobs = "kusciajobs";
inline constexpr const char* kClusterDomainRoutes = "clusterdomainroutes";

// One condition of a status (Kuscia's conditions carry no observedGeneration).
struct Condition {
  std::string type, status, reason, message;
  std::optional<int64_t> lastTransitionTime;
  bool isTrue() const { return status == "True"; }
};
// The conditions of `status` ("conditions": [...]), in order; none when absent or malformed.
std::vector<Condition> conditionsOf(const nlohmann::json& status);
// The condition of this type, nullptr when absent.
const Condition* conditionOf(const std::vector<Condition>& conditions, std::string_view type);

// A party's reservation: its TaskResource (namespace = the party's domain). Kuscia creates it
// Reserving; kuscia-scheduler's PreBind makes it Reserved once the party's minimum of pods is
// reserved; the group makes every TaskResource Schedulable once enough parties reserved, and only
// then are the pods bound. In p2p the initiator's cluster keeps a stub for each partner (no
// pods), which the interconnection moves from the KusciaTaskSummary.
struct TaskResource {
  std::string key;   // "<namespace>/<name>"
  std::string party; // its namespace
  std::string task;  // annotation kuscia.secretflow/task-id
  std::string phase; // Reserving, Reserved, Schedulable, Failed
  bool stub = false; // no pods of its own: a partner's, moved by the summary (p2p)
  // creationTimestamp; status.startTime (its creation, as Kuscia writes it).
  std::optional<int64_t> created, start;
  // The Reserved condition's time while it holds (it turns False when the group retries); for a
  // stub the interconnection moves without conditions, the phase's lastTransitionTime.
  std::optional<int64_t> reserved;
  // The Schedulable condition's time (or completionTime): every party reserved, pods may bind.
  std::optional<int64_t> schedulable;
  // Failed: the Failed condition's reason (kuscia-scheduler's and the group's texts) and time.
  std::string failedReason;
  std::optional<int64_t> failed;
};
TaskResource taskResourceOf(const nlohmann::json& object);
// The subscription to the instance's domain's TaskResources, projected to what taskResourceOf
// reads, and the TaskResource of such an event's fields ("<ns>/<name>" key, the fields' JSON).
sdk::Subscription taskResourceSubscription();
TaskResource taskResourceOfFields(std::string_view key, std::string_view fieldsJson);
// The subscription to the partners' stub TaskResources a p2p initiator's cluster keeps in the
// partners' namespaces (label kuscia.secretflow/interconn-protocol-type=kuscia, every namespace),
// with the same fields: a party whose pods this cluster does not hold still has its reservation.
sdk::Subscription partnerTaskResourceSubscription();
// The TaskResources of every namespace: each party's reservation the cluster holds (its own
// parties', and a p2p initiator's stubs of its partners), for a plugin that builds a task's whole
// document alone (model::DomainPods: otel-export, task-history), as task-timeline's instances
// of a host share their parties' through their entry board.
sdk::Subscription allTaskResourceSubscription();

// A party's reservation as its pods' entries carry it, in the order of kReservationTimes: when
// it began (the TaskResource's startTime, else its creation), when the party reserved, when
// every party had.
inline constexpr std::array<const char*, 3> kReservationTimes = {"reservingTime", "reservedTime",
                                                                 "schedulableTime"};
using ReservationTimes = std::array<std::optional<int64_t>, 3>;
ReservationTimes reservationTimesOf(const TaskResource& r);
// A party's reservation as a document's "partnerReservations" holds it: {"taskResource": key,
// and the times of kReservationTimes it has}.
nlohmann::json reservationJson(std::string_view key, const ReservationTimes& times);

// The reservation times of each task's parties, as the events of taskResourceSubscription() give
// them. A TaskResource's deletion (Kuscia deletes them with the group once the task succeeded)
// keeps its times: its pods still reserved when they did, until the owner forgets the task.
class Reservations {
public:
  // The task and the party whose times the event changed; nullopt when it changed none.
  std::optional<std::pair<std::string, std::string>> onEvent(const sdk::Event& e);
  // The task's party's times, nullptr when none is known.
  const ReservationTimes* of(const std::string& task, std::string_view party) const;
  // A document's "partnerReservations" (timeline_summary.h): the task's parties that `held` says
  // the document has no entries of, each with its TaskResource and times; {} when none.
  nlohmann::json partners(const std::string& task,
                          const std::function<bool(std::string_view party)>& held) const;
  void forget(const std::string& task);
  // Forgets every task that `keep` does not keep.
  void forgetUnless(const std::function<bool(const std::string& task)>& keep);

private:
  struct Held {
    std::string key; // its TaskResource's "<ns>/<name>"
    ReservationTimes times;
  };
  std::map<std::string, std::map<std::string, Held, std::less<>>> byTask_;
};

// The group of a task's reservations (cluster-scoped, named after the task).
struct TaskResourceGroup {
  std::string task;  // its name
  std::string phase; // Pending, Creating, Reserving, Reserved, ReserveFailed, Failed
  int minReservedMembers = 0;
  int64_t lifecycleSeconds = 300;
  std::vector<std::string> parties;       // whose pods this cluster holds
  std::vector<std::string> otherParties;  // outOfControlledParties: the partners' (p2p)
  std::optional<int64_t> created, start;  // creationTimestamp (expiry counts from it), startTime
  std::optional<int64_t> reserved;        // TaskResourcesReserved=True
  bool expired = false;                   // TaskResourceGroupExpired=True
  std::optional<int64_t> expiredAt;       // its time
  std::vector<std::string> failedReasons; // the reasons of its failure conditions that hold
};
TaskResourceGroup taskResourceGroupOf(const nlohmann::json& object);

// Whether a KusciaJob phase is final (Kuscia reconciles such a job no more).
inline bool finishedJobPhase(std::string_view phase) {
  return phase == "Succeeded" || phase == "Failed" || phase == "ApprovalReject" ||
         phase == "Cancelled";
}

// A job: its approval by the parties and its tasks' queue.
struct Job {
  std::string name, namespaceName, initiator, phase, reason, message;
  std::optional<int64_t> created, start, completion;
  // approveStatus: party -> JobAccepted | JobRejected (no time: Kuscia writes none).
  std::map<std::string, std::string> approvals;
  // taskStatus: task name -> its phase (tasks not created yet are absent).
  std::map<std::string, std::string> taskPhases;
  struct Task {
    std::string alias, name;               // name: taskID ("" until the initiator fills it)
    std::vector<std::string> dependencies; // aliases
    std::vector<std::string> parties;
  };
  std::vector<Task> tasks; // in the spec's order
  int maxParallelism = 1;
  // The parties whose approval is still awaited: every party of a task but the initiator, not
  // JobAccepted yet.
  std::vector<std::string> awaitingApproval() const;
  // The party that rejected the job, "" when none did.
  std::string rejectedBy() const;
};
Job jobOf(const nlohmann::json& object);

// A route between two domains (ClusterDomainRoute "<source>-<destination>").
struct Route {
  std::string name, source, destination;
  std::optional<bool> ready;   // its Ready condition, absent when not written yet
  std::string reason, message; // of Ready
  // Ready's lastTransitionTime: during an outage Kuscia re-stamps it at every sync, so it is
  // when the route was last found not ready, not when the outage began.
  std::optional<int64_t> checkedAt;
};
Route routeOf(const nlohmann::json& object);

} // namespace kuscia_host::model::control
