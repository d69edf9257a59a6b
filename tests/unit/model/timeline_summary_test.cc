// The task-level summary and critical path (model/include/kuscia_model/timeline_summary.h) on
// hand-made timelines: each case says who should be blamed and why.
#include <kuscia_model/pod_events.h>
#include <kuscia_model/timeline.h>
#include <kuscia_model/timeline_summary.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using nlohmann::json;
namespace tl = kuscia_host::model::timeline;

// "2026-12-01T10:00:SS" + seconds past 10:00:00 (whole seconds, as Kuscia writes them).
std::string at(int seconds) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "2026-12-01T10:%02d:%02dZ", seconds / 60, seconds % 60);
  return buf;
}
int64_t nanosAt(int seconds) {
  return *kuscia_host::sdk::parseTime(at(seconds));
}

struct Doc {
  json doc = {{"task", "t1"}, {"createTime", at(0)}, {"entries", json::object()}};
  // A pod: the times given as seconds from the task's creation (negative: absent).
  Doc& pod(const std::string& key, std::initializer_list<std::pair<const char*, int>> times,
           json reasons = json()) {
    json status = {{"podPhase", "Running"}};
    for (auto [field, s] : times)
      status[field] = at(s);
    if (!reasons.is_null()) status["reasons"] = reasons;
    doc["entries"][key] = tl::entry(key, status, true);
    return *this;
  }
  Doc& service(const std::string& key, int create, int ready = -1) {
    json status = {{"createTime", at(create)}};
    if (ready >= 0) status["readyTime"] = at(ready);
    doc["entries"][key] = tl::entry(key, status, false);
    return *this;
  }
  json summary(int now = 600) const { return tl::summarize(doc, nanosAt(now)); }
};

std::vector<std::string> pathOf(const json& summary) {
  std::vector<std::string> out;
  for (const auto& p : summary["criticalPath"])
    out.push_back(p["entry"].get<std::string>() + ":" + p["phase"].get<std::string>());
  return out;
}

// The task's own preparing (its creation to ResourceCreated: ports, pre-checks, its objects), from
// the task's conditions as every reader's document carries them; the entries' phases and the
// critical path are as they were (each pod's creating covers the same span from its side).
TEST(TimelineSummary, TheTasksPreparingEndsAtResourceCreated) {
  json task = {
      {"metadata", {{"name", "t1"}, {"namespace", "cross-domain"}, {"creationTimestamp", at(0)}}},
      {"status",
       {{"phase", "Running"},
        {"conditions",
         {{{"type", "PortsAllocated"}, {"status", "True"}, {"lastTransitionTime", at(0)}},
          {{"type", "ResourceCreated"}, {"status", "True"}, {"lastTransitionTime", at(2)}}}},
        {"podStatuses",
         {{"alice/p", {{"createTime", at(2)}, {"startTime", at(3)}, {"readyTime", at(5)}}}}}}}};
  json doc = tl::fromTask(task);
  EXPECT_EQ(doc["resourceCreatedTime"], at(2));
  const json s = tl::summarize(doc, nanosAt(60));
  ASSERT_TRUE(s.contains("preparing"));
  EXPECT_EQ(s["preparing"]["seconds"], 2.0);
  EXPECT_EQ(s["preparing"]["to"], at(2));
  EXPECT_EQ(s["criticalPath"][0]["phase"], "creating");
  EXPECT_EQ(s["criticalPath"][0]["seconds"], 2.0);
  // A failed ResourceCreated (a pre-check) ends no preparing.
  task["status"]["conditions"][1]["status"] = "False";
  EXPECT_FALSE(tl::summarize(tl::fromTask(task), nanosAt(60)).contains("preparing"));
}

// A party whose pod started late is the last party and carries the blame.
TEST(TimelineSummary, SlowPartyIsLastAndBlamed) {
  Doc d;
  d.pod("alice/t1-0", {{"createTime", 1}, {"startTime", 2}, {"readyTime", 5}});
  d.pod("bob/t1-0", {{"createTime", 1}, {"startTime", 30}, {"readyTime", 32}});
  json s = d.summary();
  EXPECT_TRUE(s["complete"]);
  EXPECT_EQ(s["startupSeconds"], 32);
  EXPECT_EQ(s["allReadyTime"], at(32));
  EXPECT_EQ(s["lastParty"], "bob");
  EXPECT_EQ(s["parties"]["alice"]["startupSeconds"], 5);
  EXPECT_EQ(s["parties"]["bob"]["readyTime"], at(32));
  EXPECT_EQ(pathOf(s), (std::vector<std::string>{"bob/t1-0:creating", "bob/t1-0:accepting",
                                                 "bob/t1-0:readiness"}));
  EXPECT_EQ(s["blame"]["entry"], "bob/t1-0");
  EXPECT_EQ(s["blame"]["party"], "bob");
  EXPECT_EQ(s["blame"]["phase"], "accepting");
  EXPECT_EQ(s["blame"]["seconds"], 29);
}

