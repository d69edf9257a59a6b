// task-timeline through the SDK's fake host, on the stored Kuscia objects: what it writes, when,
// and what it never does (full PUTs, writes of what is already there, clearing recorded times).
#include "task_timeline.h"

#include <gtest/gtest.h>

#include "kuscia_fixtures.h"
#include <kuscia_model/kept_facts.h>
#include <kuscia_model/kuscia_time.h>

namespace kuscia_host::plugins::timeline {
namespace {

using nlohmann::json;
using test::deliver;
using test::fixture;

const kh_plugin_v1_t* descriptor() {
  return sdk::pluginDescriptor<TaskTimeline>("task-timeline");
}

const char* kPodKey = "alice/secretflow-task-psi-0";
const char* kSvcKey = "alice/secretflow-task-psi-0-spu";
const char* kTask = "secretflow-task-psi";

class TimelineTest : public ::testing::Test {
protected:
  void SetUp() override {
    task_ = fixture("kusciatask.json");
    task_["status"].erase("podStatuses");
    task_["status"].erase("serviceStatuses");
    pod_ = fixture("pod.json");
    svc_ = fixture("service.json");
  }
  void start(const std::string& config = R"({"coalesceMillis": 0})") {
    ASSERT_TRUE(host_.create(descriptor(), config)) << host_.error();
    ASSERT_TRUE(host_.start()) << host_.error();
  }
  TaskTimeline& plugin() { return *sdk::pluginObject<TaskTimeline>(host_.instance()); }

  // Answers every pending status write as the API server would: the merge patch applied to the
  // task, 200 with the task, then the task's MODIFIED event (`eventFirst`: the event, then the
  // answer, as when the host reads the watch before the write's connection).
  void acceptWrites(bool eventFirst = false) {
    while (!host_.pendingRequests().empty()) {
      auto* r = host_.pendingRequests().front();
      const uint64_t id = r->id;
      json patch = json::parse(r->body);
      task_.merge_patch(patch);
      bumpVersion(task_);
      if (eventFirst) {
        ASSERT_EQ(deliver(host_, "kusciatasks", KH_EVENT_MODIFIED, task_), KH_OK);
      }
      ASSERT_EQ(host_.complete(id, 200, task_.dump()), KH_OK);
      if (!eventFirst) {
        ASSERT_EQ(deliver(host_, "kusciatasks", KH_EVENT_MODIFIED, task_), KH_OK);
      }
    }
  }
  static void bumpVersion(json& obj) {
    auto& rv = obj["metadata"]["resourceVersion"];
    rv = std::to_string(std::stoll(rv.get<std::string>()) + 1);
  }
  // Starts with `coalesceMillis`, the task and its Ready pod delivered, and the window passed:
  // the write of the pod's entry is on its way (unanswered); its request id.
  uint64_t startWithWritePending(int64_t coalesceMillis) {
    // Status writes alone: no facts kept (FillsPodAndServiceTimes... tests them).
    start(R"({"keepFacts": false, "coalesceMillis": )" + std::to_string(coalesceMillis) + "}");
    deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
    deliver(host_, "pods", KH_EVENT_ADDED, pod_);
    host_.advanceMillis(coalesceMillis);
    EXPECT_EQ(host_.pendingRequests().size(), 1u);
    return host_.pendingRequests().empty() ? 0 : host_.pendingRequests().front()->id;
  }
  json podEntry() const { return task_["status"]["podStatuses"].value(kPodKey, json()); }
  json svcEntry() const { return task_["status"]["serviceStatuses"].value(kSvcKey, json()); }
  std::size_t writes() const { return host_.requests().size(); }
  // Exactly one more status write, made once `millis` more have passed and not a millisecond
  // sooner: the "status" it carries.
  json writeAfter(int64_t millis) {
    const std::size_t before = writes();
    host_.advanceMillis(millis - 1);
    EXPECT_EQ(writes(), before) << "written too soon";
    host_.advanceMillis(1);
    EXPECT_EQ(writes(), before + 1);
    return writes() > before ? json::parse(host_.requests()[before].body)["status"] : json();
  }
  // Sets the pod's Ready condition.
  void setReady(json& pod, bool ready, const std::string& at) {
    for (auto& c : pod["status"]["conditions"])
      if (c["type"] == "Ready") {
        c["status"] = ready ? "True" : "False";
        c["lastTransitionTime"] = at;
      }
    bumpVersion(pod);
  }
  // The pod as just created: Pending, not scheduled.
  json freshPod(const std::string& uid, const std::string& created) const {
    json p = pod_;
    p["metadata"]["uid"] = uid;
    p["metadata"]["creationTimestamp"] = created;
    p["status"] = {{"phase", "Pending"}};
    return p;
  }

  // A pod's Event as kubelet records it (reason, message, time), for the pod's current UID.
  static json podEvent(const json& pod, const std::string& reason, const std::string& message,
                       const std::string& at, const std::string& name = "") {
    const auto& m = pod["metadata"];
    return {
        {"metadata",
         {{"namespace", m["namespace"]},
          {"name", name.empty() ? m["name"].get<std::string>() + "." + reason : name},
          {"uid", "event-" + reason + at},
          {"resourceVersion", "1"}}},
        {"involvedObject",
         {{"kind", "Pod"}, {"name", m["name"]}, {"uid", m["uid"]}, {"namespace", m["namespace"]}}},
        {"reason", reason},
        {"message", message},
        {"lastTimestamp", at},
        {"firstTimestamp", at}};
  }

  testing::FakeHost host_{"alice"};
  json task_, pod_, svc_;
};

TEST(TimelineConfigTest, DefaultsWithNoConfigAtAll) {
  auto c = parseTimelineConfig("");
  EXPECT_EQ(c.taskNamespace, "cross-domain");
  EXPECT_EQ(c.coalesceMillis, 150);
  EXPECT_EQ(c.deferMillis, 5000);
  EXPECT_EQ(c.stuckAfterSeconds, 300);
  testing::FakeHost host;
  ASSERT_TRUE(host.create(descriptor(), "{}")) << host.error();
}

TEST(TimelineConfigTest, RejectsBadConfigNamingTheKey) {
  EXPECT_THROW(parseTimelineConfig(R"({"coalesceMilis": 5})"), sdk::ConfigError);
  testing::FakeHost host;
  EXPECT_FALSE(host.create(descriptor(), R"({"coalesceMillis": -1})"));
  EXPECT_EQ(host.error(), "config key 'coalesceMillis': -1 is outside [0, 60000]");
  testing::FakeHost deferring;
  EXPECT_FALSE(deferring.create(descriptor(), R"({"deferMillis": 600001})"));
  EXPECT_EQ(deferring.error(), "config key 'deferMillis': 600001 is outside [0, 600000]");
  auto bad =
      testing::FakeHost::validateConfig(descriptor(), R"({"taskNamespace": "Cross_Domain"})");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->first, "taskNamespace");
  EXPECT_NE(bad->second.find("not a namespace name"), std::string::npos) << bad->second;
  auto unknown = testing::FakeHost::validateConfig(descriptor(), R"({"stuckAfter": 5})");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->first, "stuckAfter");
  EXPECT_FALSE(testing::FakeHost::validateConfig(descriptor(), R"({"stuckAfterSeconds": 60})"));
}

TEST_F(TimelineTest, SubscribesOnlyToWhatItNeeds) {
  start();
  const auto& pods = test::subscription(host_, "pods");
  EXPECT_EQ(pods.scope, KH_SCOPE_DOMAIN);
  EXPECT_FALSE(pods.wantRaw);
  const auto& tasks = test::subscription(host_, "kusciatasks");
  EXPECT_EQ(tasks.scope, KH_SCOPE_NAMESPACE);
  EXPECT_EQ(tasks.namespaceName, "cross-domain");
  EXPECT_NE(std::find(tasks.fields.begin(), tasks.fields.end(), "/status/podStatuses"),
            tasks.fields.end());
  EXPECT_EQ(host_.routes(), (std::vector<std::string>{"/api/v1/timelines", "/api/v1/jobs", "/ui"}));
  const auto& jobs = test::subscription(host_, "kusciajobs");
  EXPECT_EQ(jobs.scope, KH_SCOPE_NAMESPACE);
  EXPECT_EQ(jobs.namespaceName, "cross-domain");
}

// A job's approval, which Kuscia writes no time for: observed while the host watches, kept on the
// job (its annotation) so that a restarted host answers the same, and served with the job's view;
// the task's own document says what came before it.
TEST_F(TimelineTest, AJobsApprovalIsObservedKeptOnTheJobAndServed) {
  start();
  json job = fixture("control-plane/alice-cluster.kusciajob-awaiting-approval.json");
  auto accept = [&] { // the annotation's write, as the API server applies it
    ASSERT_FALSE(host_.pendingRequests().empty());
    auto* r = host_.pendingRequests().back();
    EXPECT_EQ(r->resource, "kusciajobs");
    EXPECT_EQ(r->subresource, "");
    job.merge_patch(json::parse(r->body));
    bumpVersion(job);
    host_.complete(r->id, 200, job.dump());
    deliver(host_, "kusciajobs", KH_EVENT_MODIFIED, job);
  };
  host_.setWallTimeNanos(*sdk::parseTime("2024-05-20T09:00:02.300Z"));
  deliver(host_, "kusciajobs", KH_EVENT_ADDED, job);
  accept();
  // bob accepted: the job left approval (the running fixture), seen at 09:00:04.6.
  const json running = fixture("control-plane/alice-cluster.kusciajob-running.json");
  job["status"] = running["status"];
  bumpVersion(job);
  host_.setWallTimeNanos(*sdk::parseTime("2024-05-20T09:00:04.600Z"));
  deliver(host_, "kusciajobs", KH_EVENT_MODIFIED, job);
  accept();
  const json kept =
      json::parse(job["metadata"]["annotations"]["kuscia-host/observed"].get<std::string>());
  EXPECT_EQ(kept["approved"], "2024-05-20T09:00:04Z");
  EXPECT_EQ(kept["accepted"]["bob"], "2024-05-20T09:00:04Z");
  EXPECT_TRUE(host_.pendingRequests().empty()) << "written once";
  // Its task, created at 09:00:05.
  json task = task_;
  task["metadata"]["name"] = "job-psi-1-task-0";
  task["metadata"]["creationTimestamp"] = "2024-05-20T09:00:05Z";
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task);
  auto r = host_.httpGet("/api/v1/jobs/job-psi-1");
  ASSERT_EQ(r.status, 200) << r.body;
  json doc = json::parse(r.body);
  EXPECT_EQ(doc["approval"]["seconds"], 4.0);
  EXPECT_EQ(doc["approval"]["party"], "bob");
  EXPECT_EQ(doc["approval"]["observed"], true);
  EXPECT_EQ(doc["tasks"][0]["queued"]["seconds"], 1.0);
  json before = json::parse(host_.httpGet("/api/v1/timelines/job-psi-1-task-0").body)["job"];
  EXPECT_EQ(before["job"], "job-psi-1");
  EXPECT_EQ(before["approval"], doc["approval"]);
  EXPECT_EQ(before["queued"], doc["tasks"][0]["queued"]);
  EXPECT_EQ(json::parse(host_.httpGet("/api/v1/jobs").body)["jobs"]["job-psi-1"]["phase"],
            "Running");
  EXPECT_EQ(host_.httpGet("/api/v1/jobs/nosuch").status, 404);

  // A restarted host first sees the job past approval: the kept observation answers.
  testing::FakeHost restarted;
  ASSERT_TRUE(restarted.create(descriptor(), R"({"coalesceMillis": 0})"));
  ASSERT_TRUE(restarted.start());
  restarted.setWallTimeNanos(*sdk::parseTime("2024-05-20T09:05:00Z"));
  deliver(restarted, "kusciajobs", KH_EVENT_ADDED, job);
  EXPECT_TRUE(restarted.pendingRequests().empty()) << "nothing new to keep";
  EXPECT_EQ(json::parse(restarted.httpGet("/api/v1/jobs/job-psi-1").body)["approval"],
            doc["approval"]);
  // Without the annotation (a host that never watched it), the approval is not dated.
  job["metadata"]["annotations"].erase("kuscia-host/observed");
  bumpVersion(job);
  testing::FakeHost late;
  ASSERT_TRUE(late.create(descriptor(), R"({"coalesceMillis": 0})"));
  ASSERT_TRUE(late.start());
  deliver(late, "kusciajobs", KH_EVENT_ADDED, job);
  EXPECT_FALSE(
      json::parse(late.httpGet("/api/v1/jobs/job-psi-1").body)["approval"].contains("seconds"));
}

