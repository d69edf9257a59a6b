// sim-agent through the fake host: the objects it creates for its party (as Kuscia would), the
// stages it moves each pod through after its delays, failures, and the task's phase.
#include "sim_agent.h"

#include <gtest/gtest.h>

#include <map>

#include "kuscia_fixtures.h"

namespace kuscia_host::plugins::sim {
namespace {

using nlohmann::json;
using test::deliver;
using test::fixture;

const kh_plugin_v1_t* descriptor() {
  return sdk::pluginDescriptor<SimAgent>("sim-agent");
}

json task() {
  json t = fixture("kusciatask.json");
  t.erase("status");
  return t;
}

// The request of `resource` and `verb` (and subresource), the last one sent.
const testing::FakeHost::RequestRecord* last(testing::FakeHost& host, const std::string& resource,
                                             kh_kube_verb_t verb, const std::string& sub = "") {
  const auto& all = host.requests();
  for (std::size_t i = all.size(); i-- > 0;)
    if (all[i].resource == resource && all[i].verb == verb && all[i].subresource == sub)
      return &all[i];
  return nullptr;
}

// Accepts the pod create and delivers the pod as the server would have it.
json acceptPod(testing::FakeHost& host) {
  const auto* r = last(host, "pods", KH_KUBE_CREATE);
  EXPECT_NE(r, nullptr);
  json pod = json::parse(r->body);
  pod["metadata"]["uid"] = "pod-uid-1";
  pod["metadata"]["resourceVersion"] = "10";
  pod["metadata"]["creationTimestamp"] = "2023-11-14T22:13:20Z";
  pod["status"] = {{"phase", "Pending"}};
  host.complete(r->id, 201, pod.dump());
  deliver(host, "pods", KH_EVENT_ADDED, pod);
  return pod;
}

TEST(SimConfigTest, DefaultsAndRejections) {
  auto c = parseSimConfig("{}");
  EXPECT_EQ(c.ports.size(), 3u);
  EXPECT_EQ(c.scheduleMillis, 1000);
  EXPECT_THROW(parseSimConfig(R"({"ports": "spu:Everywhere"})"), sdk::ConfigError);
  EXPECT_THROW(parseSimConfig(R"({"failureRate": 2})"), sdk::ConfigError);
  auto bad = testing::FakeHost::validateConfig(descriptor(), R"({"distribution": "normal"})");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->first, "distribution");
}

TEST(SimAgentTest, CreatesThePartysPodAndServicesAsKusciaDoes) {
  testing::FakeHost host("alice");
  ASSERT_TRUE(host.create(descriptor(), "{}")) << host.error();
  ASSERT_TRUE(host.start());
  deliver(host, "kusciatasks", KH_EVENT_ADDED, task());
  const auto* create = last(host, "pods", KH_KUBE_CREATE);
  ASSERT_NE(create, nullptr);
  EXPECT_EQ(create->namespaceName, "alice");
  json pod = json::parse(create->body);
  EXPECT_EQ(pod["metadata"]["name"], "secretflow-task-psi-0");
  EXPECT_EQ(pod["metadata"]["annotations"]["kuscia.secretflow/task-id"], "secretflow-task-psi");
  EXPECT_EQ(pod["metadata"]["labels"]["kuscia.secretflow/controller"], "kusciatask");
  EXPECT_EQ(pod["metadata"]["labels"]["kuscia.secretflow/pod-identity"],
            "7c0f2d6e-3b1a-4f5e-9a41-2f6d8e0b9c11-0");
  EXPECT_EQ(pod["spec"]["schedulerName"], "kuscia-scheduler");
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
  // The initiator's instance marks the task Pending.
  const auto* phase = last(host, "kusciatasks", KH_KUBE_PATCH, "status");
  ASSERT_NE(phase, nullptr);
  EXPECT_EQ(json::parse(phase->body)["status"]["phase"], "Pending");
  // As Kuscia's task controller: ports allocated, then its objects created (the task prepared).
  const json conditions = json::parse(phase->body)["status"]["conditions"];
  ASSERT_EQ(conditions.size(), 2u);
  EXPECT_EQ(conditions[1]["type"], "ResourceCreated");
  EXPECT_EQ(conditions[1]["status"], "True");
  acceptPod(host);
  std::vector<json> services;
  for (const auto& r : host.requests())
    if (r.resource == "services" && r.verb == KH_KUBE_CREATE)
      services.push_back(json::parse(r.body));
  ASSERT_EQ(services.size(), 3u);
  EXPECT_EQ(services[0]["metadata"]["name"], "secretflow-task-psi-0-spu");
  EXPECT_EQ(services[0]["metadata"]["ownerReferences"][0]["uid"], "pod-uid-1");
  EXPECT_EQ(services[0]["metadata"]["labels"]["kuscia.secretflow/loadbalancer"], "domainroute");
  EXPECT_FALSE(services[2]["metadata"]["labels"].contains("kuscia.secretflow/loadbalancer"));
  EXPECT_EQ(services[0]["spec"]["clusterIP"], "None");
  EXPECT_EQ(services[0]["spec"]["publishNotReadyAddresses"], true);
  EXPECT_EQ(services[0]["metadata"]["annotations"]["kuscia.secretflow/access-domain"], "alice,bob");
}

TEST(SimAgentTest, IgnoresTasksWithoutItsDomain) {
  testing::FakeHost host("carol");
  ASSERT_TRUE(host.create(descriptor(), "{}"));
  ASSERT_TRUE(host.start());
  deliver(host, "kusciatasks", KH_EVENT_ADDED, task());
  host.advanceMillis(10000);
  EXPECT_TRUE(host.requests().empty());
}

TEST(SimAgentTest, MovesThePodThroughItsStagesAfterTheDelays) {
  testing::FakeHost host("alice");
  ASSERT_TRUE(host.create(descriptor(), R"({"scheduleMillis": 100, "startMillis": 200,
                                            "pullMillis": 100, "readyMillis": 300,
                                            "endpointsMillis": 50})"));
  ASSERT_TRUE(host.start());
  deliver(host, "kusciatasks", KH_EVENT_ADDED, task());
  json pod = acceptPod(host);
  host.advanceMillis(99);
  EXPECT_EQ(last(host, "pods", KH_KUBE_PATCH, "status"), nullptr);
  host.advanceMillis(1);
  const auto* scheduledPatch = last(host, "pods", KH_KUBE_PATCH, "status");
  ASSERT_NE(scheduledPatch, nullptr);
  json st = json::parse(scheduledPatch->body)["status"];
  const json scheduledAt = st["conditions"][0]["lastTransitionTime"];
  EXPECT_EQ(st["conditions"][0]["type"], "PodScheduled");
  EXPECT_EQ(json::parse(last(host, "pods", KH_KUBE_PATCH)->body)["spec"]["nodeName"],
            "alice-node-0");
  pod["status"] = st;
  deliver(host, "pods", KH_EVENT_MODIFIED, pod);
  // Started: the agent accepted it (startTime) and pulls the image, as a Pulling Event says.
  host.advanceMillis(200);
  st = json::parse(last(host, "pods", KH_KUBE_PATCH, "status")->body)["status"];
  EXPECT_EQ(st["phase"], "Pending");
  ASSERT_TRUE(st.contains("startTime"));
  EXPECT_EQ(st["conditions"].size(), 2u); // PodScheduled kept, Initialized added
  const auto* pulling = last(host, "events", KH_KUBE_CREATE);
  ASSERT_NE(pulling, nullptr);
  json ev = json::parse(pulling->body);
  EXPECT_EQ(ev["reason"], "Pulling");
  EXPECT_EQ(ev["involvedObject"]["uid"], "pod-uid-1");
  EXPECT_EQ(ev["involvedObject"]["kind"], "Pod");
  EXPECT_EQ(ev["lastTimestamp"], st["startTime"]);
  pod["status"] = st;
  deliver(host, "pods", KH_EVENT_MODIFIED, pod);
  // Pulled: the container runs, the pod is Running.
  host.advanceMillis(100);
  st = json::parse(last(host, "pods", KH_KUBE_PATCH, "status")->body)["status"];
  EXPECT_EQ(st["phase"], "Running");
  EXPECT_TRUE(st["containerStatuses"][0]["state"].contains("running"));
  std::vector<std::string> reasons;
  for (const auto& r : host.requests())
    if (r.resource == "events") reasons.push_back(json::parse(r.body)["reason"]);
  EXPECT_EQ(reasons, (std::vector<std::string>{"Pulling", "Pulled", "Created", "Started"}));
  pod["status"].update(st);
  deliver(host, "pods", KH_EVENT_MODIFIED, pod);
  // Like Kuscia's controller, it keeps the task's podPhase current.
  const auto* phase = last(host, "kusciatasks", KH_KUBE_PATCH, "status");
  ASSERT_NE(phase, nullptr);
  EXPECT_EQ(
      json::parse(phase->body)["status"]["podStatuses"]["alice/secretflow-task-psi-0"]["podPhase"],
      "Running");
  host.advanceMillis(50);
  EXPECT_NE(last(host, "endpoints", KH_KUBE_CREATE), nullptr); // addresses before Ready
  host.advanceMillis(250);
  st = json::parse(last(host, "pods", KH_KUBE_PATCH, "status")->body)["status"];
  ASSERT_EQ(st["conditions"].size(), 4u);
  EXPECT_EQ(st["conditions"][2]["type"], "Ready");
  EXPECT_EQ(st["conditions"][0]["lastTransitionTime"], scheduledAt); // kept, not re-stamped
}

TEST(SimAgentTest, AFailingPodFailsTheTask) {
  testing::FakeHost host("alice", "p2p");
  ASSERT_TRUE(host.create(descriptor(), R"({"failureRate": 1, "scheduleMillis": 0,
                                            "startMillis": 0, "failureReason": "ImagePullBackOff"})"));
  ASSERT_TRUE(host.start());
  deliver(host, "kusciatasks", KH_EVENT_ADDED, task());
  json pod = acceptPod(host);
  host.advanceMillis(1);
  pod["status"] = json::parse(last(host, "pods", KH_KUBE_PATCH, "status")->body)["status"];
  deliver(host, "pods", KH_EVENT_MODIFIED, pod);
  host.advanceMillis(1);
  json failed = json::parse(last(host, "pods", KH_KUBE_PATCH, "status")->body)["status"];
  EXPECT_EQ(failed["phase"], "Failed");
  EXPECT_EQ(failed["reason"], "ImagePullBackOff");
  pod["status"] = failed;
  deliver(host, "pods", KH_EVENT_MODIFIED, pod);
  EXPECT_EQ(
      json::parse(last(host, "kusciatasks", KH_KUBE_PATCH, "status")->body)["status"]["phase"],
      "Failed");
}

// route-down: the failing party's task controller fails the task at its route pre-check, before
// any pod, in Kuscia's words, with the ports it allocated first (W1): one write, as two in a row
// may land in either order; in p2p the other cluster's copy fails as Kuscia's does when a
// partner failed. Nothing is created in either cluster.
TEST(SimAgentTest, ARouteDownFailsTheTaskAtItsPreCheckBeforeAnyPod) {
  json t = task();
  t["metadata"]["annotations"]["sim.kuscia-host/fault"] = "bob=route-down";
  testing::FakeHost bob("bob", "p2p");
  ASSERT_TRUE(bob.create(descriptor(), "{}"));
  ASSERT_TRUE(bob.start());
  deliver(bob, "kusciatasks", KH_EVENT_ADDED, t);
  // The route goes down first, as its controller finds the heartbeat missing: created, then its
  // Ready False a phase later; the pre-check fails the task a phase after that.
  const auto* route = last(bob, "clusterdomainroutes", KH_KUBE_CREATE);
  ASSERT_NE(route, nullptr);
  EXPECT_EQ(json::parse(route->body)["metadata"]["name"], "alice-bob");
  EXPECT_EQ(json::parse(route->body)["spec"]["destination"], "bob");
  EXPECT_EQ(last(bob, "kusciatasks", KH_KUBE_PATCH, "status"), nullptr);
  deliver(bob, "kusciatasks", KH_EVENT_MODIFIED, t); // another event changes nothing
  bob.advanceMillis(1000);
  const auto* down = last(bob, "clusterdomainroutes", KH_KUBE_PATCH, "status");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->name, "alice-bob");
  const json ready = json::parse(down->body)["status"]["conditions"][0];
  EXPECT_EQ(ready["status"], "False");
  EXPECT_EQ(ready["reason"], "HeartBeatTimeout");
  EXPECT_EQ(last(bob, "kusciatasks", KH_KUBE_PATCH, "status"), nullptr);
  bob.advanceMillis(1000);
  EXPECT_EQ(last(bob, "pods", KH_KUBE_CREATE), nullptr);
  std::vector<json> writes;
  for (const auto& r : bob.requests())
    if (r.resource == "kusciatasks" && r.subresource == "status")
      writes.push_back(json::parse(r.body)["status"]);
  ASSERT_EQ(writes.size(), 1u);
  const json& w = writes[0];
  EXPECT_EQ(w["conditions"][0]["type"], "PortsAllocated");
  EXPECT_TRUE(w.contains("startTime"));
  EXPECT_EQ(w["phase"], "Failed");
  EXPECT_EQ(w["message"], "KusciaTask failed after 3x retry, last error: cdr-check alice "
                          "to bob failed with HeartBeatTimeout");
  EXPECT_EQ(w["conditions"][1],
            (json{{"type", "ResourceCreated"},
                  {"status", "False"},
                  {"reason", "KusciaTaskCreateFailed"},
                  {"message", "cdr-check alice to bob failed with HeartBeatTimeout"},
                  {"lastTransitionTime", w["conditions"][1]["lastTransitionTime"]}}));
  EXPECT_TRUE(w.contains("completionTime"));
  // bob's cluster ran bob's pre-check: it allocated bob's ports alone.
  ASSERT_EQ(w["allocatedPorts"].size(), 1U);
  EXPECT_EQ(w["allocatedPorts"][0]["domainID"], "bob");
  testing::FakeHost alice("alice", "p2p");
  ASSERT_TRUE(alice.create(descriptor(), "{}"));
  ASSERT_TRUE(alice.start());
  deliver(alice, "kusciatasks", KH_EVENT_ADDED, t);
  EXPECT_EQ(last(alice, "pods", KH_KUBE_CREATE), nullptr);
  json partner = json::parse(last(alice, "kusciatasks", KH_KUBE_PATCH, "status")->body)["status"];
  EXPECT_EQ(partner["phase"], "Failed");
  EXPECT_EQ(partner["message"], "The remaining no-failed party task counts 1 are less than the "
                                "task success threshold 2. failed party[bob]");
}