// A slow image pull is its own phase, with the reason it waited for.
TEST(TimelineSummary, SlowImagePullIsBlamedWithItsReason) {
  Doc d;
  d.pod("alice/t1-0",
        {{"createTime", 1},
         {"startTime", 2},
         {"imagePullStartTime", 3},
         {"imagePullEndTime", 43},
         {"containersStartTime", 44},
         {"readyTime", 46}},
        {{"pulling", {{"reason", "Pulled"}, {"message", "Successfully pulled image in 40s"}}}});
  json s = d.summary();
  EXPECT_EQ(pathOf(s), (std::vector<std::string>{"alice/t1-0:creating", "alice/t1-0:accepting",
                                                 "alice/t1-0:pulling", "alice/t1-0:starting",
                                                 "alice/t1-0:readiness"}));
  // The pulling phase starts where accepting ended (the sandbox set-up before the first pull
  // belongs to it); the entry's times keep the pull itself.
  EXPECT_EQ(s["criticalPath"][2]["from"], at(2));
  EXPECT_EQ(s["blame"]["phase"], "pulling");
  EXPECT_EQ(s["blame"]["seconds"], 41);
  EXPECT_EQ(s["blame"]["reason"], "Pulled");
  EXPECT_EQ(d.doc["entries"]["alice/t1-0"]["durations"]["imagePull"], 40);
}

// The pull's own duration, as the Pulled Event says it (kubelet's and Kuscia's agent's formats),
// beside the phase, which also holds the time before the pull began.
TEST(TimelineSummary, APullSaysItsOwnDurationBesideThePhase) {
  using tl::goDurationSeconds;
  using tl::pulledSeconds;
  EXPECT_EQ(goDurationSeconds("1.6s"), 1.6);
  EXPECT_EQ(goDurationSeconds("8.000s (8.000s including waiting)"), 8.0);
  EXPECT_EQ(goDurationSeconds("1m2.5s"), 62.5);
  EXPECT_EQ(goDurationSeconds("1h0m3s"), 3603);
  EXPECT_DOUBLE_EQ(*goDurationSeconds("500ms"), 0.5);
  EXPECT_DOUBLE_EQ(*goDurationSeconds("250\xc2\xb5s"), 0.00025);
  EXPECT_FALSE(goDurationSeconds("s"));
  EXPECT_FALSE(goDurationSeconds("soon"));
  // Kuscia's agent (agent/images/image_manager.go) and the kubelet (with its waiting and size).
  EXPECT_EQ(pulledSeconds(R"(Successfully pulled image "secretflow" in 1.600s)"), 1.6);
  EXPECT_EQ(pulledSeconds(R"(Successfully pulled image "reg.io/sf in x:1" in 2.4s (2.4s including )"
                          R"(waiting). Image size: 1234 bytes.)"),
            2.4);
  EXPECT_FALSE(pulledSeconds(R"(Container image "secretflow" already present on machine)"));
  EXPECT_FALSE(pulledSeconds(R"(Pulling image "secretflow")"));
  Doc d;
  d.pod(
      "bob/t1-0",
      {{"createTime", 1},
       {"startTime", 2},
       {"imagePullStartTime", 3},
       {"imagePullEndTime", 5},
       {"readyTime", 6}},
      {{"pulling",
        {{"reason", "Pulled"}, {"message", R"(Successfully pulled image "secretflow" in 1.6s)"}}}});
  json s = d.summary();
  EXPECT_EQ(s["blame"]["phase"], "pulling");
  EXPECT_EQ(s["blame"]["seconds"], 3);
  EXPECT_EQ(s["blame"]["pullSeconds"], 1.6);
  for (const auto& p : s["criticalPath"])
    EXPECT_EQ(p.contains("pullSeconds"), p["phase"] == "pulling") << p.dump();
}