// Where Kuscia reserves, the pod's party's TaskResource dates its reservation: the document's
// entry carries when it began, when the party reserved and when every party had, and the
// summary's phases follow (reserving, awaiting-parties, binding). The times stay on the pod
// after Kuscia deletes the TaskResource with its group.
TEST_F(TimelineTest, APodSchedulesThroughItsPartysReservation) {
  start();
  const auto& trs = test::subscription(host_, "taskresources");
  EXPECT_EQ(trs.scope, KH_SCOPE_DOMAIN);
  EXPECT_EQ(trs.group, "kuscia.secretflow");
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  json pod = pod_;
  pod["status"] = {{"phase", "Pending"}}; // created, not scheduled
  deliver(host_, "pods", KH_EVENT_ADDED, pod);
  json tr = fixture("control-plane/alice-cluster.taskresource-alice-reserved.json");
  tr["metadata"]["annotations"]["kuscia.secretflow/task-id"] = kTask;
  tr["status"] = {{"phase", "Reserving"},
                  {"startTime", "2024-05-20T08:00:00Z"},
                  {"conditions", json::array({{{"type", "Reserving"},
                                               {"status", "True"},
                                               {"lastTransitionTime", "2024-05-20T08:00:00Z"}}})}};
  deliver(host_, "taskresources", KH_EVENT_ADDED, tr);
  auto phaseNow = [&] { return (*plugin().timeline(kTask))["summary"]["blame"]["phase"]; };
  EXPECT_EQ(phaseNow(), "reserving");
  tr["status"]["phase"] = "Reserved";
  tr["status"]["conditions"].push_back(
      {{"type", "Reserved"}, {"status", "True"}, {"lastTransitionTime", "2024-05-20T08:00:03Z"}});
  bumpVersion(tr);
  deliver(host_, "taskresources", KH_EVENT_MODIFIED, tr);
  EXPECT_EQ(phaseNow(), "awaiting-parties");
  tr["status"]["phase"] = "Schedulable";
  tr["status"]["conditions"].push_back({{"type", "Schedulable"},
                                        {"status", "True"},
                                        {"lastTransitionTime", "2024-05-20T08:00:05Z"}});
  bumpVersion(tr);
  deliver(host_, "taskresources", KH_EVENT_MODIFIED, tr);
  EXPECT_EQ(phaseNow(), "binding");
  deliver(host_, "taskresources", KH_EVENT_DELETED, tr);
  // Bound once Schedulable, accepted, ready.
  pod_["status"]["startTime"] = "2024-05-20T08:00:06Z";
  for (auto& c : pod_["status"]["conditions"])
    if (c["type"] == "PodScheduled") c["lastTransitionTime"] = "2024-05-20T08:00:05Z";
  bumpVersion(pod_);
  deliver(host_, "pods", KH_EVENT_MODIFIED, pod_);
  acceptWrites();
  json doc = *plugin().timeline(kTask);
  const json& times = doc["entries"][kPodKey]["times"];
  EXPECT_EQ(times["reservingTime"], "2024-05-20T08:00:00Z");
  EXPECT_EQ(times["reservedTime"], "2024-05-20T08:00:03Z");
  EXPECT_EQ(times["schedulableTime"], "2024-05-20T08:00:05Z");
  std::vector<std::string> phases;
  for (const auto& p : doc["entries"][kPodKey]["phases"])
    phases.push_back(p["phase"]);
  // Each of the reservation's phases observed once: 08:00:00 -> 03 -> 05 -> bound at 05.
  EXPECT_EQ(host_.metricSum("kuscia_timeline_pod_reserving_seconds"), 3);
  EXPECT_EQ(host_.metricSum("kuscia_timeline_pod_awaiting_parties_seconds"), 2);
  EXPECT_EQ(host_.metric("kuscia_timeline_pod_binding_seconds"), 1);
  EXPECT_EQ(host_.metricSum("kuscia_timeline_pod_binding_seconds"), 0);
  // binding ends at scheduleTime, which scheduler-time writes: without it, accepting holds it.
  EXPECT_EQ(phases, (std::vector<std::string>{"reserving", "awaiting-parties", "accepting",
                                              "starting", "readiness"}))
      << doc["entries"][kPodKey].dump();
}

TEST_F(TimelineTest, FillsPodAndServiceTimesWithMergePatchesOnTheStatus) {
  start();
  ASSERT_EQ(deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_), KH_OK);
  ASSERT_EQ(deliver(host_, "pods", KH_EVENT_ADDED, pod_), KH_OK);
  ASSERT_EQ(deliver(host_, "services", KH_EVENT_ADDED, svc_), KH_OK);
  ASSERT_EQ(writes(), 1u); // one in flight per task; the service waits for it
  const auto& r = host_.requests()[0];
  EXPECT_EQ(r.verb, KH_KUBE_PATCH);
  EXPECT_EQ(r.patchType, KH_PATCH_MERGE);
  EXPECT_EQ(r.resource, "kusciatasks");
  EXPECT_EQ(r.namespaceName, "cross-domain");
  EXPECT_EQ(r.name, kTask);
  EXPECT_EQ(r.subresource, "status");
  EXPECT_EQ(r.resourceVersion, ""); // maps merge: no precondition needed
  EXPECT_EQ(json::parse(r.body),
            json::parse(R"({"status":{"podStatuses":{"alice/secretflow-task-psi-0":{
              "namespace":"alice","podName":"secretflow-task-psi-0","podPhase":"Running",
              "createTime":"2024-05-20T08:00:00Z","startTime":"2024-05-20T08:00:02Z",
              "readyTime":"2024-05-20T08:00:09Z"}}}})"));
  acceptWrites();
  // The task started: what the pod told beyond the status is kept on the task, in one merge patch
  // of its metadata (not its status), at the next 5 s timer, and not again.
  EXPECT_EQ(writes(), 2u);
  host_.advanceMillis(5000);
  acceptWrites();
  ASSERT_EQ(writes(), 3u);
  const auto& kept = host_.requests()[2];
  EXPECT_EQ(kept.subresource, "");
  EXPECT_EQ(kept.name, kTask);
  EXPECT_EQ(kept.patchType, KH_PATCH_MERGE);
  json facts = model::keptEntries(
      json::parse(kept.body)["metadata"]["annotations"][model::kKeptFactsAnnotation]
          .get<std::string>());
  EXPECT_EQ(facts[kPodKey]["containersStartTime"], "2024-05-20T08:00:04Z");
  EXPECT_EQ(facts[kPodKey]["createTime"], "2024-05-20T08:00:00Z");
  EXPECT_EQ(host_.metric("kuscia_timeline_kept_facts_writes_total", "ok"), 1);
  deliver(host_, "kusciatasks", KH_EVENT_MODIFIED, task_);
  EXPECT_EQ(writes(), 3u);
  EXPECT_EQ(svcEntry(),
            json::parse(R"({"namespace":"alice","serviceName":"secretflow-task-psi-0-spu",
              "createTime":"2024-05-20T08:00:00Z","readyTime":"2024-05-20T08:00:10Z"})"));
  EXPECT_EQ(podEntry()["readyTime"], "2024-05-20T08:00:09Z");
  EXPECT_EQ(host_.metric("kuscia_timeline_pod_create_to_ready_seconds"), 1);
  EXPECT_EQ(host_.metricSum("kuscia_timeline_pod_create_to_ready_seconds"), 9);
  EXPECT_EQ(host_.metricSum("kuscia_timeline_pod_start_to_ready_seconds"), 7);
  EXPECT_EQ(host_.metricSum("kuscia_timeline_service_create_to_ready_seconds"), 10);
  EXPECT_EQ(host_.metric("kuscia_timeline_status_writes_total", "ok"), 2);
}

// A pod's phase is kept as one shared copy of its text: the entry carries it exactly, a phase
// Kubernetes does not define included.
TEST_F(TimelineTest, AnEntryCarriesThePodsPhaseExactly) {
  start();
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  pod_["status"]["phase"] = "Evicting-Custom";
  deliver(host_, "pods", KH_EVENT_ADDED, pod_);
  ASSERT_EQ(writes(), 1u);
  EXPECT_EQ(json::parse(host_.requests()[0].body)["status"]["podStatuses"]
                                                 ["alice/secretflow-task-psi-0"]["podPhase"],
            "Evicting-Custom");
}