// reserveMillis (centralized): the party's pods reserve through its TaskResource, created
// Reserving after the pods, Reserved after the delay; once every party's is Reserved it becomes
// Schedulable, and only then are the pods bound.
TEST(SimAgentTest, APartyReservesThroughItsTaskResourceAndBindsWhenEveryPartyHas) {
  testing::FakeHost host("alice", "centralized");
  ASSERT_TRUE(host.create(descriptor(), R"({"reserveMillis": 100, "scheduleMillis": 0})"));
  ASSERT_TRUE(host.start());
  deliver(host, "kusciatasks", KH_EVENT_ADDED, task());
  json pod = acceptPod(host);
  const auto* created = last(host, "taskresources", KH_KUBE_CREATE);
  ASSERT_NE(created, nullptr);
  json tr = json::parse(created->body);
  EXPECT_EQ(created->namespaceName, "alice");
  EXPECT_EQ(tr["status"]["phase"], "Reserving");
  EXPECT_EQ(tr["metadata"]["annotations"]["kuscia.secretflow/task-id"], task()["metadata"]["name"]);
  tr["metadata"]["uid"] = "tr-a";
  tr["metadata"]["resourceVersion"] = "19";
  deliver(host, "taskresources", KH_EVENT_ADDED, tr); // its create came back
  host.advanceMillis(50);
  EXPECT_EQ(last(host, "pods", KH_KUBE_PATCH), nullptr) << "not bound before the reservation";
  host.advanceMillis(50);
  const auto* reserved = last(host, "taskresources", KH_KUBE_PATCH);
  ASSERT_NE(reserved, nullptr);
  tr["metadata"]["uid"] = "tr-a";
  tr["metadata"]["resourceVersion"] = "20";
  tr.merge_patch(json::parse(reserved->body));
  EXPECT_EQ(tr["status"]["phase"], "Reserved");
  deliver(host, "taskresources", KH_EVENT_ADDED, tr);
  EXPECT_EQ(last(host, "pods", KH_KUBE_PATCH), nullptr) << "bob has not reserved";
  json bob = tr;
  bob["metadata"]["namespace"] = "bob";
  bob["metadata"]["name"] = "secretflow-task-psi-bob";
  bob["metadata"]["uid"] = "tr-b";
  deliver(host, "taskresources", KH_EVENT_ADDED, bob);
  const auto* schedulable = last(host, "taskresources", KH_KUBE_PATCH);
  json patch = json::parse(schedulable->body)["status"];
  EXPECT_EQ(patch["phase"], "Schedulable");
  // The earlier conditions keep their times: the reservation's moment stays what it was.
  EXPECT_EQ(patch["conditions"][1]["lastTransitionTime"],
            tr["status"]["conditions"][1]["lastTransitionTime"]);
  tr["status"] = patch;
  deliver(host, "taskresources", KH_EVENT_MODIFIED, tr);
  const auto* bind = last(host, "pods", KH_KUBE_PATCH);
  ASSERT_NE(bind, nullptr);
  EXPECT_EQ(json::parse(bind->body)["spec"]["nodeName"], "alice-node-0");
}

