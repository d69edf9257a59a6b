// The terminal renderings of a timeline (kuscia-host timeline, demo) against golden files, on the
// stored KusciaTask: complete entries, missing times (bob's pod is not ready, its services not
// programmed) and a negative duration (an agent clock behind the API server's).
// KH_UPDATE_GOLDEN=1 rewrites the golden files from the current output (then review the diff).
#include <kuscia_model/timeline.h>
#include <kuscia_model/timeline_render.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kuscia_fixtures.h"

namespace kuscia_host::model::timeline {
namespace {

using nlohmann::json;

json storedTask() {
  json task = test::fixture("kusciatask.json");
  // A second alice pod whose agent clock is 3 s behind the API server's.
  task["status"]["podStatuses"]["alice/secretflow-task-psi-1"] = {
      {"namespace", "alice"},
      {"podName", "secretflow-task-psi-1"},
      {"podPhase", "Running"},
      {"createTime", "2024-05-20T08:00:05Z"},
      {"startTime", "2024-05-20T08:00:02Z"},
      {"readyTime", "2024-05-20T08:00:12Z"}};
  return task;
}

void expectGolden(const std::string& name, const std::string& actual) {
  std::string path = std::string(KH_FIXTURE_DIR) + "/golden/" + name;
  if (std::getenv("KH_UPDATE_GOLDEN") != nullptr) std::ofstream(path) << actual;
  std::ostringstream golden;
  golden << std::ifstream(path).rdbuf();
  EXPECT_EQ(actual, golden.str()) << "golden file " << path << " (KH_UPDATE_GOLDEN=1 rewrites it)";
}

TEST(TimelineRenderTest, TableMatchesTheGoldenFile) {
  json doc = model::timeline::fromTask(storedTask());
  std::string table = renderTimelineTable(doc);
  expectGolden("timeline_table.txt", table);
  EXPECT_NE(table.find("pending"), std::string::npos); // bob's readyTime
  EXPECT_NE(table.find("-3.0s!"), std::string::npos);  // create -> start of psi-1
  EXPECT_NE(table.find("clock skew"), std::string::npos);
}

TEST(TimelineRenderTest, GanttMatchesTheGoldenFile) {
  expectGolden("timeline_gantt.txt", renderTimelineGantt(model::timeline::fromTask(storedTask())));
}

// The task complete: bob ready last, its pod slow to pull its image.
json completeTask() {
  json task = storedTask();
  auto& bob = task["status"]["podStatuses"]["bob/secretflow-task-psi-0"];
  bob["readyTime"] = "2024-05-20T08:00:30Z";
  for (const char* s : {"fed", "global", "spu"})
    task["status"]["serviceStatuses"][std::string("bob/secretflow-task-psi-0-") + s]["readyTime"] =
        "2024-05-20T08:00:31Z";
  return task;
}

TEST(TimelineRenderTest, SummaryTableAndGanttNameTheCriticalPath) {
  json doc = model::timeline::fromTask(completeTask());
  std::string text =
      renderTimelineSummary(doc) + renderTimelineTable(doc) + renderTimelineGantt(doc);
  expectGolden("timeline_summary.txt", text);
  EXPECT_NE(text.find("startup 33.0s"), std::string::npos) << text; // 07:59:58 -> 08:00:31
  EXPECT_NE(text.find("last party bob"), std::string::npos);
  EXPECT_NE(text.find("blame: bob/secretflow-task-psi-0 readiness 27.0s"), std::string::npos);
  EXPECT_NE(text.find("critical: creating scheduling accepting readiness"), std::string::npos);
  EXPECT_NE(text.find("RRRR"), std::string::npos); // the critical phase in capitals
}

// A pulling phase reads as what it is: the pull's own duration from its Event, and the time of
// the phase before the pull began; or, where the phase's whole-second ends make it shorter than
// the pull, the pull's duration alone (never "2.0s ... in 2.400s" unexplained).
TEST(TimelineRenderTest, APullSaysItsOwnDurationAndWhatCameBefore) {
  json task = completeTask();
  auto& bob = task["status"]["podStatuses"]["bob/secretflow-task-psi-0"];
  bob["imagePullStartTime"] = "2024-05-20T08:00:04Z";
  bob["imagePullEndTime"] = "2024-05-20T08:00:28Z";
  bob["reasons"] = {{"pulling",
                     {{"reason", "Pulled"},
                      {"message", R"(Successfully pulled image "secretflow" in 23.500s)"}}}};
  std::string text = renderTimelineSummary(fromTask(task));
  EXPECT_NE(text.find("pulling 25.0s (the pull itself 23.500s, 1.5s before it; Pulled: "
                      "Successfully pulled image \"secretflow\" in 23.500s)"),
            std::string::npos)
      << text;
  bob["reasons"]["pulling"]["message"] = R"(Successfully pulled image "secretflow" in 25.400s)";
  text = renderTimelineSummary(fromTask(task));
  EXPECT_NE(text.find("pulling 25.0s (the pull itself 25.400s; Pulled: "), std::string::npos)
      << text;
}

TEST(TimelineRenderTest, DocumentFlagsMissingAndNegative) {
  json doc = model::timeline::fromTask(storedTask());
  const json& bob = doc["entries"]["bob/secretflow-task-psi-0"];
  EXPECT_EQ(bob["missing"], json::array({"readyTime"}));
  EXPECT_EQ(bob["durations"]["createToStart"], 3);
  const json& skewed = doc["entries"]["alice/secretflow-task-psi-1"];
  EXPECT_EQ(skewed["negative"], json::array({"createToStart"}));
  EXPECT_FALSE(timelineComplete(doc));
  // p2p: each party's cluster holds its own entries; merged they are the task.
  json alice = doc;
  json bobOnly = doc;
  for (auto it = alice["entries"].begin(); it != alice["entries"].end();)
    it = it.key().rfind("bob/", 0) == 0 ? alice["entries"].erase(it) : std::next(it);
  for (auto it = bobOnly["entries"].begin(); it != bobOnly["entries"].end();)
    it = it.key().rfind("alice/", 0) == 0 ? bobOnly["entries"].erase(it) : std::next(it);
  EXPECT_EQ(mergeTimelines({alice, bobOnly})["entries"], doc["entries"]);
}

} // namespace
} // namespace kuscia_host::model::timeline