// Only a Pulled Event (the image was present): no pulling phase, never guessed.
TEST(TimelineSummary, PulledWithoutPullingHasNoPullingPhase) {
  Doc d;
  d.pod("alice/t1-0", {{"createTime", 1},
                       {"startTime", 2},
                       {"imagePullEndTime", 3},
                       {"containersStartTime", 4},
                       {"readyTime", 9}});
  EXPECT_EQ(pathOf(d.summary()),
            (std::vector<std::string>{"alice/t1-0:creating", "alice/t1-0:accepting",
                                      "alice/t1-0:starting", "alice/t1-0:readiness"}));
}

// A service programmed late, long after its pod was ready: the gateway is blamed.
TEST(TimelineSummary, ServiceProgrammedLateIsBlamed) {
  Doc d;
  d.pod("alice/t1-0", {{"createTime", 1}, {"startTime", 2}, {"readyTime", 5}});
  d.service("alice/t1-0-fed", 1, 40);
  json s = d.summary();
  EXPECT_EQ(s["lastParty"], "alice");
  EXPECT_EQ(pathOf(s),
            (std::vector<std::string>{"alice/t1-0:creating", "alice/t1-0:accepting",
                                      "alice/t1-0:readiness", "alice/t1-0-fed:programming"}));
  EXPECT_EQ(s["blame"]["entry"], "alice/t1-0-fed");
  EXPECT_EQ(s["blame"]["phase"], "programming");
  EXPECT_EQ(s["blame"]["from"], at(5)); // from the moment its pod was ready
  EXPECT_EQ(s["blame"]["seconds"], 35);
}

// A service that waited for its slow pod: the path goes through the pod, which is blamed.
TEST(TimelineSummary, ServiceWaitingForItsPodBlamesThePod) {
  Doc d;
  d.pod("alice/t1-0", {{"createTime", 1}, {"startTime", 25}, {"readyTime", 28}});
  d.service("alice/t1-0-fed", 1, 29);
  json s = d.summary();
  EXPECT_EQ(s["criticalPath"].back()["entry"], "alice/t1-0-fed");
  EXPECT_EQ(s["criticalPath"].back()["seconds"], 1);
  EXPECT_EQ(s["blame"]["entry"], "alice/t1-0");
  EXPECT_EQ(s["blame"]["phase"], "accepting");
}

// One pod of several is slow: the path names it alone.
TEST(TimelineSummary, OnePodOfSeveral) {
  Doc d;
  for (int i = 0; i < 4; ++i)
    d.pod("alice/t1-" + std::to_string(i),
          {{"createTime", 1}, {"startTime", 2}, {"readyTime", i == 2 ? 50 : 6}});
  json s = d.summary();
  EXPECT_EQ(s["blame"]["entry"], "alice/t1-2");
  EXPECT_EQ(s["blame"]["phase"], "readiness");
  EXPECT_EQ(s["parties"]["alice"]["entries"], 4);
}

// A pod that flapped after startup: its first ready ends the startup, not the latest.
TEST(TimelineSummary, FlappingPodUsesFirstReady) {
  Doc d;
  d.pod("alice/t1-0",
        {{"createTime", 1}, {"startTime", 2}, {"firstReadyTime", 4}, {"readyTime", 300}});
  d.pod("bob/t1-0", {{"createTime", 1}, {"startTime", 2}, {"readyTime", 10}});
  json s = d.summary();
  EXPECT_EQ(s["startupSeconds"], 10);
  EXPECT_EQ(s["lastParty"], "bob");
}

// A container restarted after startup: its later start time is not a phase end.
TEST(TimelineSummary, TimesAfterReadyAreNotPhaseEnds) {
  Doc d;
  d.pod("alice/t1-0",
        {{"createTime", 1}, {"startTime", 2}, {"containersStartTime", 90}, {"readyTime", 8}});
  EXPECT_EQ(pathOf(d.summary()),
            (std::vector<std::string>{"alice/t1-0:creating", "alice/t1-0:accepting",
                                      "alice/t1-0:readiness"}));
}