// A job of two tasks, the second depending on the first, held in approval by bob: the job's
// status as Kuscia's kusciajob controller writes it, its tasks created as their dependencies
// succeed.
TEST(SimAgentTest, AJobAwaitsItsPartnersApprovalThenCreatesItsTasksInDependencyOrder) {
  testing::FakeHost host("alice", "centralized");
  ASSERT_TRUE(host.create(descriptor(), R"({"approveMillis": 100})"));
  ASSERT_TRUE(host.start());
  json job = {{"apiVersion", "kuscia.secretflow/v1alpha1"},
              {"kind", "KusciaJob"},
              {"metadata",
               {{"name", "job-1"},
                {"namespace", "cross-domain"},
                {"uid", "job-uid"},
                {"resourceVersion", "1"},
                {"creationTimestamp", "2023-11-14T22:13:20Z"},
                {"annotations", {{"sim.kuscia-host/fault", "bob=approval-wait"}}}}},
              {"spec",
               {{"initiator", "alice"},
                {"maxParallelism", 2},
                {"tasks",
                 {{{"alias", "psi"},
                   {"taskID", "job-1-psi"},
                   {"appImage", "secretflow-image"},
                   {"taskInputConfig", "{}"},
                   {"scheduleConfig", {{"lifecycleSeconds", 30}}},
                   {"parties", {{{"domainID", "alice"}}, {{"domainID", "bob"}}}}},
                  {{"alias", "train"},
                   {"taskID", "job-1-train"},
                   {"dependencies", {"psi"}},
                   {"appImage", "secretflow-image"},
                   {"parties", {{{"domainID", "alice"}}, {{"domainID", "bob"}}}}}}}}}};
  auto status = [&] {
    const auto* r = last(host, "kusciajobs", KH_KUBE_PATCH, "status");
    return r == nullptr ? json() : json::parse(r->body)["status"];
  };
  auto apply = [&](int version) {
    job.merge_patch(json{{"status", status()}});
    job["metadata"]["resourceVersion"] = std::to_string(version);
    deliver(host, "kusciajobs", KH_EVENT_MODIFIED, job);
  };
  deliver(host, "kusciajobs", KH_EVENT_ADDED, job);
  EXPECT_EQ(status()["phase"], "AwaitingApproval");
  EXPECT_EQ(status()["approveStatus"], json({{"alice", "JobAccepted"}}));
  EXPECT_EQ(status()["conditions"][0]["type"], "JobValidated");
  apply(2);
  host.advanceMillis(700);
  EXPECT_EQ(status()["phase"], "AwaitingApproval") << "bob approves by hand: eight times as long";
  host.advanceMillis(100);
  EXPECT_EQ(status()["approveStatus"], json({{"bob", "JobAccepted"}}));
  apply(3);
  EXPECT_EQ(status()["phase"], "Pending");
  apply(4);
  EXPECT_EQ(status()["phase"], "Running");
  apply(5);
  // The first task only: the second waits for its dependency.
  std::vector<json> created;
  for (const auto& r : host.requests())
    if (r.resource == "kusciatasks" && r.verb == KH_KUBE_CREATE)
      created.push_back(json::parse(r.body));
  ASSERT_EQ(created.size(), 1u);
  const json& psi = created[0];
  EXPECT_EQ(psi["metadata"]["name"], "job-1-psi");
  EXPECT_EQ(psi["metadata"]["labels"]["kuscia.secretflow/job-uid"], "job-uid");
  EXPECT_EQ(psi["metadata"]["annotations"]["kuscia.secretflow/job-id"], "job-1");
  EXPECT_EQ(psi["metadata"]["annotations"]["kuscia.secretflow/task-alias"], "psi");
  EXPECT_FALSE(psi["metadata"]["annotations"].contains("sim.kuscia-host/fault"))
      << "approval-wait is the job's, not the task's";
  EXPECT_EQ(psi["metadata"]["ownerReferences"][0]["uid"], "job-uid");
  EXPECT_EQ(psi["spec"]["scheduleConfig"]["lifecycleSeconds"], 30);
  EXPECT_EQ(psi["spec"]["parties"][1],
            json({{"domainID", "bob"}, {"appImageRef", "secretflow-image"}}));
  json t = psi;
  t["metadata"]["uid"] = "task-uid";
  t["metadata"]["resourceVersion"] = "6";
  deliver(host, "kusciatasks", KH_EVENT_ADDED, t);
  EXPECT_EQ(status()["taskStatus"], json({{"job-1-psi", "Pending"}}));
  apply(7);
  t["status"] = {{"phase", "Succeeded"}, {"completionTime", "2023-11-14T22:13:30Z"}};
  deliver(host, "kusciatasks", KH_EVENT_MODIFIED, t);
  created.clear();
  for (const auto& r : host.requests())
    if (r.resource == "kusciatasks" && r.verb == KH_KUBE_CREATE)
      created.push_back(json::parse(r.body));
  ASSERT_EQ(created.size(), 2u);
  EXPECT_EQ(created[1]["metadata"]["name"], "job-1-train");
  json train = created[1];
  train["metadata"]["uid"] = "task-uid-2";
  train["status"] = {{"phase", "Failed"}};
  deliver(host, "kusciatasks", KH_EVENT_ADDED, train);
  EXPECT_EQ(status()["phase"], "Failed");
  EXPECT_TRUE(status().contains("completionTime"));
}