TEST_F(TimelineTest, NoWriteWhenTheStatusAlreadyHoldsTheValues) {
  start();
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  deliver(host_, "pods", KH_EVENT_ADDED, pod_);
  deliver(host_, "services", KH_EVENT_ADDED, svc_);
  acceptWrites();
  std::size_t before = writes();
  bumpVersion(pod_);
  pod_["metadata"]["labels"]["unrelated"] = "change";
  deliver(host_, "pods", KH_EVENT_MODIFIED, pod_);
  deliver(host_, "services", KH_EVENT_MODIFIED, svc_);
  bumpVersion(task_);
  deliver(host_, "kusciatasks", KH_EVENT_MODIFIED, task_);
  // The same instant written differently is the same time.
  task_["status"]["podStatuses"][kPodKey]["readyTime"] = "2024-05-20T16:00:09+08:00";
  deliver(host_, "kusciatasks", KH_EVENT_MODIFIED, task_);
  host_.advanceMillis(1000);
  EXPECT_EQ(writes(), before);
  // A host restarted on an already complete status writes nothing either.
  testing::FakeHost again("alice");
  ASSERT_TRUE(again.create(descriptor(), R"({"coalesceMillis": 0})"));
  ASSERT_TRUE(again.start());
  deliver(again, "pods", KH_EVENT_ADDED, pod_);
  deliver(again, "services", KH_EVENT_ADDED, svc_);
  deliver(again, "kusciatasks", KH_EVENT_ADDED, task_);
  again.advanceMillis(1000);
  EXPECT_TRUE(again.requests().empty());
}

// A write answered before its event changes the held entries in place: what the entry held is
// read again (not the times read of it before), so the next event of the pod writes nothing.
TEST_F(TimelineTest, AnEntryAWriteChangedIsComparedAsWritten) {
  start();
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  deliver(host_, "pods", KH_EVENT_ADDED, pod_);
  acceptWrites();
  setReady(pod_, false, "2024-05-20T08:01:00Z");
  deliver(host_, "pods", KH_EVENT_MODIFIED, pod_); // compares the held entry, writes nothing
  setReady(pod_, true, "2024-05-20T08:02:00Z");
  deliver(host_, "pods", KH_EVENT_MODIFIED, pod_);
  ASSERT_EQ(host_.pendingRequests().size(), 1u); // the later Ready
  const uint64_t id = host_.pendingRequests().front()->id;
  task_.merge_patch(json::parse(host_.pendingRequests().front()->body));
  bumpVersion(task_);
  ASSERT_EQ(host_.complete(id, 200, task_.dump()), KH_OK); // its event still on its way
  const std::size_t before = writes();
  bumpVersion(pod_);
  deliver(host_, "pods", KH_EVENT_MODIFIED, pod_);
  host_.advanceMillis(1000);
  EXPECT_EQ(writes(), before) << "the readyTime just written was written again";
}

// Two parties write at once; the other party's lands first, and its event comes after this
// instance's answer. That event shows this domain's entries as they were before the write: it
// is not read (it would find the write's difference again and schedule a write of nothing), and
// the write's own event, which comes next, brings the other party's entry with it.
TEST_F(TimelineTest, AnEventOlderThanTheAnsweredWriteIsNotReadAgain) {
  const uint64_t id = startWithWritePending(150);
  ASSERT_NE(id, 0u);
  const std::size_t idle = host_.activeTimers(); // the stuck-entries refresh
  json bobs = task_;                             // bob's write, first
  bobs["status"]["podStatuses"]["bob/secretflow-task-psi-0"] = {
      {"createTime", "2024-05-20T08:00:01Z"}};
  bumpVersion(bobs);
  task_ = bobs;
  task_.merge_patch(json::parse(host_.pendingRequests().front()->body));
  bumpVersion(task_);
  ASSERT_EQ(host_.complete(id, 200, task_.dump()), KH_OK);
  deliver(host_, "kusciatasks", KH_EVENT_MODIFIED, bobs);
  EXPECT_EQ(host_.activeTimers(), idle) << "the older event was compared: a write was scheduled";
  deliver(host_, "kusciatasks", KH_EVENT_MODIFIED, task_);
  host_.advanceMillis(1000);
  EXPECT_EQ(writes(), 1u);
  EXPECT_EQ(host_.activeTimers(), idle);
  // What the skipped event held came with the next one: bob's entry is in the document.
  auto doc = plugin().timeline(kTask);
  ASSERT_TRUE(doc);
  EXPECT_TRUE(doc->at("entries").contains("bob/secretflow-task-psi-0")) << doc->dump();
  // An event of the answered version or later is read as before: another writer's change of
  // this domain's entry is compared (and its readyTime written back).
  json rival = task_;
  rival["status"]["podStatuses"][kPodKey].erase("readyTime");
  bumpVersion(rival);
  deliver(host_, "kusciatasks", KH_EVENT_MODIFIED, rival);
  host_.advanceMillis(150);
  EXPECT_EQ(writes(), 2u);
}

TEST_F(TimelineTest, AFlapMovesTheStatusReadyTimeAsKusciaDoesAndKeepsTheFirstInTheTimeline) {
  start();
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  deliver(host_, "pods", KH_EVENT_ADDED, pod_);
  acceptWrites();
  std::size_t before = writes();
  setReady(pod_, false, "2024-05-20T08:01:00Z");
  deliver(host_, "pods", KH_EVENT_MODIFIED, pod_);
  EXPECT_EQ(writes(), before); // NotReady keeps readyTime
  setReady(pod_, true, "2024-05-20T08:02:00Z");
  deliver(host_, "pods", KH_EVENT_MODIFIED, pod_);
  acceptWrites();
  EXPECT_EQ(writes(), before + 1);
  // The status means what Kuscia's task controller means: the latest Ready.
  EXPECT_EQ(podEntry()["readyTime"], "2024-05-20T08:02:00Z");
  // The startup is the first Ready: the timeline and the histogram keep it.
  json entry = plugin().timeline(kTask)->at("entries")[kPodKey];
  EXPECT_EQ(entry["times"]["firstReadyTime"], "2024-05-20T08:00:09Z");
  EXPECT_EQ(entry["times"]["readyTime"], "2024-05-20T08:02:00Z");
  EXPECT_EQ(entry["durations"]["createToReady"], 9);
  EXPECT_EQ(host_.metric("kuscia_timeline_pod_create_to_ready_seconds"), 1); // once
  EXPECT_EQ(host_.metricSum("kuscia_timeline_pod_create_to_ready_seconds"), 9);
  // A host restarted after the flap writes nothing: the status already holds the latest Ready.
  testing::FakeHost again("alice");
  ASSERT_TRUE(again.create(descriptor(), R"({"coalesceMillis": 0})"));
  ASSERT_TRUE(again.start());
  deliver(again, "kusciatasks", KH_EVENT_ADDED, task_);
  deliver(again, "pods", KH_EVENT_ADDED, pod_);
  EXPECT_TRUE(again.requests().empty());
  // An earlier Ready the status holds for this incarnation (written by a host that kept the
  // first) is the first ready; the status then moves to the latest.
  task_["status"]["podStatuses"][kPodKey]["readyTime"] = "2024-05-20T08:00:09Z";
  testing::FakeHost third("alice");
  ASSERT_TRUE(third.create(descriptor(), R"({"coalesceMillis": 0})"));
  ASSERT_TRUE(third.start());
  deliver(third, "kusciatasks", KH_EVENT_ADDED, task_);
  deliver(third, "pods", KH_EVENT_ADDED, pod_);
  ASSERT_EQ(third.requests().size(), 1u);
  EXPECT_EQ(json::parse(third.requests()[0].body)["status"]["podStatuses"][kPodKey],
            json::parse(R"({"readyTime":"2024-05-20T08:02:00Z"})"));
  auto* tl = sdk::pluginObject<TaskTimeline>(third.instance());
  EXPECT_EQ(tl->timeline(kTask)->at("entries")[kPodKey]["times"]["firstReadyTime"],
            "2024-05-20T08:00:09Z");
}

TEST_F(TimelineTest, AWriterThatKeepsReplacingAFieldWinsItAfterTwoReplacements) {
  start(R"({"coalesceMillis": 0, "keepFacts": false})"); // status writes alone
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  deliver(host_, "pods", KH_EVENT_ADDED, pod_);
  deliver(host_, "services", KH_EVENT_ADDED, svc_);
  acceptWrites();
  const std::size_t base = writes();
  // Another writer with meanings of its own replaces the pod's times each time this host
  // writes them.
  auto fightBack = [&] {
    json& e = task_["status"]["podStatuses"][kPodKey];
    e["createTime"] = "2024-05-20T07:00:00Z";
    e["startTime"] = "2024-05-20T08:00:01Z";
    e["readyTime"] = "2024-05-20T08:00:05Z";
    bumpVersion(task_);
    deliver(host_, "kusciatasks", KH_EVENT_MODIFIED, task_);
  };
  fightBack();
  acceptWrites(); // written back once
  EXPECT_EQ(writes(), base + 1);
  EXPECT_EQ(podEntry()["readyTime"], "2024-05-20T08:00:09Z");
  fightBack(); // the second replacement within the minute: yielded
  acceptWrites();
  EXPECT_EQ(writes(), base + 1);
  for (int i = 0; i < 5; ++i) {
    host_.advanceMillis(1000);
    fightBack();
    acceptWrites();
  }
  EXPECT_EQ(writes(), base + 1); // no war
  EXPECT_EQ(podEntry()["readyTime"], "2024-05-20T08:00:05Z");
  for (const char* field : {"createTime", "startTime", "readyTime"})
    EXPECT_EQ(host_.metric("kuscia_timeline_yielded_fields_total", field), 1) << field;
  EXPECT_EQ(host_.metric("kuscia_timeline_overwritten_fields_total", "replaced"), 6);
  // Logged once per field, with both values.
  int logged = 0;
  for (const auto& l : host_.logs())
    if (l.message.find("readyTime yielded to another writer") != std::string::npos) {
      ++logged;
      EXPECT_NE(l.message.find("2024-05-20T08:00:05Z"), std::string::npos) << l.message;
      EXPECT_NE(l.message.find("2024-05-20T08:00:09Z"), std::string::npos) << l.message;
      EXPECT_NE(l.message.find(kPodKey), std::string::npos) << l.message;
    }
  EXPECT_EQ(logged, 1);
  // This host's own values stay in its timeline.
  json entry = plugin().timeline(kTask)->at("entries")[kPodKey];
  EXPECT_EQ(entry["yielded"]["readyTime"], "2024-05-20T08:00:09Z");
  EXPECT_EQ(entry["yielded"]["createTime"], "2024-05-20T08:00:00Z");
  EXPECT_EQ(entry["times"]["firstReadyTime"], "2024-05-20T08:00:09Z");
  // Fields it did not yield are still its own: a service's removed createTime is written again.
  task_["status"]["serviceStatuses"][kSvcKey].erase("createTime");
  bumpVersion(task_);
  deliver(host_, "kusciatasks", KH_EVENT_MODIFIED, task_);
  ASSERT_EQ(host_.pendingRequests().size(), 1u);
  EXPECT_EQ(json::parse(host_.pendingRequests()[0]->body)["status"],
            json::parse(R"({"serviceStatuses":{"alice/secretflow-task-psi-0-spu":
                            {"createTime":"2024-05-20T08:00:00Z"}}})"));
  acceptWrites();
  // A new incarnation of the pod is a new entry: its times are written again.
  json again = freshPod("0f1e2d3c-new-uid", "2024-05-20T08:05:00Z");
  again["status"]["startTime"] = "2024-05-20T08:05:03Z";
  deliver(host_, "pods", KH_EVENT_ADDED, again);
  acceptWrites();
  EXPECT_EQ(podEntry()["createTime"], "2024-05-20T08:05:00Z");
  EXPECT_EQ(podEntry()["startTime"], "2024-05-20T08:05:03Z");
}

