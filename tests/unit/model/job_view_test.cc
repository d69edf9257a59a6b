// The job view (kuscia_model/job_view.h): the approval the host observes, each task's wait in the
// job's queue (after approval, a dependency, maxParallelism), its startup beside its running time,
// and the job's startup overhead; from the reference's p2p story (tests/fixtures/control-plane)
// and from jobs the story does not show.
#include <kuscia_host/kube_text.hpp>
#include <kuscia_model/job_view.h>

#include <gtest/gtest.h>

#include "kuscia_fixtures.h"

namespace kuscia_host::model::job {
namespace {

using control::Job;
using control::jobOf;
using nlohmann::json;

int64_t at(const char* time) {
  return *sdk::parseTime(time);
}

// A task's timeline document as task-timeline serves it: created, all ready, completed.
json taskDoc(const char* created, const char* ready, const char* completed,
             const char* phase = "Succeeded") {
  json doc = {
      {"createTime", created}, {"phase", phase}, {"summary", {{"complete", ready != nullptr}}}};
  if (ready != nullptr) {
    doc["summary"]["allReadyTime"] = ready;
    doc["summary"]["startupSeconds"] = static_cast<double>(at(ready) - at(created)) / 1e9;
    doc["summary"]["blame"] = {{"entry", "bob/t-0"}, {"phase", "reserving"}};
  }
  if (completed != nullptr) doc["completionTime"] = completed;
  return doc;
}

TEST(JobViewTest, TheApprovalIsObservedAndBlamesThePartnerThatAcceptedLast) {
  const json awaiting =
      test::fixture("control-plane/alice-cluster.kusciajob-awaiting-approval.json");
  const json running = test::fixture("control-plane/alice-cluster.kusciajob-running.json");
  Observations o;
  // First seen awaiting (the host may have started late: the acceptances then are not dated).
  EXPECT_TRUE(observe(o, jobOf(awaiting), at("2024-05-20T09:00:02Z"), false));
  EXPECT_EQ(o.awaiting, at("2024-05-20T09:00:02Z"));
  EXPECT_FALSE(o.approved);
  // Seen leaving it while watching: bob's acceptance came with it.
  EXPECT_TRUE(observe(o, jobOf(running), at("2024-05-20T09:00:04.5Z"), true));
  EXPECT_EQ(o.approved, at("2024-05-20T09:00:04Z")) << "to the second, as Kuscia's times";
  EXPECT_EQ(o.accepted.at("bob"), at("2024-05-20T09:00:04Z"));
  EXPECT_EQ(o.accepted.count("alice"), 0u) << "the initiator accepts its own job";
  EXPECT_FALSE(observe(o, jobOf(running), at("2024-05-20T09:00:09Z"), true)) << "once";
  // Kept on the job: a restarted host reads the same observations.
  EXPECT_EQ(observationsOf(observationsText(o)), o);
  EXPECT_EQ(json::parse(observationsPatch(o))["metadata"]["annotations"][kObservedAnnotation],
            observationsText(o));

  std::map<std::string, json> tasks = {
      {"job-psi-1-task-0",
       taskDoc("2024-05-20T09:00:05Z", "2024-05-20T09:00:12Z", "2024-05-20T09:00:20Z")}};
  Job done = jobOf(running);
  done.phase = "Succeeded";
  done.completion = at("2024-05-20T09:00:21Z");
  const json doc = jobDocument(done, o, tasks, at("2024-05-20T09:01:00Z"));
  const json& approval = doc["approval"];
  EXPECT_EQ(approval["phase"], "approval");
  EXPECT_EQ(approval["from"], "2024-05-20T09:00:00Z");
  EXPECT_EQ(approval["seconds"], 4.0);
  EXPECT_EQ(approval["party"], "bob");
  EXPECT_EQ(approval["observed"], true);
  EXPECT_EQ(doc["approvalSeconds"], 4.0);
  EXPECT_EQ(approval["precisionSeconds"], 1.0);
  const json& task = doc["tasks"][0];
  EXPECT_EQ(task["queued"]["from"], "2024-05-20T09:00:04Z");
  EXPECT_EQ(task["queued"]["to"], "2024-05-20T09:00:05Z");
  EXPECT_EQ(task["queued"]["after"], "approval");
  EXPECT_EQ(task["startupSeconds"], 7.0);
  EXPECT_EQ(task["overheadSeconds"], 8.0) << "queued and startup";
  EXPECT_EQ(task["runningSeconds"], 8.0);
  EXPECT_EQ(task["blame"]["phase"], "reserving");
  // 21 s of job, 8 of them running.
  EXPECT_EQ(doc["startupOverheadSeconds"], 13.0);
  const std::string text = renderJob(doc);
  EXPECT_NE(text.find("approval 4.0s, bob accepted last (observed)"), std::string::npos) << text;
  EXPECT_NE(text.find("job-psi-1-task-0"), std::string::npos) << text;
  EXPECT_NE(text.find("ready; blame bob/t-0 reserving"), std::string::npos) << text;
}

TEST(JobViewTest, AnApprovalTheHostDidNotWatchIsNotDated) {
  const json running = test::fixture("control-plane/alice-cluster.kusciajob-running.json");
  Observations o;
  EXPECT_FALSE(observe(o, jobOf(running), at("2024-05-20T09:00:07Z"), false));
  const json doc = jobDocument(jobOf(running), o, {}, at("2024-05-20T09:00:07Z"));
  EXPECT_FALSE(doc["approval"].contains("seconds"));
  EXPECT_FALSE(doc["approval"].contains("observed"));
  EXPECT_FALSE(doc["tasks"][0]["queued"].contains("from")) << "never guessed";
  EXPECT_NE(renderJob(doc).find("(not observed)"), std::string::npos);
}

TEST(JobViewTest, ApprovalOngoingAndRejected) {
  json awaiting = test::fixture("control-plane/alice-cluster.kusciajob-awaiting-approval.json");
  Job job = jobOf(awaiting);
  json doc = jobDocument(job, {}, {}, at("2024-05-20T09:00:03Z"));
  EXPECT_EQ(doc["approval"]["ongoing"], true);
  EXPECT_EQ(doc["approval"]["party"], "bob");
  EXPECT_EQ(doc["approval"]["seconds"], 3.0);
  job.phase = "ApprovalReject";
  job.approvals["bob"] = "JobRejected";
  job.completion = at("2024-05-20T09:00:05Z");
  doc = jobDocument(job, {}, {}, at("2024-05-20T09:00:09Z"));
  EXPECT_EQ(doc["approval"]["seconds"], 5.0);
  EXPECT_EQ(doc["failure"], json({{"reason", "ApprovalRejected"}, {"party", "bob"}}));
  EXPECT_EQ(doc["tasks"][0]["phase"], "NotCreated");
}

// Three tasks: train after psi; stats without dependencies, but maxParallelism 1 holds it until
// psi finished. No approval (a centralized job): the queue starts with the job.
TEST(JobViewTest, EachTaskQueuesAfterItsDependencyOrTheJobsParallelism) {
  json object = {
      {"metadata",
       {{"name", "j"},
        {"namespace", "cross-domain"},
        {"creationTimestamp", "2024-05-20T10:00:00Z"}}},
      {"spec",
       {{"initiator", "alice"},
        {"maxParallelism", 1},
        {"tasks",
         {{{"alias", "train"},
           {"taskID", "j-train"},
           {"dependencies", {"psi"}},
           {"parties", {{{"domainID", "alice"}}}}},
          {{"alias", "psi"}, {"taskID", "j-psi"}, {"parties", {{{"domainID", "alice"}}}}},
          {{"alias", "stats"}, {"taskID", "j-stats"}, {"parties", {{{"domainID", "alice"}}}}}}}}},
      {"status", {{"phase", "Running"}, {"approveStatus", {{"alice", "JobAccepted"}}}}}};
  const Job job = jobOf(object);
  std::vector<std::string> order;
  for (const auto* t : dependencyOrder(job))
    order.push_back(t->alias);
  EXPECT_EQ(order, (std::vector<std::string>{"psi", "train", "stats"}));
  std::map<std::string, json> tasks = {
      {"j-psi", taskDoc("2024-05-20T10:00:01Z", "2024-05-20T10:00:05Z", "2024-05-20T10:00:10Z")},
      {"j-train", taskDoc("2024-05-20T10:00:11Z", "2024-05-20T10:00:14Z", nullptr, "Running")},
      {"j-stats", taskDoc("2024-05-20T10:00:12Z", nullptr, nullptr, "Pending")}};
  const json doc = jobDocument(job, {}, tasks, at("2024-05-20T10:00:16Z"));
  EXPECT_FALSE(doc.contains("approval")) << "the job did not await approval";
  const json& psi = doc["tasks"][0];
  EXPECT_EQ(psi["queued"]["from"], "2024-05-20T10:00:00Z");
  EXPECT_EQ(psi["queued"]["seconds"], 1.0);
  EXPECT_FALSE(psi["queued"].contains("reason"));
  const json& train = doc["tasks"][1];
  EXPECT_EQ(train["queued"]["after"], "psi");
  EXPECT_EQ(train["queued"]["reason"], "dependencies");
  EXPECT_EQ(train["queued"]["seconds"], 1.0);
  EXPECT_EQ(train["runningSeconds"], 2.0) << "running until now";
  const json& stats = doc["tasks"][2];
  EXPECT_EQ(stats["queued"]["reason"], "maxParallelism");
  EXPECT_EQ(stats["queued"]["seconds"], 12.0);
  EXPECT_FALSE(stats.contains("startupSeconds"));
  // 16 s of job: psi ran 5..10, train 14..16.
  EXPECT_EQ(doc["startupOverheadSeconds"], 9.0);
}

} // namespace
} // namespace kuscia_host::model::job