// Clocks that disagree: negative phases are kept as they are and never blamed.
TEST(TimelineSummary, ClockSkewKeepsNegativePhasesUnblamed) {
  Doc d;
  d.pod("bob/t1-0", {{"createTime", 5}, {"startTime", 3}, {"readyTime", 12}});
  json s = d.summary();
  ASSERT_EQ(s["criticalPath"].size(), 3U);
  EXPECT_EQ(s["criticalPath"][1]["phase"], "accepting");
  EXPECT_EQ(s["criticalPath"][1]["seconds"], -2);
  EXPECT_EQ(s["blame"]["phase"], "readiness");
  EXPECT_EQ(s["blame"]["seconds"], 9);
}

// Ties at one second go to the entry created first, then to a pod over a service.
TEST(TimelineSummary, TiesBreakByCreationThenKind) {
  Doc d;
  d.pod("alice/t1-0", {{"createTime", 3}, {"startTime", 4}, {"readyTime", 20}});
  d.pod("bob/t1-0", {{"createTime", 1}, {"startTime", 4}, {"readyTime", 20}});
  EXPECT_EQ(d.summary()["lastParty"], "bob");
  Doc e;
  e.pod("alice/t1-0", {{"createTime", 1}, {"startTime", 4}, {"readyTime", 20}});
  e.service("alice/zz", 1, 20);
  EXPECT_EQ(e.summary()["criticalPath"].back()["entry"], "alice/t1-0");
}

// An incomplete task: no startup or path; the entries still waiting, longest first, and blame
// on the longest, ongoing, with its reason.
TEST(TimelineSummary, IncompleteTaskNamesWhatItWaitsFor) {
  Doc d;
  d.pod("alice/t1-0", {{"createTime", 1}, {"startTime", 2}, {"readyTime", 5}});
  d.pod("bob/t1-0", {{"createTime", 1}, {"startTime", 3}, {"imagePullStartTime", 4}},
        {{"pulling", {{"reason", "ImagePullBackOff"}, {"message", "Back-off pulling image"}}}});
  d.service("bob/t1-0-fed", 2);
  json s = d.summary(100);
  EXPECT_FALSE(s["complete"]);
  EXPECT_FALSE(s.contains("startupSeconds"));
  EXPECT_FALSE(s.contains("criticalPath"));
  EXPECT_EQ(s["parties"]["alice"]["startupSeconds"], 5);
  EXPECT_FALSE(s["parties"]["bob"].contains("readyTime"));
  ASSERT_EQ(s["pending"].size(), 2U);
  EXPECT_EQ(s["pending"][0]["entry"], "bob/t1-0-fed"); // waiting since 2 s
  EXPECT_EQ(s["pending"][1]["phase"], "pulling");
  EXPECT_EQ(s["pending"][1]["reason"], "ImagePullBackOff");
  EXPECT_EQ(s["blame"]["entry"], "bob/t1-0-fed");
  EXPECT_EQ(s["blame"]["ongoing"], true);
  EXPECT_EQ(s["blame"]["seconds"], 98);
}

// The phase an unstarted pod waits in: scheduling until scheduled, then accepting.
TEST(TimelineSummary, PendingPodPhases) {
  Doc d;
  d.pod("alice/t1-0", {{"createTime", 1}});
  EXPECT_EQ(d.summary()["blame"]["phase"], "scheduling");
  d.pod("alice/t1-0", {{"createTime", 1}, {"scheduleTime", 2}});
  EXPECT_EQ(d.summary()["blame"]["phase"], "accepting");
  EXPECT_EQ(d.summary()["blame"]["from"], at(2));
  d.pod("alice/t1-0", {{"createTime", 1}, {"startTime", 2}, {"containersStartTime", 3}});
  EXPECT_EQ(d.summary()["blame"]["phase"], "readiness");
}