// Without a party that approves by hand, a centralized job does not await approval (Kuscia's
// kusciajob controller approves only interconnection jobs); in p2p every job does.
TEST(SimAgentTest, OnlyP2pJobsAwaitApprovalUnlessAPartyApprovesByHand) {
  for (const char* mode : {"centralized", "p2p"}) {
    testing::FakeHost host("alice", mode);
    ASSERT_TRUE(host.create(descriptor(), "{}"));
    ASSERT_TRUE(host.start());
    json job = {{"metadata",
                 {{"name", "job-2"},
                  {"namespace", "cross-domain"},
                  {"uid", "u"},
                  {"resourceVersion", "1"}}},
                {"spec",
                 {{"initiator", "alice"},
                  {"tasks",
                   {{{"alias", "a"},
                     {"taskID", "job-2-a"},
                     {"parties", {{{"domainID", "alice"}}, {{"domainID", "bob"}}}}}}}}}};
    deliver(host, "kusciajobs", KH_EVENT_ADDED, job);
    const auto* r = last(host, "kusciajobs", KH_KUBE_PATCH, "status");
    ASSERT_NE(r, nullptr) << mode;
    EXPECT_EQ(json::parse(r->body)["status"]["phase"],
              std::string(mode) == "p2p" ? "AwaitingApproval" : "Pending")
        << mode;
  }
}