TEST_F(TimelineTest, AWriterThatKeepsRemovingFieldsIsAnsweredEverMoreSlowly) {
  start(R"({"coalesceMillis": 0, "keepFacts": false})"); // status writes alone
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  deliver(host_, "pods", KH_EVENT_ADDED, pod_);
  acceptWrites();
  ASSERT_EQ(writes(), 1u);
  auto erase = [&] {
    task_["status"]["podStatuses"][kPodKey].erase("readyTime");
    bumpVersion(task_);
    deliver(host_, "kusciatasks", KH_EVENT_MODIFIED, task_);
  };
  erase(); // the first removal: written again at once
  acceptWrites();
  EXPECT_EQ(writes(), 2u);
  erase(); // the second: after 1 s
  host_.advanceMillis(999);
  EXPECT_TRUE(host_.pendingRequests().empty());
  host_.advanceMillis(1);
  acceptWrites();
  EXPECT_EQ(writes(), 3u);
  erase(); // the third: after 2 s
  host_.advanceMillis(1999);
  EXPECT_TRUE(host_.pendingRequests().empty());
  host_.advanceMillis(1);
  acceptWrites();
  EXPECT_EQ(writes(), 4u);
  // A writer that erases on every write is yielded after six removals within the minute; the
  // writes it drew stay few.
  for (int i = 0; i < 10; ++i) {
    erase();
    host_.advanceMillis(8000);
    acceptWrites();
  }
  EXPECT_EQ(writes(), 6u);
  EXPECT_EQ(host_.metric("kuscia_timeline_yielded_fields_total", "readyTime"), 1);
  EXPECT_FALSE(podEntry().contains("readyTime"));
  // A time removed now and then is written again: nothing recorded is lost.
  host_.advanceMillis(120000);
  task_["status"]["podStatuses"][kPodKey].erase("createTime");
  bumpVersion(task_);
  deliver(host_, "kusciatasks", KH_EVENT_MODIFIED, task_);
  acceptWrites();
  EXPECT_EQ(podEntry()["createTime"], "2024-05-20T08:00:00Z");
}

TEST_F(TimelineTest, AnEventOlderThanTheWriteIsNoOverwrite) {
  start();
  json stale = task_;
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  deliver(host_, "pods", KH_EVENT_ADDED, pod_);
  acceptWrites();
  // The watch brings events from before the write after its answer: not someone else's write.
  for (int i = 0; i < 3; ++i)
    deliver(host_, "kusciatasks", KH_EVENT_MODIFIED, stale);
  EXPECT_LT(host_.metric("kuscia_timeline_overwritten_fields_total", "removed"), 1);
  EXPECT_LT(host_.metric("kuscia_timeline_yielded_fields_total", "readyTime"), 1);
}

TEST_F(TimelineTest, ATimeWrittenInWholeSecondsIsTheSameTime) {
  start(R"({"coalesceMillis": 0, "keepFacts": false})"); // status writes alone
  pod_["status"]["startTime"] = "2024-05-20T08:00:02.250Z";
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  deliver(host_, "pods", KH_EVENT_ADDED, pod_);
  acceptWrites();
  EXPECT_EQ(podEntry()["startTime"], "2024-05-20T08:00:02.25Z");
  // Kuscia's controller serialises metav1.Time in seconds: the same time, no write, no contest.
  task_["status"]["podStatuses"][kPodKey]["startTime"] = "2024-05-20T08:00:02Z";
  bumpVersion(task_);
  deliver(host_, "kusciatasks", KH_EVENT_MODIFIED, task_);
  host_.advanceMillis(1000);
  EXPECT_EQ(writes(), 1u);
  EXPECT_LT(host_.metric("kuscia_timeline_overwritten_fields_total", "replaced"), 1);
}

TEST_F(TimelineTest, ARecreatedPodIsANewIncarnationWhoseTimesReplaceTheOldOnes) {
  start();
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  deliver(host_, "pods", KH_EVENT_ADDED, pod_);
  acceptWrites();
  deliver(host_, "pods", KH_EVENT_DELETED, pod_);
  EXPECT_EQ(host_.pendingRequests().size(), 0u); // deletion clears nothing
  EXPECT_EQ(podEntry()["readyTime"], "2024-05-20T08:00:09Z");
  json again = freshPod("0f1e2d3c-new-uid", "2024-05-20T08:05:00Z");
  deliver(host_, "pods", KH_EVENT_ADDED, again);
  ASSERT_EQ(host_.pendingRequests().size(), 1u);
  EXPECT_EQ(json::parse(host_.pendingRequests()[0]->body)["status"]["podStatuses"][kPodKey],
            json::parse(R"({"createTime":"2024-05-20T08:05:00Z","startTime":null,
                            "readyTime":null})"));
  acceptWrites();
  again["status"]["startTime"] = "2024-05-20T08:05:03Z";
  deliver(host_, "pods", KH_EVENT_MODIFIED, again);
  // A startTime ends no wait: it waits for the writer's deferral (deferMillis, 5 s).
  EXPECT_EQ(host_.pendingRequests().size(), 0u);
  host_.advanceMillis(5000);
  acceptWrites();
  EXPECT_EQ(podEntry()["createTime"], "2024-05-20T08:05:00Z");
  EXPECT_EQ(podEntry()["startTime"], "2024-05-20T08:05:03Z");
  EXPECT_FALSE(podEntry().contains("readyTime"));
}

TEST_F(TimelineTest, AMalformedTimeOrAnnotationIsCountedLoggedOnceAndLeftUnset) {
  start();
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  svc_["metadata"]["annotations"]["kuscia.secretflow/ready-time"] = "yesterday at noon";
  EXPECT_EQ(deliver(host_, "services", KH_EVENT_ADDED, svc_), KH_OK);
  bumpVersion(svc_);
  EXPECT_EQ(deliver(host_, "services", KH_EVENT_MODIFIED, svc_), KH_OK);
  pod_["status"]["startTime"] = "2024-13-40T99:00:00Z";
  EXPECT_EQ(deliver(host_, "pods", KH_EVENT_ADDED, pod_), KH_OK);
  acceptWrites();
  EXPECT_EQ(host_.callbackErrors(), 0);
  EXPECT_FALSE(svcEntry().contains("readyTime"));
  EXPECT_EQ(svcEntry()["createTime"], "2024-05-20T08:00:00Z");
  EXPECT_FALSE(podEntry().contains("startTime"));
  EXPECT_EQ(podEntry()["readyTime"], "2024-05-20T08:00:09Z");
  EXPECT_EQ(host_.metric("kuscia_timeline_malformed_inputs_total", "ready-time annotation"), 2);
  EXPECT_EQ(host_.metric("kuscia_timeline_malformed_inputs_total", "startTime"), 1);
  int logged = 0;
  for (const auto& l : host_.logs())
    logged += l.message.find(std::string(kSvcKey) + ": malformed") != std::string::npos;
  EXPECT_EQ(logged, 1);
  // Any offset and fractional seconds are fine, normalised to UTC.
  svc_["metadata"]["annotations"]["kuscia.secretflow/ready-time"] = "2024-05-20T16:00:10.5+08:00";
  deliver(host_, "services", KH_EVENT_MODIFIED, svc_);
  acceptWrites();
  EXPECT_EQ(svcEntry()["readyTime"], "2024-05-20T08:00:10.5Z");
}

TEST_F(TimelineTest, APodSeenBeforeItsTaskIsAppliedWhenTheTaskAppears) {
  start();
  deliver(host_, "pods", KH_EVENT_ADDED, pod_);
  deliver(host_, "services", KH_EVENT_ADDED, svc_);
  host_.advanceMillis(100);
  EXPECT_EQ(writes(), 0u);
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  acceptWrites();
  EXPECT_EQ(podEntry()["startTime"], "2024-05-20T08:00:02Z");
  EXPECT_EQ(svcEntry()["readyTime"], "2024-05-20T08:00:10Z");
}

TEST_F(TimelineTest, FieldsAnotherWriterRemovedAreWrittenAgain) {
  start();
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  deliver(host_, "pods", KH_EVENT_ADDED, pod_);
  deliver(host_, "services", KH_EVENT_ADDED, svc_);
  acceptWrites();
  // Upstream's controller PUTs the whole status with only what it knows.
  task_["status"]["podStatuses"] = {
      {kPodKey,
       {{"namespace", "alice"}, {"podName", "secretflow-task-psi-0"}, {"podPhase", "Running"}}}};
  task_["status"].erase("serviceStatuses");
  bumpVersion(task_);
  deliver(host_, "kusciatasks", KH_EVENT_MODIFIED, task_);
  ASSERT_EQ(host_.pendingRequests().size(), 1u);
  acceptWrites();
  EXPECT_EQ(podEntry()["createTime"], "2024-05-20T08:00:00Z");
  EXPECT_EQ(podEntry()["readyTime"], "2024-05-20T08:00:09Z");
  EXPECT_EQ(svcEntry()["readyTime"], "2024-05-20T08:00:10Z");
}