// Where its party reserves through a TaskResource (Kuscia's gang reservation), a pod's scheduling
// is three phases: reserving until its party reserved, awaiting-parties until every party had,
// binding until it is scheduled. A zero-length phase stays.
TEST(TimelineSummary, AReservingPodSchedulesInThreePhases) {
  Doc d;
  d.pod("alice/t1-0", {{"createTime", 1}, {"reservingTime", 2}});
  EXPECT_EQ(d.summary()["blame"]["phase"], "reserving");
  EXPECT_EQ(d.summary()["blame"]["from"], at(1));
  d.pod("alice/t1-0", {{"createTime", 1}, {"reservingTime", 2}, {"reservedTime", 3}});
  EXPECT_EQ(d.summary()["blame"]["phase"], "awaiting-parties");
  EXPECT_EQ(d.summary()["blame"]["from"], at(3));
  d.pod("alice/t1-0",
        {{"createTime", 1}, {"reservingTime", 2}, {"reservedTime", 3}, {"schedulableTime", 7}});
  EXPECT_EQ(d.summary()["blame"]["phase"], "binding");
  d.pod("alice/t1-0", {{"createTime", 1},
                       {"reservingTime", 2},
                       {"reservedTime", 3},
                       {"schedulableTime", 7},
                       {"scheduleTime", 7},
                       {"startTime", 8},
                       {"readyTime", 9}});
  json s = d.summary();
  EXPECT_EQ(pathOf(s),
            (std::vector<std::string>{"alice/t1-0:creating", "alice/t1-0:reserving",
                                      "alice/t1-0:awaiting-parties", "alice/t1-0:binding",
                                      "alice/t1-0:accepting", "alice/t1-0:readiness"}));
  EXPECT_EQ(s["criticalPath"][3]["seconds"], 0); // bound as soon as it might be
  EXPECT_EQ(s["blame"]["phase"], "awaiting-parties");
  // Without a TaskResource nothing changes: scheduling.
  d.pod("alice/t1-0", {{"createTime", 1},
                       {"reservedTime", 3},
                       {"scheduleTime", 7},
                       {"startTime", 8},
                       {"readyTime", 9}});
  EXPECT_EQ(pathOf(d.summary())[1], "alice/t1-0:scheduling");
}

// The upstream complaint: alice's pods wait for bob's reservation. alice is ready last, but her
// awaiting-parties waited for bob, who reserved last: the path goes on through bob's pod and the
// blame is bob's reserving, not alice's scheduling.
TEST(TimelineSummary, AwaitingPartiesFollowsThePartyThatReservedLast) {
  Doc d;
  d.pod("alice/t1-0", {{"createTime", 1},
                       {"reservingTime", 2},
                       {"reservedTime", 3},
                       {"schedulableTime", 40},
                       {"scheduleTime", 40},
                       {"startTime", 41},
                       {"readyTime", 46}});
  d.pod("bob/t1-0", {{"createTime", 1},
                     {"reservingTime", 2},
                     {"reservedTime", 39},
                     {"schedulableTime", 40},
                     {"scheduleTime", 40},
                     {"startTime", 41},
                     {"readyTime", 44}});
  json s = d.summary();
  EXPECT_EQ(s["lastParty"], "alice");
  EXPECT_EQ(pathOf(s), (std::vector<std::string>{
                           "bob/t1-0:creating", "bob/t1-0:reserving", "alice/t1-0:awaiting-parties",
                           "alice/t1-0:binding", "alice/t1-0:accepting", "alice/t1-0:readiness"}));
  EXPECT_EQ(s["criticalPath"][2]["from"], at(39)); // the wait after bob reserved only
  EXPECT_EQ(s["blame"]["entry"], "bob/t1-0");
  EXPECT_EQ(s["blame"]["party"], "bob");
  EXPECT_EQ(s["blame"]["phase"], "reserving");
  EXPECT_EQ(s["blame"]["seconds"], 38);
  // The path's phases still add up to the startup, creation to the last ready.
  double sum = 0;
  for (const auto& p : s["criticalPath"])
    sum += p["seconds"].get<double>();
  EXPECT_EQ(sum, s["startupSeconds"].get<double>());
  // bob reserving in the same second as alice: nobody was waited for, the path stays alice's.
  d.pod("bob/t1-0", {{"createTime", 1},
                     {"reservingTime", 2},
                     {"reservedTime", 3},
                     {"schedulableTime", 40},
                     {"scheduleTime", 40},
                     {"startTime", 41},
                     {"readyTime", 44}});
  EXPECT_EQ(d.summary()["blame"]["entry"], "alice/t1-0");
  EXPECT_EQ(d.summary()["blame"]["phase"], "awaiting-parties");
  // While bob has not reserved: alice waits for the parties, bob reserves; bob's is the longest.
  Doc waiting;
  waiting.pod("alice/t1-0", {{"createTime", 1}, {"reservingTime", 2}, {"reservedTime", 3}});
  waiting.pod("bob/t1-0", {{"createTime", 1}, {"reservingTime", 2}});
  json w = waiting.summary(30);
  EXPECT_EQ(w["blame"]["entry"], "bob/t1-0");
  EXPECT_EQ(w["blame"]["phase"], "reserving");
  EXPECT_EQ(w["pending"][1]["phase"], "awaiting-parties");
}

