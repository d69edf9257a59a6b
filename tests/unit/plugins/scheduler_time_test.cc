// scheduler-time through the fake host: scheduleTime from PodScheduled=True, the same write
// discipline as task-timeline, and nothing when a pod is not scheduled.
#include "scheduler_time.h"

#include <gtest/gtest.h>

#include "kuscia_fixtures.h"

namespace kuscia_host::plugins::scheduler {
namespace {

using nlohmann::json;
using test::deliver;
using test::fixture;

const kh_plugin_v1_t* descriptor() {
  return sdk::pluginDescriptor<SchedulerTime>("scheduler-time");
}
const char* kPodKey = "alice/secretflow-task-psi-0";

TEST(SchedulerConfigTest, DefaultsAndRejections) {
  auto c = parseSchedulerConfig("{}");
  EXPECT_EQ(c.taskNamespace, "cross-domain");
  EXPECT_EQ(c.coalesceMillis, 150);
  testing::FakeHost host;
  EXPECT_FALSE(host.create(descriptor(), R"({"coalesce": 1})"));
  EXPECT_NE(host.error().find("unknown config key 'coalesce'"), std::string::npos);
  auto bad = testing::FakeHost::validateConfig(descriptor(), R"({"coalesceMillis": -5})");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->first, "coalesceMillis");
}

TEST(SchedulerTimeTest, FillsScheduleTimeOnlyOnceThePodIsScheduled) {
  testing::FakeHost host("alice");
  ASSERT_TRUE(host.create(descriptor(), R"({"coalesceMillis": 0})")) << host.error();
  ASSERT_TRUE(host.start());
  json task = fixture("kusciatask.json");
  task["status"]["podStatuses"].erase("bob/secretflow-task-psi-0");
  task["status"]["podStatuses"][kPodKey].erase("scheduleTime");
  json pod = fixture("pod.json");
  json pending = pod;
  pending["status"] = {{"phase", "Pending"}};
  deliver(host, "kusciatasks", KH_EVENT_ADDED, task);
  deliver(host, "pods", KH_EVENT_ADDED, pending);
  EXPECT_TRUE(host.requests().empty()); // not scheduled: nothing to write
  deliver(host, "pods", KH_EVENT_MODIFIED, pod);
  ASSERT_EQ(host.requests().size(), 1u);
  EXPECT_EQ(json::parse(host.requests()[0].body),
            json::parse(R"({"status":{"podStatuses":{"alice/secretflow-task-psi-0":
                            {"scheduleTime":"2024-05-20T08:00:01Z"}}}})"));
  task.merge_patch(json::parse(host.requests()[0].body));
  task["metadata"]["resourceVersion"] = "48214"; // the write's
  host.complete(host.requests()[0].id, 200, task.dump());
  deliver(host, "pods", KH_EVENT_MODIFIED, pod);
  deliver(host, "kusciatasks", KH_EVENT_MODIFIED, task);
  EXPECT_EQ(host.requests().size(), 1u); // already there
}

TEST(SchedulerTimeTest, EnabledLaterItFillsPodsAlreadyRunningAndCreatesMissingEntries) {
  testing::FakeHost host("alice");
  ASSERT_TRUE(host.create(descriptor(), "{}")) << host.error();
  ASSERT_TRUE(host.start());
  json task = fixture("kusciatask.json");
  task["status"].erase("podStatuses");
  deliver(host, "pods", KH_EVENT_ADDED, fixture("pod.json"));
  deliver(host, "kusciatasks", KH_EVENT_ADDED, task);
  host.advanceMillis(149);
  EXPECT_TRUE(host.requests().empty()); // the default coalescing window, 150 ms
  host.advanceMillis(1);
  ASSERT_EQ(host.requests().size(), 1u);
  EXPECT_EQ(json::parse(host.requests()[0].body)["status"]["podStatuses"][kPodKey],
            json::parse(R"({"namespace":"alice","podName":"secretflow-task-psi-0",
                            "podPhase":"Running","scheduleTime":"2024-05-20T08:00:01Z"})"));
}