// p2p: each party's cluster reserves its own pods; the initiator's cluster keeps a stub of the
// partner's TaskResource, which moves when the partner's cluster reserved (the interconnection's
// summary), and its group's decision goes back to the partner: both bind then.
TEST(SimAgentTest, InP2pTheInitiatorsStubMovesAsThePartnerReservesAndBothBindOnItsDecision) {
  testing::FakeHost alice("alice", "p2p"), bob("bob", "p2p");
  for (auto* h : {&alice, &bob}) {
    ASSERT_TRUE(h->create(descriptor(), R"({"reserveMillis": 100, "scheduleMillis": 0})"));
    ASSERT_TRUE(h->start());
  }
  json t = task();
  t["metadata"]["name"] = "p2p-reservation-task"; // the summaries are the process's
  deliver(alice, "kusciatasks", KH_EVENT_ADDED, t);
  deliver(bob, "kusciatasks", KH_EVENT_ADDED, t);
  acceptPod(alice);
  acceptPod(bob);
  // What a cluster's API server would send back of each TaskResource created or patched.
  std::map<std::string, json> trs[2];
  auto apply = [&](testing::FakeHost& h, std::map<std::string, json>& have) {
    for (const auto& r : h.requests()) {
      if (r.resource != "taskresources") continue;
      json body = json::parse(r.body);
      const std::string key =
          r.namespaceName + "/" +
          (r.verb == KH_KUBE_CREATE ? body["metadata"]["name"].get<std::string>() : r.name);
      json& obj = have[key];
      if (r.verb == KH_KUBE_CREATE)
        obj = body;
      else
        obj.merge_patch(body);
    }
    for (auto& [key, obj] : have) {
      obj["metadata"]["uid"] = key;
      obj["metadata"]["resourceVersion"] = std::to_string(h.requests().size());
      deliver(h, "taskresources", KH_EVENT_MODIFIED, obj);
    }
  };
  apply(alice, trs[0]);
  ASSERT_EQ(trs[0].size(), 2u) << "alice's own and bob's stub";
  const json& stub = trs[0]["bob/p2p-reservation-task-bob"];
  EXPECT_EQ(stub["spec"]["pods"], json::array()) << "a stub has no pods";
  EXPECT_EQ(stub["metadata"]["annotations"]["kuscia.secretflow/interconn-kuscia-parties"], "bob");
  EXPECT_EQ(stub["status"]["phase"], "Reserving");
  apply(bob, trs[1]);
  ASSERT_EQ(trs[1].size(), 1u) << "bob's cluster: bob's own only";
  // alice reserves at once; bob later: alice's pods wait.
  alice.advanceMillis(100);
  apply(alice, trs[0]);
  EXPECT_EQ(trs[0]["alice/p2p-reservation-task-alice"]["status"]["phase"], "Reserved");
  EXPECT_EQ(trs[0]["bob/p2p-reservation-task-bob"]["status"]["phase"], "Reserving");
  EXPECT_EQ(last(alice, "pods", KH_KUBE_PATCH), nullptr) << "bob has not reserved";
  bob.setWallTimeNanos(bob.wallTimeNanos() + 2000000000);
  bob.advanceMillis(100);
  apply(bob, trs[1]);
  const json bobReserved = trs[1]["bob/p2p-reservation-task-bob"]["status"]["lastTransitionTime"];
  EXPECT_EQ(trs[1]["bob/p2p-reservation-task-bob"]["status"]["phase"], "Reserved");
  EXPECT_EQ(last(bob, "pods", KH_KUBE_PATCH), nullptr) << "the initiator's group decides";
  // The summary brings bob's reservation to alice's cluster: the stub, then the decision.
  alice.advanceMillis(100);
  apply(alice, trs[0]);
  EXPECT_EQ(trs[0]["bob/p2p-reservation-task-bob"]["status"]["lastTransitionTime"], bobReserved)
      << "the stub says when bob reserved";
  apply(alice, trs[0]);
  EXPECT_EQ(trs[0]["alice/p2p-reservation-task-alice"]["status"]["phase"], "Schedulable");
  ASSERT_NE(last(alice, "pods", KH_KUBE_PATCH), nullptr) << "alice's pods bound";
  bob.advanceMillis(100);
  apply(bob, trs[1]);
  EXPECT_EQ(trs[1]["bob/p2p-reservation-task-bob"]["status"]["phase"], "Schedulable");
  ASSERT_NE(last(bob, "pods", KH_KUBE_PATCH), nullptr) << "bob's pods bound";
}