TEST_F(TimelineTest, AConflictDecidesAgainAndTransientFailuresAreTheHostsToRetry) {
  ASSERT_NE(startWithWritePending(20), 0u);
  // 409: the task changed under the write; decided again from what it holds, after the window.
  host_.complete(host_.pendingRequests()[0]->id, 409, "{}", "the object has been modified");
  host_.advanceMillis(19);
  EXPECT_TRUE(host_.pendingRequests().empty()); // not a tight loop
  host_.advanceMillis(1);
  ASSERT_EQ(host_.pendingRequests().size(), 1u);
  // 503 or no answer reach a plugin only once the host stopped retrying (the instance stops):
  // the plugin does not retry them itself.
  host_.complete(host_.pendingRequests()[0]->id, 503, "{}", "unavailable");
  host_.advanceMillis(60000);
  EXPECT_TRUE(host_.pendingRequests().empty());
  EXPECT_EQ(host_.metric("kuscia_timeline_status_writes_total", "conflict"), 1);
  EXPECT_EQ(host_.metric("kuscia_timeline_status_writes_total", "unsent"), 1);
  // Nothing is lost: the next change of the task writes what is still missing.
  bumpVersion(task_);
  deliver(host_, "kusciatasks", KH_EVENT_MODIFIED, task_);
  host_.advanceMillis(20);
  acceptWrites();
  EXPECT_EQ(podEntry()["readyTime"], "2024-05-20T08:00:09Z");
  EXPECT_EQ(host_.metric("kuscia_timeline_status_writes_total", "ok"), 1);
  // A task that is gone (404) is not written again; it comes back with the task.
  json p2 = freshPod("uid-2", "2024-05-20T09:00:00Z");
  p2["metadata"]["name"] = "secretflow-task-psi-1";
  deliver(host_, "pods", KH_EVENT_ADDED, p2);
  host_.advanceMillis(5000); // a new entry, not ready: deferred (deferMillis)
  ASSERT_EQ(host_.pendingRequests().size(), 1u);
  host_.complete(host_.pendingRequests()[0]->id, 404, "{}", "not found");
  host_.advanceMillis(60000);
  EXPECT_TRUE(host_.pendingRequests().empty());
}

TEST_F(TimelineTest, ChangesToOneTaskWithinTheWindowMakeOneWrite) {
  start(R"({"coalesceMillis": 50})");
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  deliver(host_, "pods", KH_EVENT_ADDED, pod_);
  deliver(host_, "services", KH_EVENT_ADDED, svc_);
  json status = writeAfter(50);
  EXPECT_TRUE(status["podStatuses"].contains(kPodKey));
  EXPECT_TRUE(status["serviceStatuses"].contains(kSvcKey));
}

TEST_F(TimelineTest, ChangesThatEndNoWaitRideWithTheNextReadyTime) {
  start(R"({"coalesceMillis": 50})"); // deferMillis: the default, 5 s
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  json pod = freshPod(pod_["metadata"]["uid"], pod_["metadata"]["creationTimestamp"]);
  deliver(host_, "pods", KH_EVENT_ADDED, pod);
  json svc = svc_;
  svc["metadata"]["annotations"].erase("kuscia.secretflow/ready-time");
  deliver(host_, "services", KH_EVENT_ADDED, svc);
  // New entries and their createTimes end no wait: they wait for a change that does.
  host_.advanceMillis(3000);
  EXPECT_EQ(writes(), 0u);
  pod["status"] = {{"phase", "Running"}, {"startTime", "2024-05-20T08:00:02Z"}};
  bumpVersion(pod);
  deliver(host_, "pods", KH_EVENT_MODIFIED, pod);
  host_.advanceMillis(1000);
  EXPECT_EQ(writes(), 0u);
  // The pod's Ready cannot wait: one write within the coalescing window carries everything.
  json ready = pod_;
  ready["status"]["startTime"] = "2024-05-20T08:00:02Z";
  bumpVersion(ready);
  deliver(host_, "pods", KH_EVENT_MODIFIED, ready);
  json status = writeAfter(50);
  const json& entry = status["podStatuses"][kPodKey];
  EXPECT_EQ(entry["createTime"], pod_["metadata"]["creationTimestamp"]);
  EXPECT_EQ(entry["startTime"], "2024-05-20T08:00:02Z");
  EXPECT_EQ(entry["readyTime"], "2024-05-20T08:00:09Z");
  EXPECT_EQ(status["serviceStatuses"][kSvcKey]["createTime"], "2024-05-20T08:00:00Z");
  acceptWrites();
  // The deferral's timer went with that write: nothing more is due.
  host_.advanceMillis(10000);
  EXPECT_EQ(writes(), 1u);
  // A change that can wait, with nothing that cannot: written when the deferral is over.
  json other = freshPod("uid-psi-1", "2024-05-20T08:01:00Z");
  other["metadata"]["name"] = "secretflow-task-psi-1";
  deliver(host_, "pods", KH_EVENT_ADDED, other);
  EXPECT_TRUE(writeAfter(5000)["podStatuses"].contains("alice/secretflow-task-psi-1"));
  acceptWrites();
  EXPECT_EQ(task_["status"]["podStatuses"]["alice/secretflow-task-psi-1"]["createTime"],
            "2024-05-20T08:01:00Z");
  // Its start waits for the deferral; the timeline shows it at once.
  other["status"] = {{"phase", "Running"}, {"startTime", "2024-05-20T08:01:02Z"}};
  bumpVersion(other);
  deliver(host_, "pods", KH_EVENT_MODIFIED, other);
  host_.advanceMillis(100);
  EXPECT_EQ(writes(), 2u);
  EXPECT_FALSE(task_["status"]["podStatuses"]["alice/secretflow-task-psi-1"].contains("startTime"));
  EXPECT_EQ(
      plugin().timeline(kTask)->at("entries")["alice/secretflow-task-psi-1"]["times"]["startTime"],
      "2024-05-20T08:01:02Z");
  // With deferMillis 0 it goes within the coalescing window like any other change.
  testing::FakeHost eager("alice");
  ASSERT_TRUE(eager.create(descriptor(), R"({"coalesceMillis": 50, "deferMillis": 0})"));
  ASSERT_TRUE(eager.start());
  deliver(eager, "kusciatasks", KH_EVENT_ADDED, task_);
  json third = freshPod("uid-psi-2", "2024-05-20T08:02:00Z");
  third["metadata"]["name"] = "secretflow-task-psi-2";
  deliver(eager, "pods", KH_EVENT_ADDED, third);
  eager.advanceMillis(49);
  EXPECT_EQ(eager.requests().size(), 0u);
  eager.advanceMillis(1);
  ASSERT_EQ(eager.requests().size(), 1u);
  EXPECT_EQ(json::parse(eager.requests()[0].body)["status"]["podStatuses"].size(), 1u);
}

TEST_F(TimelineTest, APodThatNoLongerNamesATaskLeavesTheBoardAndItsTask) {
  start(R"({"coalesceMillis": 0, "keepFacts": false})"); // the board alone
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  deliver(host_, "pods", KH_EVENT_ADDED, pod_);
  acceptWrites();
  auto times = [this](const char* key) {
    return plugin().timeline(kTask)->at("entries")[key]["times"];
  };
  // What only the entry board knows (Kuscia's CRD has no such field).
  ASSERT_EQ(times(kPodKey)["containersStartTime"], "2024-05-20T08:00:04Z");
  // The pod no longer names the task: forgotten as if deleted, and its board entry with it.
  json untied = pod_;
  untied["metadata"]["annotations"].erase("kuscia.secretflow/task-id");
  bumpVersion(untied);
  deliver(host_, "pods", KH_EVENT_MODIFIED, untied);
  EXPECT_FALSE(times(kPodKey).contains("containersStartTime")) << times(kPodKey).dump();
  EXPECT_EQ(plugin().heldTasks(), 0u); // its last object of the task
  // Another pod of the task goes on the board after it. The board keeps views of the records'
  // keys: one left behind by the forgotten record would be read after it was freed (ASan).
  json other = pod_;
  other["metadata"]["name"] = "secretflow-task-psi-1";
  other["metadata"]["uid"] = "uid-psi-1";
  deliver(host_, "pods", KH_EVENT_ADDED, other);
  acceptWrites();
  EXPECT_EQ(times("alice/secretflow-task-psi-1")["containersStartTime"], "2024-05-20T08:00:04Z");
  EXPECT_FALSE(times(kPodKey).contains("containersStartTime"));
}

TEST_F(TimelineTest, AFinishedTaskIsNotHeldOnceItsObjectsAreGone) {
  start();
  // A month of finished tasks, their pods and services already deleted (as Kuscia does): the
  // instance holds none of them, and writes nothing.
  for (int i = 0; i < 50; ++i) {
    json t = fixture("kusciatask.json");
    t["metadata"]["name"] = "done-" + std::to_string(i);
    t["metadata"]["uid"] = "uid-done-" + std::to_string(i);
    t["status"]["phase"] = "Succeeded";
    deliver(host_, "kusciatasks", KH_EVENT_ADDED, t);
  }
  EXPECT_EQ(plugin().heldTasks(), 0u);
  EXPECT_TRUE(host_.requests().empty());
  // Their timelines are still served, read from the host's cache.
  auto r = host_.httpGet("/api/v1/timelines/done-7");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["phase"], "Succeeded");
  EXPECT_EQ(json::parse(r.body)["entries"][kPodKey]["times"]["readyTime"], "2024-05-20T08:00:09Z");
  EXPECT_EQ(json::parse(host_.httpGet("/api/v1/timelines").body)["tasks"].size(), 50u);
  // A task starting up is held while this domain has objects of it; once its startup is
  // summarised and every write landed, it is let go while its objects still run.
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  deliver(host_, "pods", KH_EVENT_ADDED, pod_);
  deliver(host_, "services", KH_EVENT_ADDED, svc_);
  EXPECT_EQ(plugin().heldTasks(), 1u);
  acceptWrites();
  EXPECT_EQ(podEntry()["readyTime"], "2024-05-20T08:00:09Z");
  EXPECT_EQ(host_.metric("kuscia_timeline_task_startup_seconds"), 1); // summarised
  EXPECT_EQ(plugin().heldTasks(), 0u);
  // A settled task's change that changes nothing writes nothing and is let go again.
  const std::size_t settledWrites = writes();
  bumpVersion(pod_);
  deliver(host_, "pods", KH_EVENT_MODIFIED, pod_);
  bumpVersion(task_);
  deliver(host_, "kusciatasks", KH_EVENT_MODIFIED, task_);
  EXPECT_EQ(writes(), settledWrites);
  EXPECT_EQ(plugin().heldTasks(), 0u);
  // One that changes a time is written again, from the task as the host's cache has it.
  setReady(pod_, false, "2024-05-20T08:01:00Z");
  deliver(host_, "pods", KH_EVENT_MODIFIED, pod_);
  setReady(pod_, true, "2024-05-20T08:01:30Z");
  deliver(host_, "pods", KH_EVENT_MODIFIED, pod_);
  acceptWrites();
  EXPECT_EQ(writes(), settledWrites + 1);
  EXPECT_EQ(podEntry()["readyTime"], "2024-05-20T08:01:30Z"); // the latest Ready
  EXPECT_EQ(plugin().heldTasks(), 0u);
  deliver(host_, "pods", KH_EVENT_DELETED, pod_);
  deliver(host_, "services", KH_EVENT_DELETED, svc_);
  EXPECT_EQ(plugin().heldTasks(), 0u);
  bumpVersion(task_);
  task_["status"]["phase"] = "Succeeded";
  deliver(host_, "kusciatasks", KH_EVENT_MODIFIED, task_);
  EXPECT_EQ(plugin().heldTasks(), 0u);
  // A pod seen after its task was let go brings it back from the cache, and is written.
  json again = freshPod("0f1e2d3c-new-uid", "2024-05-20T08:05:00Z");
  deliver(host_, "pods", KH_EVENT_ADDED, again);
  EXPECT_EQ(plugin().heldTasks(), 1u);
  acceptWrites();
  EXPECT_EQ(podEntry()["createTime"], "2024-05-20T08:05:00Z");
}