TEST(SchedulerTimeTest, HoldsOnlyTheTasksOfItsPods) {
  testing::FakeHost host("alice");
  ASSERT_TRUE(host.create(descriptor(), R"({"coalesceMillis": 0})")) << host.error();
  ASSERT_TRUE(host.start());
  auto* plugin = sdk::pluginObject<SchedulerTime>(host.instance());
  test::synced(host);
  for (int i = 0; i < 20; ++i) {
    json t = fixture("kusciatask.json");
    t["metadata"]["name"] = "done-" + std::to_string(i);
    t["status"]["phase"] = "Succeeded";
    deliver(host, "kusciatasks", KH_EVENT_ADDED, t);
  }
  EXPECT_EQ(plugin->heldTasks(), 0u);
  // Finished, nothing of them held: the host may forget them (ABI 1.3).
  EXPECT_EQ(host.releases().size(), 20u);
  json task = fixture("kusciatask.json");
  task["status"]["podStatuses"][kPodKey].erase("scheduleTime");
  deliver(host, "kusciatasks", KH_EVENT_ADDED, task);
  json pod = fixture("pod.json");
  deliver(host, "pods", KH_EVENT_ADDED, pod); // the task comes from the host's cache
  EXPECT_EQ(plugin->heldTasks(), 1u);
  ASSERT_EQ(host.requests().size(), 1u);
  deliver(host, "pods", KH_EVENT_DELETED, pod);
  EXPECT_EQ(plugin->heldTasks(), 0u);
  EXPECT_EQ(host.releases().size(), 20u) << "a running task is not released";
}

TEST(SchedulerTimeTest, YieldsScheduleTimeToAWriterThatKeepsReplacingIt) {
  testing::FakeHost host("alice");
  ASSERT_TRUE(host.create(descriptor(), R"({"coalesceMillis": 0, "yieldAfterOverwrites": 3})"))
      << host.error();
  ASSERT_TRUE(host.start());
  json task = fixture("kusciatask.json");
  task["status"]["podStatuses"][kPodKey].erase("scheduleTime");
  deliver(host, "kusciatasks", KH_EVENT_ADDED, task);
  deliver(host, "pods", KH_EVENT_ADDED, fixture("pod.json"));
  int rv = 100;
  auto answer = [&] {
    while (!host.pendingRequests().empty()) {
      auto* r = host.pendingRequests().front();
      task.merge_patch(json::parse(r->body));
      task["metadata"]["resourceVersion"] = std::to_string(++rv);
      host.complete(r->id, 200, task.dump());
    }
  };
  answer();
  ASSERT_EQ(host.requests().size(), 1u);
  for (int i = 0; i < 6; ++i) { // replaced after every write
    task["status"]["podStatuses"][kPodKey]["scheduleTime"] = "2024-05-20T07:59:00Z";
    task["metadata"]["resourceVersion"] = std::to_string(++rv);
    deliver(host, "kusciatasks", KH_EVENT_MODIFIED, task);
    answer();
  }
  // Written back twice, then yielded at the third replacement (yieldAfterOverwrites: 3).
  EXPECT_EQ(host.requests().size(), 3u);
  EXPECT_EQ(host.metric("kuscia_scheduler_time_yielded_fields_total", "scheduleTime"), 1);
  EXPECT_EQ(task["status"]["podStatuses"][kPodKey]["scheduleTime"], "2024-05-20T07:59:00Z");
}

// The answer of a write that comes after the write's event and after another writer's change of
// scheduleTime: the change is still seen (and answered), not hidden by re-applying the patch.
TEST(SchedulerTimeTest, AWriteAnsweredAfterAnotherWritersChangeDoesNotHideIt) {
  testing::FakeHost host("alice");
  ASSERT_TRUE(host.create(descriptor(), R"({"coalesceMillis": 0})")) << host.error();
  ASSERT_TRUE(host.start());
  json task = fixture("kusciatask.json");
  task["status"]["podStatuses"][kPodKey].erase("scheduleTime");
  task["metadata"]["resourceVersion"] = "100";
  deliver(host, "kusciatasks", KH_EVENT_ADDED, task);
  deliver(host, "pods", KH_EVENT_ADDED, fixture("pod.json"));
  ASSERT_EQ(host.pendingRequests().size(), 1u);
  const uint64_t id = host.pendingRequests().front()->id;
  task.merge_patch(json::parse(host.pendingRequests().front()->body));
  task["metadata"]["resourceVersion"] = "101";
  const std::string answer = task.dump(); // the task as the write left it
  deliver(host, "kusciatasks", KH_EVENT_MODIFIED, task);
  task["status"]["podStatuses"][kPodKey]["scheduleTime"] = "2024-05-20T07:59:00Z";
  task["metadata"]["resourceVersion"] = "102";
  deliver(host, "kusciatasks", KH_EVENT_MODIFIED, task); // another writer's change
  ASSERT_EQ(host.requests().size(), 1u);
  ASSERT_EQ(host.complete(id, 200, answer), KH_OK);
  ASSERT_EQ(host.requests().size(), 2u) << "the other writer's change was hidden";
  EXPECT_EQ(
      json::parse(host.requests().back().body)["status"]["podStatuses"][kPodKey]["scheduleTime"],
      "2024-05-20T08:00:01Z");
}

} // namespace
} // namespace kuscia_host::plugins::scheduler