// p2p, a host alone: alice's cluster holds only alice's pods, and the stub TaskResource it keeps
// of bob (partnerReservations). alice's awaiting-parties still waited for bob: the path goes on
// through bob's TaskResource and blames bob's reserving; bob is no party of the entries.
TEST(TimelineSummary, APartnerKnownByItsStubIsFollowedAndBlamed) {
  Doc d;
  d.pod("alice/t1-0", {{"createTime", 1},
                       {"reservingTime", 2},
                       {"reservedTime", 3},
                       {"schedulableTime", 40},
                       {"scheduleTime", 40},
                       {"startTime", 41},
                       {"readyTime", 46}});
  d.doc["partnerReservations"]["bob"] = {{"taskResource", "bob/t1-bob"},
                                         {"reservingTime", at(2)},
                                         {"reservedTime", at(39)},
                                         {"schedulableTime", at(40)}};
  json s = d.summary();
  EXPECT_TRUE(s["complete"]);
  EXPECT_FALSE(s["parties"].contains("bob")); // no entry of bob's here
  EXPECT_EQ(s["lastParty"], "alice");
  EXPECT_EQ(pathOf(s),
            (std::vector<std::string>{"bob/t1-bob:creating", "bob/t1-bob:reserving",
                                      "alice/t1-0:awaiting-parties", "alice/t1-0:binding",
                                      "alice/t1-0:accepting", "alice/t1-0:readiness"}));
  EXPECT_EQ(s["blame"]["party"], "bob");
  EXPECT_EQ(s["blame"]["phase"], "reserving");
  EXPECT_EQ(s["blame"]["seconds"], 37);
  double sum = 0;
  for (const auto& p : s["criticalPath"])
    sum += p["seconds"].get<double>();
  EXPECT_EQ(sum, s["startupSeconds"].get<double>());
  // While bob reserves: his reservation pends, and is the longest wait.
  Doc waiting;
  waiting.pod("alice/t1-0", {{"createTime", 1}, {"reservingTime", 2}, {"reservedTime", 3}});
  waiting.doc["partnerReservations"]["bob"] = {{"taskResource", "bob/t1-bob"},
                                               {"reservingTime", at(2)}};
  json w = waiting.summary(30);
  EXPECT_FALSE(w["complete"]);
  EXPECT_EQ(w["blame"]["entry"], "bob/t1-bob");
  EXPECT_EQ(w["blame"]["phase"], "reserving");
  EXPECT_EQ(w["pending"].size(), 2U);
  // Once bob reserved, nothing of his pends: alice waits for the group.
  waiting.doc["partnerReservations"]["bob"]["reservedTime"] = at(20);
  json after = waiting.summary(30);
  EXPECT_EQ(after["pending"].size(), 1U);
  EXPECT_EQ(after["blame"]["phase"], "awaiting-parties");
  // A merged document that holds bob's pods takes them, not his stub.
  d.pod("bob/t1-0", {{"createTime", 1},
                     {"reservingTime", 2},
                     {"reservedTime", 30},
                     {"schedulableTime", 40},
                     {"scheduleTime", 40},
                     {"startTime", 41},
                     {"readyTime", 44}});
  json merged = d.summary();
  EXPECT_EQ(merged["blame"]["entry"], "bob/t1-0");
  EXPECT_EQ(merged["criticalPath"][2]["from"], at(30));
}

// A pull that fails before any Pulling Event is seen: the pod waits in pulling, with the reason.
TEST(TimelineSummary, APullFailureWithoutEventsIsPulling) {
  Doc d;
  d.pod("alice/t1-0", {{"createTime", 1}, {"startTime", 2}},
        {{"pulling", {{"reason", "ErrImagePull"}, {"message", "not found"}}}});
  json s = d.summary(10);
  EXPECT_EQ(s["blame"]["phase"], "pulling");
  EXPECT_EQ(s["blame"]["reason"], "ErrImagePull");
  EXPECT_EQ(s["blame"]["seconds"], 8);
}