// The event of the last write may come before its answer (the host read the task's watch first):
// the task is let go at the answer then, not held until the task is deleted.
TEST_F(TimelineTest, ATaskWhoseLastWriteIsAnsweredAfterItsEventIsLetGo) {
  start();
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  deliver(host_, "pods", KH_EVENT_ADDED, pod_);
  deliver(host_, "services", KH_EVENT_ADDED, svc_);
  EXPECT_EQ(plugin().heldTasks(), 1u);
  acceptWrites(true);
  EXPECT_EQ(podEntry()["readyTime"], "2024-05-20T08:00:09Z");
  EXPECT_EQ(host_.metric("kuscia_timeline_task_startup_seconds"), 1); // summarised
  EXPECT_EQ(plugin().heldTasks(), 0u);
  // An answer older than the task as seen lets it go as well; a newer one (its event still on
  // its way) does not: that event, when it comes, does.
  setReady(pod_, false, "2024-05-20T08:01:00Z");
  deliver(host_, "pods", KH_EVENT_MODIFIED, pod_);
  setReady(pod_, true, "2024-05-20T08:01:30Z");
  deliver(host_, "pods", KH_EVENT_MODIFIED, pod_);
  ASSERT_EQ(host_.pendingRequests().size(), 1u);
  auto* r = host_.pendingRequests().front();
  const uint64_t id = r->id;
  task_.merge_patch(json::parse(r->body));
  bumpVersion(task_);
  ASSERT_EQ(host_.complete(id, 200, task_.dump()), KH_OK);
  EXPECT_EQ(plugin().heldTasks(), 1u);
  ASSERT_EQ(deliver(host_, "kusciatasks", KH_EVENT_MODIFIED, task_), KH_OK);
  EXPECT_EQ(plugin().heldTasks(), 0u);
}

// The answer of a write that comes after its event and after another writer's change of what it
// wrote: the view keeps that change (the patch is not applied over it), so it is written again.
TEST_F(TimelineTest, AWriteAnsweredAfterAnotherWritersChangeDoesNotHideIt) {
  start();
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  deliver(host_, "pods", KH_EVENT_ADDED, pod_);
  deliver(host_, "services", KH_EVENT_ADDED, svc_);
  ASSERT_EQ(host_.pendingRequests().size(), 1u);
  const uint64_t id = host_.pendingRequests().front()->id;
  task_.merge_patch(json::parse(host_.pendingRequests().front()->body));
  bumpVersion(task_);
  const std::string answer = task_.dump(); // the task as the write left it
  deliver(host_, "kusciatasks", KH_EVENT_MODIFIED, task_);
  task_["status"]["podStatuses"][kPodKey]["readyTime"] = "2000-05-20T08:00:09Z";
  bumpVersion(task_);
  deliver(host_, "kusciatasks", KH_EVENT_MODIFIED, task_); // another writer's change
  const std::size_t before = writes();
  ASSERT_EQ(host_.complete(id, 200, answer), KH_OK);
  ASSERT_EQ(writes(), before + 1) << "the other writer's change was hidden";
  EXPECT_EQ(
      json::parse(host_.requests().back().body)["status"]["podStatuses"][kPodKey]["readyTime"],
      "2024-05-20T08:00:09Z");
}

// A write due when another writer (or another host) puts the same times in the status first:
// the timer finds nothing to write, and the task is let go then.
TEST_F(TimelineTest, ATaskWhoseDueWriteFindsNothingToWriteIsLetGo) {
  const json bare = task_;
  start();
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  deliver(host_, "pods", KH_EVENT_ADDED, pod_);
  deliver(host_, "services", KH_EVENT_ADDED, svc_);
  acceptWrites(); // task_ now holds every time
  testing::FakeHost other("alice");
  ASSERT_TRUE(other.create(descriptor(), R"({"coalesceMillis": 100})")) << other.error();
  ASSERT_TRUE(other.start()) << other.error();
  auto& late = *sdk::pluginObject<TaskTimeline>(other.instance());
  deliver(other, "kusciatasks", KH_EVENT_ADDED, bare);
  deliver(other, "pods", KH_EVENT_ADDED, pod_);
  deliver(other, "services", KH_EVENT_ADDED, svc_);
  bumpVersion(task_);
  deliver(other, "kusciatasks", KH_EVENT_MODIFIED, task_);
  EXPECT_EQ(late.heldTasks(), 1u); // its write still due
  other.advanceMillis(100);
  EXPECT_TRUE(other.requests().empty());
  EXPECT_EQ(late.heldTasks(), 0u);
}

// The host may forget a finished task (ABI 1.3 cache_release) once the initial lists are in,
// keepFinishedSeconds after its completionTime, and when this instance holds nothing of it; a task
// in flight, one with a pod left and one finished recently stay in the cache.
TEST_F(TimelineTest, AFinishedTaskIsReleasedOnceItsKeepIsOverAndNothingOfItIsHeld) {
  start(R"({"coalesceMillis": 0, "keepFinishedSeconds": 600})");
  host_.setWallTimeNanos(*model::parseTime("2024-05-20T09:00:00Z"));
  const uint64_t taskSub = test::subscription(host_, "kusciatasks").id;
  auto finished = [](const std::string& name, const std::string& completion) {
    json t = fixture("kusciatask.json");
    t["metadata"]["name"] = name;
    t["status"]["phase"] = name == "failed" ? "Failed" : "Succeeded";
    if (!completion.empty()) t["status"]["completionTime"] = completion;
    return t;
  };
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, finished("old", "2024-05-20T08:10:00Z"));
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, finished("failed", "2024-05-20T08:20:00Z"));
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, finished("recent", "2024-05-20T08:58:00Z"));
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, finished("no-completion", ""));
  // The fixture's task finished, one of its pods still here (Kuscia deletes them after).
  task_["status"]["phase"] = "Succeeded";
  task_["status"]["completionTime"] = "2024-05-20T08:30:00Z";
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  deliver(host_, "pods", KH_EVENT_ADDED, pod_);
  acceptWrites(); // its pod's times
  json running = fixture("kusciatask.json");
  running["metadata"]["name"] = "running";
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, running);
  // Nothing before every initial list is in: a pod of a finished task may still be listed.
  EXPECT_TRUE(host_.releases().empty());
  test::synced(host_);
  auto released = [&](const std::string& name) {
    return host_.released(taskSub, "cross-domain/" + name);
  };
  EXPECT_TRUE(released("old"));
  EXPECT_TRUE(released("failed"));
  EXPECT_FALSE(released("recent"));        // finished 2 minutes ago: kept 10
  EXPECT_FALSE(released("no-completion")); // kept 10 minutes from now
  EXPECT_FALSE(released(kTask));           // its pod is held
  EXPECT_FALSE(released("running"));
  EXPECT_EQ(host_.releases().size(), 2u);
  for (const auto& r : host_.releases()) // the version it saw
    EXPECT_EQ(r.resourceVersion, fixture("kusciatask.json")["metadata"]["resourceVersion"]);
  // Released tasks are no longer in the host's cache: the live list shows what is kept.
  auto list = json::parse(host_.httpGet("/api/v1/timelines").body)["tasks"];
  EXPECT_FALSE(list.contains("old"));
  EXPECT_TRUE(list.contains("recent"));
  // The pod goes: the task is released at once (its keep is over).
  deliver(host_, "pods", KH_EVENT_DELETED, pod_);
  EXPECT_TRUE(released(kTask));
  // Ten minutes on, the recent ones are released by the periodic check.
  host_.advanceMillis(int64_t{8} * 60 * 1000);
  EXPECT_TRUE(released("recent"));
  EXPECT_FALSE(released("no-completion"));
  host_.advanceMillis(int64_t{2} * 60 * 1000 + 5000);
  EXPECT_TRUE(released("no-completion"));
  EXPECT_FALSE(released("running"));
  // A task released, changed again and still finished (the host delivers it as new) is released
  // again; a version newer than the one it saw is released when it is still finished.
  json again = finished("old", "2024-05-20T08:10:00Z");
  bumpVersion(again);
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, again);
  EXPECT_EQ(std::count_if(host_.releases().begin(), host_.releases().end(),
                          [](const auto& r) { return r.key == "cross-domain/old"; }),
            2);
  EXPECT_TRUE(host_.pendingRequests().empty());
}

TEST_F(TimelineTest, ServesItsWebPageAtUi) {
  start();
  for (const char* path : {"/ui", "/ui/"}) {
    auto r = host_.httpGet(path);
    EXPECT_EQ(r.status, 200) << path;
    EXPECT_EQ(r.contentType, "text/html; charset=utf-8");
    EXPECT_NE(r.body.find("/api/v1/timelines"), std::string::npos); // the API it draws from
  }
  EXPECT_EQ(host_.httpGet("/ui/other").status, 404);
}