// On a loaded host the reservation's moment may come before the TaskResource's create came back:
// the party reserves once it did, instead of patching nothing and never reserving.
TEST(SimAgentTest, AReservationWaitsForItsTaskResourceToExist) {
  testing::FakeHost host("alice", "centralized");
  ASSERT_TRUE(host.create(descriptor(), R"({"reserveMillis": 100, "scheduleMillis": 0})"));
  ASSERT_TRUE(host.start());
  deliver(host, "kusciatasks", KH_EVENT_ADDED, task());
  acceptPod(host);
  host.advanceMillis(100);
  EXPECT_EQ(last(host, "taskresources", KH_KUBE_PATCH), nullptr) << "nothing to patch yet";
  json tr = json::parse(last(host, "taskresources", KH_KUBE_CREATE)->body);
  tr["metadata"]["uid"] = "tr-a";
  tr["metadata"]["resourceVersion"] = "19";
  deliver(host, "taskresources", KH_EVENT_ADDED, tr);
  host.advanceMillis(50);
  const auto* reserved = last(host, "taskresources", KH_KUBE_PATCH);
  ASSERT_NE(reserved, nullptr);
  EXPECT_EQ(json::parse(reserved->body)["status"]["phase"], "Reserved");
}

TEST(SimAgentTest, TheTaskRunsWhenItsPodsAreReadyThenSucceeds) {
  testing::FakeHost host("alice", "p2p"); // p2p: this cluster holds alice's pods only
  ASSERT_TRUE(host.create(descriptor(), R"({"runMillis": 500})"));
  ASSERT_TRUE(host.start());
  deliver(host, "kusciatasks", KH_EVENT_ADDED, task());
  json pod = acceptPod(host);
  pod["status"] = {
      {"phase", "Running"},
      {"startTime", "2023-11-14T22:13:21Z"},
      {"conditions",
       {{{"type", "Ready"}, {"status", "True"}, {"lastTransitionTime", "2023-11-14T22:13:22Z"}}}}};
  deliver(host, "pods", KH_EVENT_MODIFIED, pod);
  EXPECT_EQ(
      json::parse(last(host, "kusciatasks", KH_KUBE_PATCH, "status")->body)["status"]["phase"],
      "Running");
  host.advanceMillis(500);
  json done = json::parse(last(host, "kusciatasks", KH_KUBE_PATCH, "status")->body)["status"];
  EXPECT_EQ(done["phase"], "Succeeded");
  EXPECT_TRUE(done.contains("completionTime"));
}

