// Kuscia's control-plane objects (kuscia_model/control_plane.h) read from the reference's example
// objects (tests/fixtures/control-plane: one p2p story of job-psi-1, initiator alice, in which
// bob's route pre-check fails), and the cases the story does not show.
#include <kuscia_host/kube_text.hpp>
#include <kuscia_model/control_plane.h>

#include <gtest/gtest.h>

#include "kuscia_fixtures.h"

namespace kuscia_host::model::control {
namespace {

using nlohmann::json;

json example(const std::string& name) {
  return test::fixture("control-plane/" + name + ".json");
}

int64_t at(const char* time) {
  return *sdk::parseTime(time);
}

TEST(ControlPlaneTest, ATaskResourceSaysWhenItsPartyReserved) {
  TaskResource alice = taskResourceOf(example("alice-cluster.taskresource-alice-reserved"));
  EXPECT_EQ(alice.key, "alice/job-psi-1-task-0-58e875f877a2");
  EXPECT_EQ(alice.party, "alice");
  EXPECT_EQ(alice.task, "job-psi-1-task-0");
  EXPECT_EQ(alice.phase, "Reserved");
  EXPECT_FALSE(alice.stub);
  EXPECT_EQ(alice.start, at("2024-05-20T09:00:06Z"));
  EXPECT_EQ(alice.reserved, at("2024-05-20T09:00:07Z"));
  EXPECT_FALSE(alice.schedulable);
  // bob's stub in alice's cluster: no pods, still reserving.
  TaskResource bob = taskResourceOf(example("alice-cluster.taskresource-bob-reserving"));
  EXPECT_EQ(bob.party, "bob");
  EXPECT_TRUE(bob.stub);
  EXPECT_EQ(bob.phase, "Reserving");
  EXPECT_FALSE(bob.reserved);
  // Later: the group made it Schedulable (its condition), and the interconnection moved bob's
  // stub to Reserved without a condition (the summary's lastTransitionTime).
  json later = example("alice-cluster.taskresource-alice-reserved");
  later["status"]["phase"] = "Schedulable";
  later["status"]["conditions"].push_back({{"type", "Schedulable"},
                                           {"status", "True"},
                                           {"reason", "Pods belonging to task resource group "
                                                      "can be bound"},
                                           {"lastTransitionTime", "2024-05-20T09:00:12Z"}});
  EXPECT_EQ(taskResourceOf(later).schedulable, at("2024-05-20T09:00:12Z"));
  EXPECT_EQ(taskResourceOf(later).reserved, at("2024-05-20T09:00:07Z"));
  json stub = example("alice-cluster.taskresource-bob-reserving");
  stub["status"]["phase"] = "Reserved";
  stub["status"]["lastTransitionTime"] = "2024-05-20T09:00:11Z";
  EXPECT_EQ(taskResourceOf(stub).reserved, at("2024-05-20T09:00:11Z"));
  // A retry turns Reserved False: the party has not reserved (any more).
  json retry = example("alice-cluster.taskresource-alice-reserved");
  retry["status"]["phase"] = "Reserving";
  retry["status"]["conditions"][1]["status"] = "False";
  EXPECT_FALSE(taskResourceOf(retry).reserved);
  // Failed, with kuscia-scheduler's text.
  json failed = example("alice-cluster.taskresource-alice-reserved");
  failed["status"]["phase"] = "Failed";
  failed["status"]["conditions"].push_back(
      {{"type", "Failed"},
       {"status", "True"},
       {"reason", "schedule task resource alice/t related pod alice/p failed"},
       {"lastTransitionTime", "2024-05-20T09:00:40Z"}});
  TaskResource f = taskResourceOf(failed);
  EXPECT_FALSE(f.reserved);
  EXPECT_EQ(f.failed, at("2024-05-20T09:00:40Z"));
  EXPECT_EQ(f.failedReason, "schedule task resource alice/t related pod alice/p failed");
}

TEST(ControlPlaneTest, TheGroupSaysItsPartiesItsLifecycleAndWhyItFailed) {
  TaskResourceGroup g = taskResourceGroupOf(example("alice-cluster.taskresourcegroup"));
  EXPECT_EQ(g.task, "job-psi-1-task-0");
  EXPECT_EQ(g.phase, "Reserving");
  EXPECT_EQ(g.minReservedMembers, 2);
  EXPECT_EQ(g.lifecycleSeconds, 300);
  EXPECT_EQ(g.parties, std::vector<std::string>{"alice"});
  EXPECT_EQ(g.otherParties, std::vector<std::string>{"bob"});
  EXPECT_EQ(g.created, at("2024-05-20T09:00:06Z"));
  EXPECT_FALSE(g.reserved);
  EXPECT_FALSE(g.expired);
  EXPECT_TRUE(g.failedReasons.empty());
  json expired = example("alice-cluster.taskresourcegroup");
  expired["status"]["phase"] = "Failed";
  expired["status"]["conditions"].push_back(
      {{"type", "TaskResourceGroupExpired"},
       {"status", "True"},
       {"reason", "Task resource group exceed it's lifecycle"},
       {"lastTransitionTime", "2024-05-20T09:05:06Z"}});
  g = taskResourceGroupOf(expired);
  EXPECT_TRUE(g.expired);
  EXPECT_EQ(g.expiredAt, at("2024-05-20T09:05:06Z"));
  EXPECT_EQ(g.failedReasons, std::vector<std::string>{"Task resource group exceed it's lifecycle"});
}

TEST(ControlPlaneTest, AJobSaysWhoseApprovalItAwaitsAndItsTasks) {
  Job waiting = jobOf(example("alice-cluster.kusciajob-awaiting-approval"));
  EXPECT_EQ(waiting.name, "job-psi-1");
  EXPECT_EQ(waiting.phase, "AwaitingApproval");
  EXPECT_EQ(waiting.initiator, "alice");
  EXPECT_EQ(waiting.created, at("2024-05-20T09:00:00Z"));
  EXPECT_EQ(waiting.awaitingApproval(), std::vector<std::string>{"bob"});
  EXPECT_EQ(waiting.rejectedBy(), "");
  ASSERT_EQ(waiting.tasks.size(), 1u);
  EXPECT_EQ(waiting.tasks[0].alias, "psi");
  EXPECT_EQ(waiting.tasks[0].name, "job-psi-1-task-0");
  EXPECT_EQ(waiting.tasks[0].parties, (std::vector<std::string>{"alice", "bob"}));
  Job running = jobOf(example("alice-cluster.kusciajob-running"));
  EXPECT_EQ(running.phase, "Running");
  EXPECT_TRUE(running.awaitingApproval().empty());
  EXPECT_EQ(running.taskPhases.at("job-psi-1-task-0"), "Pending");
  EXPECT_EQ(running.maxParallelism, 1);
  json rejected = example("alice-cluster.kusciajob-awaiting-approval");
  rejected["status"]["approveStatus"]["bob"] = "JobRejected";
  EXPECT_EQ(jobOf(rejected).rejectedBy(), "bob");
}

TEST(ControlPlaneTest, ARouteSaysWhetherItIsReadyAndWhenItWasLastChecked) {
  Route r = routeOf(example("bob-cluster.clusterdomainroute-alice-bob"));
  EXPECT_EQ(r.name, "alice-bob");
  EXPECT_EQ(r.source, "alice");
  EXPECT_EQ(r.destination, "bob");
  ASSERT_TRUE(r.ready);
  EXPECT_FALSE(*r.ready);
  EXPECT_EQ(r.reason, "HeartBeatTimeout");
  EXPECT_EQ(r.checkedAt, at("2024-05-20T08:59:40Z"));
  EXPECT_FALSE(routeOf(json::object()).ready);
}

TEST(ControlPlaneTest, MalformedObjectsReadAsNothing) {
  for (const json& bad : {json(), json::array(), json("x"), json{{"metadata", 1}, {"status", 2}},
                          json{{"status", {{"conditions", "no"}}}}}) {
    EXPECT_EQ(taskResourceOf(bad).phase, "");
    EXPECT_FALSE(taskResourceOf(bad).reserved);
    EXPECT_TRUE(taskResourceGroupOf(bad).parties.empty());
    EXPECT_TRUE(jobOf(bad).tasks.empty());
    EXPECT_FALSE(routeOf(bad).ready);
  }
}

} // namespace
} // namespace kuscia_host::model::control