TEST_F(TimelineTest, TheTimelineRouteShowsEveryEntryAndWhyAPendingOneWaits) {
  start();
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  json waiting = freshPod(pod_["metadata"]["uid"], "2024-05-20T08:00:00Z");
  waiting["status"]["conditions"] = json::parse(R"([{"type":"PodScheduled","status":"False",
      "reason":"Unschedulable","message":"0/1 nodes are available: insufficient cpu",
      "lastTransitionTime":"2024-05-20T08:00:00Z"}])");
  deliver(host_, "pods", KH_EVENT_ADDED, waiting);
  deliver(host_, "services", KH_EVENT_ADDED, svc_);
  acceptWrites();
  host_.setWallTimeNanos(*model::parseTime("2024-05-20T08:10:00Z"));
  auto r = host_.httpGet("/api/v1/timelines/secretflow-task-psi");
  ASSERT_EQ(r.status, 200) << r.body;
  json doc = json::parse(r.body);
  EXPECT_EQ(doc["task"], kTask);
  const json& pod = doc["entries"][kPodKey];
  EXPECT_EQ(pod["kind"], "pod");
  EXPECT_EQ(pod["times"]["createTime"], "2024-05-20T08:00:00Z");
  EXPECT_EQ(pod["missing"], json::parse(R"(["startTime","readyTime"])"));
  EXPECT_EQ(pod["waiting"]["phase"], "scheduling");
  EXPECT_EQ(pod["waiting"]["reason"], "Unschedulable");
  EXPECT_EQ(pod["waiting"]["message"], "0/1 nodes are available: insufficient cpu");
  EXPECT_EQ(pod["waiting"]["seconds"], 600);
  const json& svc = doc["entries"][kSvcKey];
  EXPECT_EQ(svc["durations"]["createToReady"], 10);
  EXPECT_TRUE(svc["missing"].empty());
  EXPECT_FALSE(svc.contains("waiting"));
  // The stuck gauge counts it once the wait is longer than stuckAfterSeconds (300).
  host_.advanceMillis(5000);
  EXPECT_EQ(host_.metric("kuscia_timeline_stuck_entries", "scheduling"), 1);
  EXPECT_EQ(host_.metric("kuscia_timeline_stuck_entries", "ready"), 0);
  EXPECT_EQ(host_.httpGet("/api/v1/timelines/no-such-task").status, 404);
  auto list = json::parse(host_.httpGet("/api/v1/timelines").body);
  EXPECT_TRUE(list["tasks"].contains(kTask));
}

// The task list is paged, newest first: a month of finished tasks is never one answer.
TEST_F(TimelineTest, TheTaskListIsPagedNewestFirst) {
  start();
  // 50 tasks, created a minute apart, the last two at the same second (then by name); one
  // without a creation time, listed last.
  std::vector<std::string> newestFirst;
  for (int i = 0; i < 50; ++i) {
    json t = fixture("kusciatask.json");
    std::string name = "t-" + std::to_string(100 + i);
    t["metadata"]["name"] = name;
    t["metadata"]["uid"] = "uid-" + name;
    int minute = std::min(i, 48);
    t["metadata"]["creationTimestamp"] = "2024-05-20T" + std::to_string(10 + minute / 60) + ":" +
                                         (minute % 60 < 10 ? "0" : "") +
                                         std::to_string(minute % 60) + ":00Z";
    t["status"]["phase"] = i % 2 == 0 ? "Succeeded" : "Running";
    deliver(host_, "kusciatasks", KH_EVENT_ADDED, t);
  }
  json undated = fixture("kusciatask.json");
  undated["metadata"]["name"] = "t-undated";
  undated["metadata"]["uid"] = "uid-undated";
  undated["metadata"].erase("creationTimestamp");
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, undated);
  newestFirst = {"t-148", "t-149"};
  for (int i = 47; i >= 0; --i)
    newestFirst.push_back("t-" + std::to_string(100 + i));
  newestFirst.push_back("t-undated");

  std::vector<std::string> seen;
  std::string token;
  int pages = 0;
  do {
    auto r = host_.httpGet("/api/v1/timelines",
                           "limit=20" + (token.empty() ? "" : "&continue=" + token));
    ASSERT_EQ(r.status, 200) << r.body;
    json page = json::parse(r.body);
    ASSERT_LE(page["tasks"].size(), 20u);
    // The page's tasks in list order: by createTime (newest first), then name.
    std::vector<std::pair<std::string, std::string>> order;
    for (const auto& [name, t] : page["tasks"].items())
      order.emplace_back(t["createTime"].get<std::string>(), name);
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
      if (a.first.empty() != b.first.empty()) return b.first.empty();
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (const auto& o : order)
      seen.push_back(o.second);
    token = page.value("continue", "");
    ++pages;
  } while (!token.empty() && pages < 10);
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(seen, newestFirst); // each task once, in order across the pages
  json first = json::parse(host_.httpGet("/api/v1/timelines", "limit=1").body);
  EXPECT_EQ(first["tasks"]["t-148"]["phase"], "Succeeded");
  EXPECT_EQ(first["tasks"]["t-148"]["createTime"], "2024-05-20T10:48:00Z");
  const json fixed = fixture("kusciatask.json")["status"];
  EXPECT_EQ(first["tasks"]["t-148"]["entries"],
            fixed["podStatuses"].size() + fixed["serviceStatuses"].size());
  EXPECT_EQ(first["continue"], "1716202080000000000.t-148"); // after the last one listed
  // Without a limit: up to 500.
  EXPECT_EQ(json::parse(host_.httpGet("/api/v1/timelines").body)["tasks"].size(), 51u);
  for (const char* bad :
       {"limit=0", "limit=1001", "limit=x", "continue=nope", "continue=1.Bad_Name"})
    EXPECT_EQ(host_.httpGet("/api/v1/timelines", bad).status, 400) << bad;
}

TEST_F(TimelineTest, NegativeDurationsAreKeptAndFlagged) {
  start();
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  pod_["status"]["startTime"] = "2024-05-20T07:59:58Z"; // the agent's clock is behind
  deliver(host_, "pods", KH_EVENT_ADDED, pod_);
  acceptWrites();
  EXPECT_EQ(podEntry()["startTime"], "2024-05-20T07:59:58Z");
  EXPECT_EQ(host_.metric("kuscia_timeline_negative_durations_total", "pod_create_to_start"), 1);
  json doc = json::parse(host_.httpGet("/api/v1/timelines/secretflow-task-psi").body);
  EXPECT_EQ(doc["entries"][kPodKey]["durations"]["createToStart"], -2);
  EXPECT_EQ(doc["entries"][kPodKey]["negative"], json::array({"createToStart"}));
}

// What the pod and its Events told is kept on the task once it started, so that the document and
// its summary stay the same once Kuscia deleted the pod, its service and the Events, and after a
// host restarted then (nothing but the task left to read).
TEST_F(TimelineTest, FactsOutliveThePodTheEventsAndARestart) {
  start();
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  deliver(host_, "pods", KH_EVENT_ADDED, pod_);
  json pulling = podEvent(pod_, "Pulling", "Pulling image \"secretflow\"", "2024-05-20T08:00:02Z");
  json pulled = podEvent(pod_, "Pulled", "Successfully pulled image \"secretflow\" in 1.2s",
                         "2024-05-20T08:00:03Z");
  deliver(host_, "events", KH_EVENT_ADDED, pulling);
  deliver(host_, "events", KH_EVENT_ADDED, pulled);
  deliver(host_, "services", KH_EVENT_ADDED, svc_);
  acceptWrites();
  host_.advanceMillis(5000); // kept at the next timer
  acceptWrites();
  ASSERT_TRUE(task_["metadata"]["annotations"].contains(model::kKeptFactsAnnotation));
  const json before = *plugin().timeline(kTask);
  ASSERT_EQ(before["entries"][kPodKey]["times"]["imagePullEndTime"], "2024-05-20T08:00:03Z");
  ASSERT_TRUE(before["summary"].value("complete", false)) << before["summary"].dump();
  // Kuscia deletes the finished task's pod and service; the Events expire.
  deliver(host_, "events", KH_EVENT_DELETED, pulling);
  deliver(host_, "events", KH_EVENT_DELETED, pulled);
  deliver(host_, "pods", KH_EVENT_DELETED, pod_);
  deliver(host_, "services", KH_EVENT_DELETED, svc_);
  const json after = *plugin().timeline(kTask);
  EXPECT_EQ(after["summary"], before["summary"]);
  EXPECT_EQ(after["entries"][kPodKey]["times"], before["entries"][kPodKey]["times"]);
  EXPECT_EQ(after["entries"][kPodKey]["reasons"], before["entries"][kPodKey]["reasons"]);
  // A host started now reads the task alone.
  testing::FakeHost restarted("alice");
  ASSERT_TRUE(restarted.create(descriptor(), R"({"coalesceMillis": 0})")) << restarted.error();
  ASSERT_TRUE(restarted.start());
  deliver(restarted, "kusciatasks", KH_EVENT_ADDED, task_);
  test::synced(restarted);
  const json again = *sdk::pluginObject<TaskTimeline>(restarted.instance())->timeline(kTask);
  EXPECT_EQ(again["summary"], before["summary"]);
  EXPECT_EQ(again["entries"][kPodKey]["times"], before["entries"][kPodKey]["times"]);
  EXPECT_TRUE(restarted.requests().empty()); // nothing of its own to write
  // A host restarted while the pod is still there but its Events expired knows less than what
  // was kept: it writes nothing, forgets nothing, and answers the same.
  testing::FakeHost later("alice");
  ASSERT_TRUE(later.create(descriptor(), R"({"coalesceMillis": 0})")) << later.error();
  ASSERT_TRUE(later.start());
  deliver(later, "kusciatasks", KH_EVENT_ADDED, task_);
  deliver(later, "pods", KH_EVENT_ADDED, pod_);
  deliver(later, "services", KH_EVENT_ADDED, svc_);
  test::synced(later);
  deliver(later, "kusciatasks", KH_EVENT_MODIFIED, task_);
  later.advanceMillis(10000);
  EXPECT_TRUE(later.requests().empty()) << later.requests().size() << " writes";
  const json known = *sdk::pluginObject<TaskTimeline>(later.instance())->timeline(kTask);
  EXPECT_EQ(known["summary"], before["summary"]);
  EXPECT_EQ(known["entries"][kPodKey]["times"], before["entries"][kPodKey]["times"]);
}