// The worked example of docs/design/critical-path.md, as written there.
TEST(TimelineSummary, TheWorkedExampleOfTheDocs) {
  Doc d;
  d.pod("alice/t1-0", {{"createTime", 1},
                       {"startTime", 2},
                       {"imagePullStartTime", 2},
                       {"imagePullEndTime", 4},
                       {"containersStartTime", 5},
                       {"readyTime", 7}});
  d.service("alice/t1-0-fed", 1, 8);
  d.pod("bob/t1-0", {{"createTime", 1},
                     {"startTime", 3},
                     {"imagePullStartTime", 3},
                     {"imagePullEndTime", 38},
                     {"containersStartTime", 39},
                     {"readyTime", 40}});
  d.service("bob/t1-0-fed", 1, 41);
  json s = d.summary();
  EXPECT_EQ(s["startupSeconds"], 41);
  EXPECT_EQ(s["parties"]["alice"]["startupSeconds"], 8);
  EXPECT_EQ(s["lastParty"], "bob");
  EXPECT_EQ(pathOf(s), (std::vector<std::string>{
                           "bob/t1-0:creating", "bob/t1-0:accepting", "bob/t1-0:pulling",
                           "bob/t1-0:starting", "bob/t1-0:readiness", "bob/t1-0-fed:programming"}));
  std::vector<double> seconds;
  for (const auto& p : s["criticalPath"])
    seconds.push_back(p["seconds"]);
  EXPECT_EQ(seconds, (std::vector<double>{1, 2, 35, 1, 1, 1}));
  EXPECT_EQ(s["blame"]["entry"], "bob/t1-0");
  EXPECT_EQ(s["blame"]["phase"], "pulling");
  EXPECT_EQ(s["blame"]["seconds"], 35);
}

// The summary of values (what task-timeline sums its counters from) answers as the document's,
// whatever order the entries come in.
TEST(TimelineSummary, ValuesInAnyOrderAnswerAsTheDocument) {
  Doc d;
  d.pod("alice/t1-0", {{"createTime", 1}, {"startTime", 2}, {"readyTime", 7}},
        {{"starting", {{"reason", "ContainerCreating"}, {"message", "m"}}}});
  d.service("alice/t1-0-fed", 1, 8);
  d.pod("bob/t1-0", {{"createTime", 1}, {"startTime", 3}, {"readyTime", 30}});
  d.service("bob/t1-0-fed", 1, 30);
  d.pod("bob/t1-1", {{"createTime", 2}, {"startTime", 4}});
  for (bool complete : {false, true}) {
    if (complete) d.pod("bob/t1-1", {{"createTime", 2}, {"startTime", 4}, {"readyTime", 30}});
    std::vector<tl::EntryTimes> entries;
    for (const auto& [key, entry] : d.doc["entries"].items())
      entries.insert(entries.begin(), tl::entryTimes(key, entry));
    auto values = tl::summarize(kuscia_host::sdk::parseTime(at(0)), entries, nanosAt(600));
    EXPECT_EQ(values.complete, complete);
    EXPECT_EQ(tl::toJson(values, nanosAt(600)), d.summary()) << complete;
    // Each party's startup as a value: alice ready at 8 s; bob only once t1-1 is ready too.
    EXPECT_EQ(values.startupSeconds(values.parties.at("alice")), 8);
    EXPECT_EQ(values.startupSeconds(values.parties.at("bob")),
              complete ? std::optional<double>(30) : std::nullopt);
    auto unknownCreation = values;
    unknownCreation.createTime.reset();
    EXPECT_FALSE(unknownCreation.startupSeconds(values.parties.at("alice")));
    // Ties at 30 s: the entry created first, a pod over a service, then the smaller key.
    if (complete) {
      EXPECT_EQ(values.criticalPath.back().entry, "bob/t1-0");
      EXPECT_EQ(values.startupSeconds(), 30);
    }
  }
}