TEST(SimAgentTest, AFinishedTasksPodsAndServicesAreDeletedWithCleanup) {
  testing::FakeHost host("alice", "p2p");
  ASSERT_TRUE(host.create(descriptor(), R"({"cleanupMillis": 100})"));
  ASSERT_TRUE(host.start());
  json t = task();
  deliver(host, "kusciatasks", KH_EVENT_ADDED, t);
  json pod = acceptPod(host);
  for (const auto& r : host.requests())
    if (r.resource == "services" && r.verb == KH_KUBE_CREATE)
      deliver(host, "services", KH_EVENT_ADDED, json::parse(r.body));
  t["status"] = {{"phase", "Succeeded"}};
  t["metadata"]["resourceVersion"] = "2";
  deliver(host, "kusciatasks", KH_EVENT_MODIFIED, t);
  host.advanceMillis(99);
  EXPECT_EQ(last(host, "pods", KH_KUBE_DELETE), nullptr);
  host.advanceMillis(1);
  const auto* del = last(host, "pods", KH_KUBE_DELETE);
  ASSERT_NE(del, nullptr);
  EXPECT_EQ(del->name, "secretflow-task-psi-0");
  int services = 0;
  for (const auto& r : host.requests())
    services += r.resource == "services" && r.verb == KH_KUBE_DELETE;
  EXPECT_EQ(services, 3);
}

} // namespace
} // namespace kuscia_host::plugins::sim
