// Why a task failed or is stuck (kuscia_model/failure.h): each reason of the vocabulary from the
// texts Kubernetes, Kuscia's agent, its scheduler and its task controller really write, and the
// precedence between them.
#include <kuscia_model/failure.h>

#include <gtest/gtest.h>

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
            Reason::kUnschedulable);
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
            Reason::kTimeout);
  EXPECT_EQ(of("", "The remaining no-failed party task counts 1 are less than the task success "
                   "threshold 2. failed party[alice bob]"),
            Reason::kUnknown);
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
  EXPECT_EQ(*c.cause, Reason::kTimeout);
  EXPECT_EQ(c.party, "bob"); // from the evidence, not from Kuscia's failed parties
  EXPECT_EQ(c.entry, "bob/t-0");
  EXPECT_EQ(c.since, 1000); // the earliest evidence of the reason
  EXPECT_EQ(c.excerpt, "ErrImagePull: failed to pull image \"secretflow/sf:1.11\"");
  json j = toJson(c);
  EXPECT_EQ(j["reason"], "ImagePull");
  EXPECT_EQ(j["cause"], "Timeout");
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

TEST(FailureTest, EvidenceFromATaskAndFromAPodAsTheirWritersLeaveThem) {
  json task = {
      {"status",
       {{"phase", "Failed"},
        {"message", "The task was not scheduled within 300 seconds of its entire lifecycle"},
        {"completionTime", "2024-05-20T08:05:00Z"},
        {"podStatuses",
         {{"bob/t-0",
           {{"podPhase", "Failed"},
            {"reason", "OOMKilled"},
            {"terminationLog",
             "container[secretflow] terminated state reason \"OOMKilled\", message: \"\""}}},
          {"alice/t-0", {{"podPhase", "Failed"}}}}}}}};
  Classification fromTask = classify(evidenceOfTask(task));
  EXPECT_EQ(fromTask.reason, Reason::kOOMKilled);
  EXPECT_EQ(fromTask.party, "bob");
  EXPECT_EQ(*fromTask.cause, Reason::kTimeout);
  json pod = {{"metadata", {{"namespace", "alice"}, {"name", "t-0"}}},
              {"status",
               {{"conditions",
                 {{{"type", "PodScheduled"},
                   {"status", "False"},
                   {"reason", "Unschedulable"},
                   {"message", "0/1 nodes are available: 1 Insufficient memory."},
                   {"lastTransitionTime", "2024-05-20T08:00:01Z"}}}},
                {"containerStatuses",
                 {{{"name", "secretflow"},
                   {"state", {{"waiting", {{"reason", "CrashLoopBackOff"}}}}},
                   {"lastState",
                    {{"terminated",
                      {{"reason", "Error"},
                       {"exitCode", 2},
                       {"finishedAt", "2024-05-20T08:00:09Z"}}}}}}}}}}};
  std::vector<Evidence> e = evidenceOfPod(pod);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].entry, "alice/t-0");
  EXPECT_EQ(e[2].message, "exit code 2");
  Classification fromPod = classify(e);
  EXPECT_EQ(fromPod.reason, Reason::kUnschedulable);
  EXPECT_EQ(*fromPod.cause, Reason::kCrashed);
  EXPECT_EQ(toJson(fromPod)["since"], "2024-05-20T08:00:01Z");
}

} // namespace
} // namespace kuscia_host::model::failure