// A pod's Events give the same facts in any order (a watch and a list order them differently):
// the first Pulling, the last Pulled, a failure kept over a later success.
TEST(PodFacts, TheSameInAnyOrder) {
  std::vector<std::tuple<std::string, std::string, int>> events = {
      {"Scheduled", "assigned", 1},
      {"Pulling", "Pulling image a", 2},
      {"Failed", "Failed to pull image a: timeout", 3},
      {"Pulling", "Pulling image a", 4},
      {"Pulled", "Successfully pulled image a", 6},
      {"Created", "Created", 6},
      {"Started", "Started", 6}};
  json first;
  std::sort(events.begin(), events.end());
  do {
    tl::PodFacts f;
    for (const auto& [reason, message, at] : events)
      f.addEvent(reason, message, nanosAt(at));
    json got = json::object();
    f.fill(got);
    if (first.is_null()) first = got;
    ASSERT_EQ(got, first);
  } while (std::next_permutation(events.begin(), events.end()));
  EXPECT_EQ(first["imagePullStartTime"], at(2));
  EXPECT_EQ(first["imagePullEndTime"], at(6));
  EXPECT_EQ(first["reasons"]["pulling"]["reason"], "Failed");
  EXPECT_EQ(first["reasons"]["starting"]["reason"], "Started");
  EXPECT_EQ(first["reasons"]["scheduling"]["reason"], "Scheduled");
}

// Containers' waiting reasons: each for its phase, kept from when first seen however often the
// pod is read again; a new reason replaces it; statuses of any shape are skipped.
TEST(PodFacts, ContainersWaitingKeepWhenFirstSeen) {
  tl::PodFacts f;
  json waiting = json::parse(R"([{"state": {"waiting": {"reason": "CrashLoopBackOff",
                                                        "message": "back-off 10s"}}},
                                 {"state": {"running": {}}}, "junk", {"state": 3}])");
  EXPECT_TRUE(f.addContainersWaiting(waiting, nanosAt(5)));
  waiting[0]["state"]["waiting"]["message"] = "back-off 20s";
  EXPECT_FALSE(f.addContainersWaiting(waiting, nanosAt(9)));
  ASSERT_EQ(f.reasons().count("starting"), 1u);
  EXPECT_EQ(f.reasons().at("starting").at, nanosAt(5));
  EXPECT_EQ(f.reasons().at("starting").message, "back-off 10s");
  waiting[0]["state"]["waiting"] = {{"reason", "ErrImagePull"}};
  EXPECT_TRUE(f.addContainersWaiting(waiting, nanosAt(12)));
  EXPECT_FALSE(f.addContainersWaiting(json::object(), nanosAt(13)));
}

// Times at the ends of what a document can hold (years 1678 and 2262): their differences do not
// fit in int64_t nanoseconds (a fuzzed OTLP document found the overflow). The phases' lengths
// are held at the ends instead of wrapping, so the long phase is still the one blamed.
TEST(TimelineSummary, TimesTooFarApartForNanosecondsAreHeldNotWrapped) {
  const std::string early = "1678-01-01T00:00:00Z", late = "2262-01-01T00:00:00Z";
  ASSERT_TRUE(kuscia_host::sdk::parseTime(early));
  ASSERT_TRUE(kuscia_host::sdk::parseTime(late));
  json doc = {
      {"createTime", early},
      {"entries",
       {{"alice/p1", tl::entry("alice/p1", {{"createTime", early}, {"readyTime", late}}, false)}}}};
  json s = tl::summarize(doc, *kuscia_host::sdk::parseTime(late));
  ASSERT_TRUE(s["complete"]) << s.dump();
  EXPECT_EQ(s["blame"]["phase"], "programming") << s.dump();
  EXPECT_GT(s["blame"]["seconds"].get<double>(), 9e9) << s.dump();

  EXPECT_EQ(kuscia_host::sdk::elapsed(INT64_MIN, INT64_MAX), INT64_MAX);
  EXPECT_EQ(kuscia_host::sdk::elapsed(INT64_MAX, INT64_MIN), INT64_MIN);
  EXPECT_EQ(kuscia_host::sdk::elapsed(5, 2), -3);

  // Still pending: the pending phase runs from 1678 to now (2262).
  json pending = {
      {"createTime", early},
      {"entries", {{"alice/p1", tl::entry("alice/p1", {{"createTime", early}}, false)}}}};
  json p = tl::summarize(pending, *kuscia_host::sdk::parseTime(late));
  EXPECT_FALSE(p["complete"]);
  EXPECT_EQ(p["blame"]["phase"], "programming") << p.dump();
}

TEST(TimelineSummary, EmptyDocumentIsIncomplete) {
  json s = tl::summarize(json::object(), 0);
  EXPECT_FALSE(s["complete"]);
  EXPECT_TRUE(s["pending"].empty());
  EXPECT_FALSE(s.contains("blame"));
}

} // namespace