TEST_F(TimelineTest, ImagePullAndReasonsComeFromEventsIntoTheTimelineNotTheStatus) {
  start();
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  // Events may come before their pod.
  deliver(host_, "events", KH_EVENT_ADDED,
          podEvent(pod_, "Pulling", "Pulling image \"secretflow\"", "2024-05-20T08:00:02Z"));
  deliver(host_, "pods", KH_EVENT_ADDED, pod_);
  deliver(host_, "events", KH_EVENT_ADDED,
          podEvent(pod_, "Failed", "Failed to pull image: i/o timeout", "2024-05-20T08:00:02Z"));
  deliver(host_, "events", KH_EVENT_ADDED,
          podEvent(pod_, "Pulled", "Successfully pulled image in 1s", "2024-05-20T08:00:03Z"));
  // Not this pod's: another incarnation, another kind.
  json stale = podEvent(pod_, "Pulled", "old", "2024-05-20T08:00:30Z", "old.1");
  stale["involvedObject"]["uid"] = "another-incarnation";
  deliver(host_, "events", KH_EVENT_ADDED, stale);
  json other = podEvent(pod_, "Pulled", "svc", "2024-05-20T08:00:40Z", "svc.1");
  other["involvedObject"]["kind"] = "Service";
  deliver(host_, "events", KH_EVENT_ADDED, other);
  acceptWrites();
  json e = plugin().timeline(kTask)->at("entries")[kPodKey];
  EXPECT_EQ(e["times"]["imagePullStartTime"], "2024-05-20T08:00:02Z");
  EXPECT_EQ(e["times"]["imagePullEndTime"], "2024-05-20T08:00:03Z");
  EXPECT_EQ(e["times"]["containersStartTime"], "2024-05-20T08:00:04Z");
  EXPECT_EQ(e["durations"]["imagePull"], 1);
  // The failure is why the pull waited, kept after the later success.
  EXPECT_EQ(e["reasons"]["pulling"]["reason"], "Failed");
  EXPECT_EQ(e["reasons"]["pulling"]["message"], "Failed to pull image: i/o timeout");
  // Kuscia's CRD has no such fields: the status never gets them.
  for (const char* field : {"imagePullStartTime", "imagePullEndTime", "containersStartTime"})
    EXPECT_FALSE(podEntry().contains(field)) << field;
  EXPECT_EQ(host_.metric("kuscia_timeline_pod_image_pull_seconds"), 1);
  EXPECT_EQ(host_.metricSum("kuscia_timeline_pod_image_pull_seconds"), 1);
  EXPECT_EQ(host_.metricSum("kuscia_timeline_pod_containers_start_seconds"), 2);
}

TEST_F(TimelineTest, TheDocumentSummarizesTheTaskAndACompleteTaskIsObservedOnce) {
  start();
  deliver(host_, "kusciatasks", KH_EVENT_ADDED, task_);
  // The service is not programmed yet: incomplete, and it is what the task waits for.
  svc_["metadata"]["annotations"].erase("kuscia.secretflow/ready-time");
  deliver(host_, "services", KH_EVENT_ADDED, svc_);
  deliver(host_, "pods", KH_EVENT_ADDED, pod_);
  deliver(host_, "events", KH_EVENT_ADDED,
          podEvent(pod_, "Pulling", "Pulling image", "2024-05-20T08:00:02Z"));
  deliver(host_, "events", KH_EVENT_ADDED,
          podEvent(pod_, "Pulled", "Successfully pulled image", "2024-05-20T08:00:03Z"));
  acceptWrites();
  host_.setWallTimeNanos(*model::parseTime("2024-05-20T08:00:30Z"));
  json s = json::parse(host_.httpGet("/api/v1/timelines/secretflow-task-psi").body)["summary"];
  EXPECT_FALSE(s["complete"]);
  EXPECT_EQ(s["blame"]["entry"], kSvcKey);
  EXPECT_EQ(s["blame"]["phase"], "programming");
  EXPECT_EQ(s["blame"]["reason"], "NoEndpoints");
  EXPECT_EQ(host_.metric("kuscia_timeline_task_startup_seconds"), 0);
  // Its Endpoints get an address (read from the host's cache when asked, not kept): now it waits
  // for the gateway.
  deliver(host_, "endpoints", KH_EVENT_ADDED, fixture("endpoints.json"));
  s = json::parse(host_.httpGet("/api/v1/timelines/secretflow-task-psi").body)["summary"];
  EXPECT_EQ(s["blame"]["reason"], "NotProgrammed") << s.dump();
  // Programmed: complete; the path runs through the pod the service exposes.
  svc_["metadata"]["annotations"]["kuscia.secretflow/ready-time"] = "2024-05-20T08:00:10Z";
  bumpVersion(svc_);
  deliver(host_, "services", KH_EVENT_MODIFIED, svc_);
  acceptWrites();
  json doc = *plugin().timeline(kTask);
  s = doc["summary"];
  // Why programming waited goes with the wait: nothing keeps it once the service is gone, so the
  // ready service's answer is the one after Kuscia's cleanup.
  EXPECT_FALSE(doc["entries"][kSvcKey].contains("reasons")) << doc["entries"][kSvcKey].dump();
  EXPECT_FALSE(doc["entries"][kSvcKey].contains("waiting"));
  EXPECT_TRUE(s["complete"]);
  EXPECT_EQ(s["startupSeconds"], 12); // 07:59:58 -> 08:00:10
  EXPECT_EQ(s["lastParty"], "alice");
  std::vector<std::string> phases;
  for (const auto& p : s["criticalPath"])
    phases.push_back(p["phase"]);
  EXPECT_EQ(phases, (std::vector<std::string>{"creating", "accepting", "pulling", "starting",
                                              "readiness", "programming"}));
  EXPECT_EQ(s["blame"]["entry"], kPodKey);
  EXPECT_EQ(s["blame"]["phase"], "readiness");
  EXPECT_EQ(s["blame"]["seconds"], 5);
  EXPECT_EQ(host_.metric("kuscia_timeline_task_startup_seconds"), 1);
  EXPECT_EQ(host_.metricSum("kuscia_timeline_task_startup_seconds"), 12);
  EXPECT_EQ(host_.metric("kuscia_timeline_critical_path_seconds_total", "readiness"), 5);
  // Its exemplar, and its pod's and service's, name the task's trace: the id otel-export derives
  // (SHA-256 of "kuscia-host/trace/v1\n" and the task's name, its first 16 bytes).
  const std::map<std::string, std::string> trace = {
      {"trace_id", "48b80885966b2c6ce616d7c90cbe1ae1"}};
  EXPECT_EQ(host_.exemplar("kuscia_timeline_task_startup_seconds"), trace);
  EXPECT_EQ(host_.exemplar("kuscia_timeline_pod_create_to_ready_seconds"), trace);
  EXPECT_EQ(host_.exemplar("kuscia_timeline_service_create_to_ready_seconds"), trace);
  EXPECT_EQ(host_.invalidMetricCalls(), 0);
  EXPECT_EQ(host_.metric("kuscia_timeline_blamed_tasks_total", "alice,readiness"), 1);
  // Once: later events of the complete task observe nothing more.
  bumpVersion(pod_);
  deliver(host_, "pods", KH_EVENT_MODIFIED, pod_);
  deliver(host_, "kusciatasks", KH_EVENT_MODIFIED, task_);
  EXPECT_EQ(host_.metric("kuscia_timeline_task_startup_seconds"), 1);
}

TEST_F(TimelineTest, InstancesOfSeveralDomainsAnswerOneSummary) {
  // Centralized: alice's and bob's instances in one host; bob's pod pulled its image slowly.
  testing::FakeHost bob("bob");
  bob.shareLibraryStates(host_); // one host: one entry board
  start();
  ASSERT_TRUE(bob.create(descriptor(), R"({"coalesceMillis": 0})")) << bob.error();
  ASSERT_TRUE(bob.start());
  json bobPod = pod_;
  bobPod["metadata"]["namespace"] = "bob";
  bobPod["metadata"]["uid"] = "bob-pod-uid";
  bobPod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"] =
      "2024-05-20T08:00:44Z";
  setReady(bobPod, true, "2024-05-20T08:00:45Z");
  for (auto* h : {&host_, &bob})
    deliver(*h, "kusciatasks", KH_EVENT_ADDED, task_);
  deliver(host_, "pods", KH_EVENT_ADDED, pod_);
  deliver(bob, "pods", KH_EVENT_ADDED, bobPod);
  deliver(bob, "events", KH_EVENT_ADDED,
          podEvent(bobPod, "Pulling", "Pulling image", "2024-05-20T08:00:03Z"));
  deliver(bob, "events", KH_EVENT_ADDED,
          podEvent(bobPod, "Pulled", "Successfully pulled image in 40s", "2024-05-20T08:00:43Z"));
  // Both instances' writes land in the one task.
  for (int round = 0; round < 3; ++round)
    for (auto* h : {&host_, &bob})
      while (!h->pendingRequests().empty()) {
        auto* r = h->pendingRequests().front();
        task_.merge_patch(json::parse(r->body));
        bumpVersion(task_);
        ASSERT_EQ(h->complete(r->id, 200, task_.dump()), KH_OK);
        for (auto* to : {&host_, &bob})
          ASSERT_EQ(deliver(*to, "kusciatasks", KH_EVENT_MODIFIED, task_), KH_OK);
      }
  auto* bobPlugin = sdk::pluginObject<TaskTimeline>(bob.instance());
  json fromAlice = plugin().timeline(kTask)->at("summary");
  json fromBob = bobPlugin->timeline(kTask)->at("summary");
  ASSERT_TRUE(fromAlice["complete"]) << fromAlice.dump();
  EXPECT_EQ(fromAlice, fromBob);
  EXPECT_EQ(fromAlice["lastParty"], "bob");
  EXPECT_EQ(fromAlice["blame"]["phase"], "pulling");
  EXPECT_EQ(fromAlice["blame"]["entry"], "bob/secretflow-task-psi-0");
  // Each instance holds its own domain's entries and counts the other party's. Each observed the
  // task once, complete as its domain saw it: alice's when its entries were ready (bob had not
  // written), bob's once alice's entries, counted ready, and its own were: the whole startup.
  EXPECT_EQ(host_.metric("kuscia_timeline_task_startup_seconds"), 1);
  EXPECT_EQ(bob.metric("kuscia_timeline_task_startup_seconds"), 1);
  EXPECT_EQ(bob.metricSum("kuscia_timeline_task_startup_seconds"),
            fromAlice["startupSeconds"].get<double>());
  // The counters bob's instance observed say what the document says, the pull it only knows
  // from the entry board included (the counters are summed without building the document).
  for (const auto& p : fromAlice["criticalPath"]) {
    if (p["seconds"].get<double>() > 0) {
      EXPECT_EQ(
          bob.metric("kuscia_timeline_critical_path_seconds_total", p["phase"].get<std::string>()),
          p["seconds"].get<double>())
          << p.dump();
    }
  }
  EXPECT_EQ(bob.metric("kuscia_timeline_critical_path_seconds_total", "pulling"),
            fromAlice["blame"]["seconds"].get<double>());
  EXPECT_GT(bob.metric("kuscia_timeline_critical_path_seconds_total", "pulling"), 30);
  EXPECT_EQ(bob.metric("kuscia_timeline_blamed_tasks_total", "bob,pulling"), 1);
  // Alice's instance shows bob's pull, as bob's does.
  EXPECT_EQ(plugin().timeline(kTask)->at(
                "entries")["bob/secretflow-task-psi-0"]["times"]["imagePullEndTime"],
            "2024-05-20T08:00:43Z");
}

} // namespace
} // namespace kuscia_host::plugins::timeline
