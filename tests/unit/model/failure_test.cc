// Why a task failed or is stuck (kuscia_model/failure.h): each reason of the vocabulary from the
// texts Kubernetes, Kuscia's agent, its scheduler and its task controller really write, and the
// precedence between them.
#include <kuscia_host/kube_text.hpp>
#include <kuscia_model/failure.h>
#include <kuscia_model/timeline.h>
#include <kuscia_model/timeline_summary.h>

#include <gtest/gtest.h>
#include <kuscia_model/route_outage.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kuscia_host::model::failure {
namespace {

using nlohmann::json;

Reason of(const std::string& reason, const std::string& message) {
  return reasonOf({"bob/t-0", reason, message, 0});
}

TEST(FailureTest, EachReasonFromTheTextsItsWritersUse) {
  // Kuscia's agent: the sync error's name and detail (agent/framework/pod.go).
  EXPECT_EQ(of("InvalidImageName", "Failed to apply default image tag \"sf:\": couldn't parse "
                                   "image reference \"sf:\": invalid reference format"),
            Reason::kMisconfigured);
  EXPECT_EQ(of("CreateContainerConfigError", "configmap \"task-config\" not found"),
            Reason::kMisconfigured);
  // Kuscia's task controller when the AppImage is missing (pending_handler.go:355).
  EXPECT_EQ(of("",
               "KusciaTask failed after 3x retry, last error: failed to get appImage "
               "\"secretflow-image\" from cache, appimage.kuscia.secretflow \"secretflow-image\" "
               "not found"),
            Reason::kMisconfigured);
  EXPECT_EQ(of("ErrImagePull", "failed to pull image \"secretflow/sf:1.11\", detail-> rpc error: "
                               "code = DeadlineExceeded desc = failed to pull and unpack image: "
                               "context deadline exceeded"),
            Reason::kImagePull);
  EXPECT_EQ(of("ImagePullBackOff", "Back-off pulling image \"secretflow/sf:1.11\""),
            Reason::kImagePull);
  // Kuscia's copy of a waiting container into podStatuses[].message (kt/handler/common.go).
  EXPECT_EQ(of("", "container[secretflow] waiting state reason: \"ImagePullBackOff\", message: "
                   "\"Back-off pulling image \\\"secretflow/sf:1.11\\\"\""),
            Reason::kImagePull);
  // containerd after a slow unpack: the retry cannot take the container's name.
  EXPECT_EQ(of("CreateContainerError", "failed to reserve container name \"secretflow_t-0\": "
                                       "name is reserved"),
            Reason::kImagePull);
  EXPECT_EQ(of("Unschedulable", "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 "
                                "nodes are available: 1 No preemption victims found"),
            Reason::kUnschedulable);
  EXPECT_EQ(of("", "task resource bob/t-0-1a2b last failed scheduling result: domain [bob] can "
                   "not reserve resources for pods"),
            Reason::kReservationFailed);
  // Kuscia's terminationLog of a terminated container.
  EXPECT_EQ(of("", "container[secretflow] terminated state reason \"OOMKilled\", message: \"\""),
            Reason::kOOMKilled);
  EXPECT_EQ(of("OOMKilled", "exit code 137"), Reason::kOOMKilled);
  EXPECT_EQ(of("", "container[secretflow] terminated state reason \"Error\", message: \"Traceback: "
                   "RuntimeError: HTTP 503 upstream connect error or disconnect/reset before "
                   "headers. reset reason: connection failure, transport failure reason: delayed "
                   "connect error: 111\""),
            Reason::kPeerNetwork);
  EXPECT_EQ(of("Error", "exit code 1: HTTP 504: stream_idle_timeout"), Reason::kPeerNetwork);
  EXPECT_EQ(of("",
               "container[secretflow] terminated state reason \"Error\", message: \"ValueError: "
               "bad input\""),
            Reason::kCrashed);
  EXPECT_EQ(of("CrashLoopBackOff", "back-off 40s restarting failed container=secretflow"),
            Reason::kCrashed);
  EXPECT_EQ(of("Unhealthy", "Readiness probe failed: Get \"http://10.0.0.5:8080/health\": dial "
                            "tcp 10.0.0.5:8080: connect: connection refused"),
            Reason::kNotReady);
  EXPECT_EQ(of("TaskResourceGroupPhaseFailed",
               "The task was not scheduled within 300 seconds of its entire lifecycle"),
            Reason::kExpired);
  EXPECT_EQ(of("", "The remaining no-failed party task counts 1 are less than the task success "
                   "threshold 2. failed party[alice bob]"),
            Reason::kPartnerFailed);
  EXPECT_EQ(of("", "a message nobody wrote"), Reason::kUnknown);
}

// The control plane's texts (kt/plugins, the TaskResourceGroup, kuscia-scheduler, the job), as
// the reference's p2p story has them, each with what it names beside its reason.
TEST(FailureTest, TheControlPlanesReasonsAndWhatTheyName) {
  auto classified = [](const std::string& reason, const std::string& message) {
    return classify({{"", reason, message, 0}});
  };
  // bob's pre-check (bob-cluster.kusciatask-precheck-failed.json): the pair in the message's
  // order, the route's Ready reason; no party, every party's pre-check reads the same routes.
  Classification route = classified("", "KusciaTask failed after 3x retry, last error: cdr-check "
                                        "alice to bob failed with HeartBeatTimeout");
  EXPECT_EQ(route.reason, Reason::kRouteNotReady);
  EXPECT_EQ(route.pair, "alice-bob");
  EXPECT_EQ(route.routeReason, "HeartBeatTimeout");
  EXPECT_EQ(route.party, "");
  json j = toJson(route);
  EXPECT_EQ(j["pair"], "alice-bob");
  EXPECT_EQ(j["routeReason"], "HeartBeatTimeout");
  // Two parties' pre-checks failing, joined with "; ": the first route is named.
  EXPECT_EQ(classified("", "cdr-check bob to alice failed with TokenNotGenerate; resource-check "
                           "no node status available for domain bob")
                .pair,
            "bob-alice");
  Classification shortage =
      classified("", "KusciaTask failed after 3x retry, last error: resource-check no node status "
                     "available for domain bob");
  EXPECT_EQ(shortage.reason, Reason::kResourceShortage);
  EXPECT_EQ(shortage.party, "bob");
  EXPECT_EQ(classified("", "resource-check no node cache to carol").party, "carol");
  Classification rejected = classified("", "Party: bob approval reject.");
  EXPECT_EQ(rejected.reason, Reason::kApprovalRejected);
  EXPECT_EQ(rejected.party, "bob");
  Classification reservation =
      classified("", "task resource bob/t-0-1a2b last failed scheduling result: domain [bob] can "
                     "not reserve resources for pods");
  EXPECT_EQ(reservation.reason, Reason::kReservationFailed);
  EXPECT_EQ(reservation.party, "bob");
  Classification partner =
      classified("", "The remaining no-failed party task counts 1 are less than the task success "
                     "threshold 2. failed party[bob]");
  EXPECT_EQ(partner.reason, Reason::kPartnerFailed);
  EXPECT_EQ(partner.party, "bob");
  // The TaskResourceGroup's own texts: expiry and the threshold.
  EXPECT_EQ(classified("TaskResourceGroupPhaseFailed",
                       "The task was not scheduled within 300 seconds of its entire lifecycle")
                .reason,
            Reason::kExpired);
  EXPECT_EQ(classified("", "TaskResourcesReserved failed: The remaining no-failed parties count "
                           "1 is less than the schedulable threshold 2,")
                .reason,
            Reason::kReservationFailed);
  // A party's own evidence says more than the partner's failure it caused.
  Classification own =
      classify({{"", "",
                 "The remaining no-failed party task counts 1 are less than the task success "
                 "threshold 2. failed party[bob]",
                 0},
                {"bob/t-0", "OOMKilled", "exit code 137", 0}});
  EXPECT_EQ(own.reason, Reason::kOOMKilled);
  EXPECT_FALSE(own.cause) << "the partners' failure is what bob's OOM shows as, not its cause";
}

TEST(FailureTest, TheMostActionableReasonWinsWithTheUnderlyingOneBeside) {
  // bob's image could not be pulled until the lifecycle ran out; Kuscia marks every party failed.
  std::vector<Evidence> e = {
      {"", "TaskResourceGroupPhaseFailed",
       "The task was not scheduled within 300 seconds of its entire lifecycle", 3000},
      {"alice/t-0", "", "", 0},
      {"bob/t-0", "ImagePullBackOff", "Back-off pulling image \"secretflow/sf:1.11\"", 2000},
      {"bob/t-0", "ErrImagePull", "failed to pull image \"secretflow/sf:1.11\"", 1000}};
  Classification c = classify(e);
  EXPECT_EQ(c.reason, Reason::kImagePull);
  ASSERT_TRUE(c.cause);
  EXPECT_EQ(*c.cause, Reason::kExpired);
  EXPECT_EQ(c.party, "bob"); // from the evidence, not from Kuscia's failed parties
  EXPECT_EQ(c.entry, "bob/t-0");
  EXPECT_EQ(c.since, 1000); // the earliest evidence of the reason
  EXPECT_EQ(c.excerpt, "ErrImagePull: failed to pull image \"secretflow/sf:1.11\"");
  json j = toJson(c);
  EXPECT_EQ(j["reason"], "ImagePull");
  EXPECT_EQ(j["cause"], "Expired");
  EXPECT_EQ(j["party"], "bob");
  // An OOM beats the crash it shows as; nothing at all is Unknown, never a guess.
  EXPECT_EQ(classify({{"alice/t-0", "Error", "exit code 1", 0},
                      {"alice/t-0", "OOMKilled", "exit code 137", 0}})
                .reason,
            Reason::kOOMKilled);
  Classification none = classify({});
  EXPECT_EQ(none.reason, Reason::kUnknown);
  EXPECT_EQ(toJson(none), (json{{"reason", "Unknown"}}));
  for (std::size_t i = 0; i < kReasonCount; ++i)
    EXPECT_EQ(reasonNamed(name(static_cast<Reason>(i))), static_cast<Reason>(i));
  EXPECT_FALSE(reasonNamed("Flaky"));
}

TEST(FailureTest, TheExcerptIsBoundedAndHoldsNoControlCharacters) {
  std::string log = "container[secretflow] terminated state reason \"Error\", message: \"" +
                    std::string(2000, 'x') + "\x1b[0m\"";
  Classification c = classify({{"bob/t-0", "", "line one\nline\ttwo\r\x07" + log, 0}});
  EXPECT_EQ(c.reason, Reason::kCrashed);
  EXPECT_LE(c.excerpt.size(), kExcerptBytes);
  EXPECT_EQ(c.excerpt.rfind("line one\nline\ttwo", 0), 0u);
  for (char ch : c.excerpt)
    EXPECT_TRUE(static_cast<unsigned char>(ch) >= 0x20 || ch == '\n' || ch == '\t');
}

// A log's end says why it ended: a long terminationLog keeps its first line and its last.
TEST(FailureTest, ALongLogKeepsItsBeginningAndItsEnd) {
  std::string log = "container[secretflow] terminated state reason \"Error\", message: \"" +
                    std::string(8000, 'x') +
                    "\nRuntimeError: HTTP 503: delayed connect error: 111\"";
  std::string cut = excerpt(log);
  EXPECT_LE(cut.size(), kExcerptBytes);
  EXPECT_EQ(cut.rfind("container[secretflow]", 0), 0u);
  EXPECT_NE(cut.find(" ... "), std::string::npos);
  EXPECT_TRUE(cut.ends_with("delayed connect error: 111\""));
  EXPECT_EQ(reasonOf({"alice/t-0", "", cut, 0}), Reason::kPeerNetwork);
  // Multi-byte sequences are never split.
  std::string wide;
  for (int i = 0; i < 400; ++i)
    wide += "é";
  std::string w = excerpt(wide, 100);
  EXPECT_LE(w.size(), 100u);
  EXPECT_EQ(nlohmann::json(w).dump().find("\\u"), std::string::npos);
  EXPECT_NO_THROW((void)nlohmann::json(w).dump());
}

namespace tl = kuscia_host::model::timeline;

// A timeline document as the sources build it: entries from status entries, the task's end.
struct Task {
  json doc = {{"task", "t"}, {"createTime", "2024-05-20T08:00:00Z"}, {"entries", json::object()}};
  Task& entry(const std::string& key, json status, bool pod = true) {
    doc["entries"][key] = tl::entry(key, status, pod);
    return *this;
  }
  Task& ended(const std::string& phase, const std::string& reason, const std::string& message,
              const json& allocatedPorts = nullptr) {
    doc["phase"] = phase;
    doc["completionTime"] = "2024-05-20T08:05:00Z";
    doc["evidence"] = tl::taskEvidence(reason, message, tl::localParty(&allocatedPorts));
    return *this;
  }
  json summary(const std::string& now, int64_t stuckAfterSeconds = 300) const {
    return tl::summarize(doc, *sdk::parseTime(now), stuckAfterSeconds * 1000000000);
  }
};

// The summary says why a Failed task failed, from what Kuscia's status keeps (after the pods are
// gone): the evidence's party, not Kuscia's failed parties; when it ended.
TEST(FailureSummaryTest, AFailedTaskSaysWhyFromTheStatusItKeeps) {
  Task t;
  t.entry("alice/t-0", {{"createTime", "2024-05-20T08:00:01Z"},
                        {"startTime", "2024-05-20T08:00:02Z"},
                        {"readyTime", "2024-05-20T08:00:04Z"},
                        {"podPhase", "Failed"}})
      .entry(
          "bob/t-0",
          {{"createTime", "2024-05-20T08:00:01Z"},
           {"startTime", "2024-05-20T08:00:02Z"},
           {"imagePullStartTime", "2024-05-20T08:00:02Z"},
           {"imagePullEndTime", "2024-05-20T08:00:09Z"},
           {"containersStartTime", "2024-05-20T08:00:10Z"},
           {"podPhase", "Failed"},
           {"reason", "OOMKilled"},
           {"terminationLog", "container[secretflow] terminated state reason "
                              "\"OOMKilled\", message: \"\""},
           {"reasons",
            {{"pulling", {{"reason", "BackOff"}, {"message", "Back-off pulling image \"sf\""}}}}}})
      .ended("Failed", "",
             "The remaining no-failed party task counts 0 are less than the task "
             "success threshold 2. failed party[alice bob]");
  json s = t.summary("2024-05-20T08:06:00Z");
  ASSERT_TRUE(s.contains("failure")) << s.dump();
  EXPECT_FALSE(s.contains("stuck"));
  EXPECT_EQ(s["failure"]["reason"], "OOMKilled");
  EXPECT_EQ(s["failure"]["party"], "bob");
  EXPECT_EQ(s["failure"]["entry"], "bob/t-0");
  EXPECT_EQ(s["failure"]["since"], "2024-05-20T08:05:00Z");
  EXPECT_EQ(
      s["failure"]["excerpt"],
      "OOMKilled: container[secretflow] terminated state reason \"OOMKilled\", message: \"\"");
  // bob's pull waited once and went on: its Events' reason is not why the task failed...
  EXPECT_FALSE(s["failure"].contains("cause"));
  // ...while a pod that never got past its pull is.
  t.entry("carol/t-0", {{"createTime", "2024-05-20T08:00:01Z"},
                        {"startTime", "2024-05-20T08:00:02Z"},
                        {"reasons",
                         {{"pulling",
                           {{"reason", "Failed"},
                            {"message", "Failed to pull image \"sf\": "
                                        "not found"}}}}}});
  s = t.summary("2024-05-20T08:06:00Z");
  EXPECT_EQ(s["failure"]["reason"], "ImagePull");
  EXPECT_EQ(s["failure"]["party"], "carol");
  EXPECT_EQ(s["failure"]["cause"], "OOMKilled");
  // A pre-check failure: no entry at all, the task's message is the evidence.
  Task precheck;
  precheck.ended("Failed", "",
                 "KusciaTask failed after 3x retry, last error: failed to get appImage "
                 "\"secretflow-image\" from cache, appimage \"secretflow-image\" not found");
  s = precheck.summary("2024-05-20T08:06:00Z");
  EXPECT_EQ(s["failure"]["reason"], "Misconfigured");
  EXPECT_FALSE(s["failure"].contains("party"));
  EXPECT_EQ(s["failure"]["since"], "2024-05-20T08:05:00Z");
  // A route's pre-check: the message names the pair, not who checked it. bob's cluster's status
  // (p2p) allocated bob's ports alone: bob's pre-check failed. A centralized status allocated
  // every party's: none is named.
  const std::string route = "KusciaTask failed after 3x retry, last error: cdr-check alice to bob "
                            "failed with HeartBeatTimeout";
  auto portsOf = [](std::initializer_list<const char*> parties) {
    json ports = json::array();
    for (const char* p : parties)
      ports.push_back({{"domainID", p}, {"namedPort", {{"t-0/spu", 24381}}}});
    return ports;
  };
  Task p2p;
  p2p.ended("Failed", "", route, portsOf({"bob"}));
  s = p2p.summary("2024-05-20T08:06:00Z");
  EXPECT_EQ(s["failure"]["reason"], "RouteNotReady");
  EXPECT_EQ(s["failure"]["pair"], "alice-bob");
  EXPECT_EQ(s["failure"]["party"], "bob");
  Task centralized;
  centralized.ended("Failed", "", route, portsOf({"alice", "bob"}));
  EXPECT_FALSE(centralized.summary("2024-05-20T08:06:00Z")["failure"].contains("party"));
  // The scheduler's word beside Kuscia's lifecycle: the actionable one first.
  Task late;
  late.entry("bob/t-0", {{"createTime", "2024-05-20T08:00:01Z"},
                         {"podPhase", "Failed"},
                         {"reason", "Unschedulable"},
                         {"message", "0/1 nodes are available: 1 Insufficient cpu."}})
      .ended("Failed", "TaskResourceGroupPhaseFailed",
             "The task was not scheduled within 300 seconds of its entire lifecycle");
  s = late.summary("2024-05-20T08:06:00Z");
  EXPECT_EQ(s["failure"]["reason"], "Unschedulable");
  EXPECT_EQ(s["failure"]["cause"], "Expired");
  EXPECT_EQ(s["failure"]["party"], "bob");
}

namespace route = kuscia_host::model::route;

// A route's outage, observed: Kuscia re-stamps its Ready at every sync of the outage, so the host
// dates the change it watched (to the second), keeps the latest outages on the route, and a task
// that failed on the route says when it went down; a route found down at the host's start has an
// outage with no start, never a guessed one.
TEST(RouteOutageTest, AnOutageWatchedIsDatedKeptAndNamedByTheTaskThatFailedOnIt) {
  const int64_t s = 1000000000;
  const int64_t t0 = *sdk::parseTime("2024-05-20T08:59:00Z");
  auto routeAt = [](bool ready, const char* reason = "") {
    route::Route r;
    r.name = "alice-bob";
    r.hasReady = true;
    r.ready = ready;
    r.reason = reason;
    r.lastHeartbeat = sdk::parseTime("2024-05-20T08:58:45Z");
    return r;
  };
  std::vector<route::Outage> o;
  EXPECT_FALSE(route::observe(o, routeAt(true), t0, false));
  EXPECT_TRUE(route::observe(o, routeAt(false, "HeartBeatTimeout"), t0 + 40 * s + s / 2, true));
  EXPECT_FALSE(route::observe(o, routeAt(false, "HeartBeatTimeout"), t0 + 55 * s, true))
      << "a sync that re-stamps the outage is no new outage";
  ASSERT_EQ(o.size(), 1U);
  EXPECT_EQ(o[0].since, t0 + 40 * s); // whole seconds
  EXPECT_EQ(o[0].reason, "HeartBeatTimeout");
  // Kept on the route and read back alike; a task that failed at 09:00:08 on it names it.
  const std::string kept = route::outagesText(o);
  EXPECT_EQ(route::outagesOf(kept), o);
  route::Route down = routeAt(false, "HeartBeatTimeout");
  down.observed = kept;
  const std::string message =
      "KusciaTask failed after 3x retry, last error: cdr-check alice to bob failed with "
      "HeartBeatTimeout";
  EXPECT_EQ(route::routeNamed(message), "alice-bob");
  EXPECT_EQ(route::routeNamed("cdr-check nothing"), "");
  json outage =
      route::outageAt(down, route::outagesOf(kept), sdk::parseTime("2024-05-20T09:00:08Z"));
  EXPECT_EQ(outage["route"], "alice-bob");
  EXPECT_EQ(outage["since"], "2024-05-20T08:59:40Z");
  EXPECT_TRUE(outage["observed"].get<bool>());
  EXPECT_EQ(outage["lastHeartbeatTime"], "2024-05-20T08:58:45Z");
  EXPECT_FALSE(outage.contains("until"));
  // The summary of the task's document says it beside the failure.
  Task failed;
  failed.doc["routeOutage"] = outage;
  failed.ended("Failed", "", message, json::array({json{{"domainID", "bob"}}}));
  json f = failed.summary("2024-05-20T09:06:00Z")["failure"];
  EXPECT_EQ(f["reason"], "RouteNotReady");
  EXPECT_EQ(f["routeDown"]["since"], "2024-05-20T08:59:40Z");
  EXPECT_TRUE(f["routeDown"]["observed"].get<bool>());
  EXPECT_EQ(f["lastHeartbeatTime"], "2024-05-20T08:58:45Z");
  // Another route's outage is not this failure's.
  failed.doc["routeOutage"]["route"] = "bob-alice";
  EXPECT_FALSE(failed.summary("2024-05-20T09:06:00Z")["failure"].contains("routeDown"));
  // Up again: the outage ends; a task that failed long after it does not name it.
  EXPECT_TRUE(route::observe(o, routeAt(true), t0 + 300 * s, true));
  EXPECT_EQ(o.back().until, t0 + 300 * s);
  EXPECT_TRUE(route::outageAt(down, o, t0 + 900 * s).is_null());
  EXPECT_EQ(route::outageAt(down, o, t0 + 100 * s)["until"], "2024-05-20T09:04:00Z");
  // A host that starts during an outage it did not see begin: an outage with no start.
  std::vector<route::Outage> unseen;
  EXPECT_TRUE(route::observe(unseen, routeAt(false, "DestinationUnreachable"), t0, false));
  json undated = route::outageAt(down, unseen, t0 + s);
  EXPECT_FALSE(undated.contains("since"));
  EXPECT_FALSE(undated.contains("observed"));
  EXPECT_EQ(undated["reason"], "DestinationUnreachable");
  // The latest outages only.
  for (int i = 0; i < 20; ++i) {
    route::observe(o, routeAt(false, "HeartBeatTimeout"), t0 + (400 + 2 * i) * s, true);
    route::observe(o, routeAt(true), t0 + (401 + 2 * i) * s, true);
  }
  EXPECT_EQ(o.size(), route::kKeptOutages);
  EXPECT_EQ(route::outagesOf(route::outagesText(o)), o);
}

// A task waiting past stuckAfter says why it waits; before, it does not; a finished one never.
TEST(FailureSummaryTest, AWaitingTaskIsStuckPastTheThresholdWithItsReason) {
  Task t;
  t.entry("alice/t-0", {{"createTime", "2024-05-20T08:00:01Z"},
                        {"startTime", "2024-05-20T08:00:02Z"},
                        {"readyTime", "2024-05-20T08:00:04Z"}})
      .entry(
          "bob/t-0",
          {{"createTime", "2024-05-20T08:00:01Z"},
           {"startTime", "2024-05-20T08:00:03Z"},
           {"imagePullStartTime", "2024-05-20T08:00:03Z"},
           {"podPhase", "Pending"},
           {"message", "container[secretflow] waiting state reason: \"ImagePullBackOff\", "
                       "message: \"Back-off pulling image \\\"sf\\\"\""},
           {"reasons",
            {{"pulling", {{"reason", "BackOff"}, {"message", "Back-off pulling image \"sf\""}}}}}});
  t.doc["phase"] = "Running";
  EXPECT_FALSE(t.summary("2024-05-20T08:05:02Z").contains("stuck")); // 299 s
  json s = t.summary("2024-05-20T08:05:03Z");
  ASSERT_TRUE(s.contains("stuck")) << s.dump();
  EXPECT_FALSE(s.contains("failure"));
  EXPECT_EQ(s["stuck"]["reason"], "ImagePull");
  EXPECT_EQ(s["stuck"]["party"], "bob");
  EXPECT_EQ(s["stuck"]["since"], "2024-05-20T08:00:03Z"); // its pull began
  EXPECT_EQ(s["stuck"]["seconds"], 300);
  EXPECT_EQ(t.summary("2024-05-20T08:00:40Z", 30)["stuck"]["reason"], "ImagePull");
  // Nothing says why: Unknown, where it waits longest.
  Task quiet;
  quiet.entry("bob/t-0", {{"createTime", "2024-05-20T08:00:01Z"}});
  s = quiet.summary("2024-05-20T09:00:00Z");
  EXPECT_EQ(s["stuck"]["reason"], "Unknown");
  EXPECT_EQ(s["stuck"]["entry"], "bob/t-0");
  EXPECT_EQ(s["stuck"]["since"], "2024-05-20T08:00:01Z");
  EXPECT_FALSE(s["stuck"].contains("excerpt"));
  // A task with no entry yet waits since its creation.
  EXPECT_EQ(Task().summary("2024-05-20T09:00:00Z")["stuck"]["since"], "2024-05-20T08:00:00Z");
  // Finished: no stuck.
  quiet.doc["phase"] = "Succeeded";
  EXPECT_FALSE(quiet.summary("2024-05-20T09:00:00Z").contains("stuck"));
  // A complete task is not stuck however old.
  Task done;
  done.entry("alice/t-0", {{"createTime", "2024-05-20T08:00:01Z"},
                           {"startTime", "2024-05-20T08:00:02Z"},
                           {"readyTime", "2024-05-20T08:00:04Z"}});
  EXPECT_FALSE(done.summary("2024-05-21T08:00:00Z").contains("stuck"));
}

// The values' summary (what task-history and task-timeline's metrics use) says what the
// document's does.
TEST(FailureSummaryTest, TheValuesSayWhatTheDocumentSays) {
  Task t;
  t.entry("bob/t-0", {{"createTime", "2024-05-20T08:00:01Z"},
                      {"startTime", "2024-05-20T08:00:02Z"},
                      {"reason", "Error"},
                      {"terminationLog", "container[c] terminated state reason \"Error\", "
                                         "message: \"upstream connect error\""}})
      .ended("Failed", "", "");
  const int64_t now = *sdk::parseTime("2024-05-20T08:06:00Z");
  std::vector<tl::EntryTimes> entries;
  for (const auto& [key, e] : t.doc["entries"].items())
    entries.push_back(tl::entryTimes(key, e));
  tl::Summary s =
      tl::summarize(sdk::parseTime("2024-05-20T08:00:00Z"), entries, now, tl::TaskEnd::of(t.doc));
  ASSERT_TRUE(s.failure);
  EXPECT_EQ(s.failure->reason, Reason::kPeerNetwork);
  EXPECT_EQ(tl::toJson(s, now), tl::summarize(t.doc, now));
}

} // namespace
} // namespace kuscia_host::model::failure
