// scheduler-time (optional): fills podStatuses["<ns>/<pod>"].scheduleTime of every KusciaTask
// with the lastTransitionTime of the pod's PodScheduled=True condition, for the pods of this
// instance's domain, with task-timeline's write discipline (merge patches of what differs,
// coalesced, retried). Without it scheduleTime stays absent; enabled later, it fills the field
// for pods already running. An entry of an earlier incarnation of the pod (another createTime)
// loses its scheduleTime until the new one is scheduled.
#pragma once

#include <kuscia_host/plugin.hpp>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "scheduler_config.h"
#include <kuscia_model/finished_tasks.h>
#include <kuscia_model/kuscia_model.h>
#include <kuscia_model/status_writer.h>

namespace kuscia_host::plugins::scheduler {

class SchedulerTime final : public sdk::Plugin {
public:
  std::size_t heldTasks() const { return tasks_.size(); }
  SchedulerTime(sdk::Host host, std::string_view domain, std::string_view configJson);
  static void validateConfig(std::string_view configJson) { parseSchedulerConfig(configJson); }

  void onEvent(const sdk::Event& event) override;
  void onTimer(uint64_t timerId, uint64_t userTag) override;
  void onKubeResult(const sdk::KubeResult& result) override;

  // The merge patch's "status" that brings `task` to the desired state; empty when none.
  model::StatusPatch diff(const std::string& task);

private:
  struct Pod {
    uint64_t uid = 0;                  // uidDigest
    const std::string* task = nullptr; // TaskObjects keeps the name
    std::string phase;
    std::optional<int64_t> create;
    std::optional<int64_t> scheduled; // written as formatTime(kAsGiven): the text it was read from
    bool loggedMalformed = false;
  };
  // Whether the status entry lacks the pod's scheduleTime, or holds an earlier incarnation's; the
  // entry's patch is built into `patch` when given.
  static bool differs(const Pod& p, const nlohmann::json* entry,
                      model::StatusPatch::Entry* patch = nullptr);
  void onTask(const sdk::Event& e);
  // Lets the task go when this instance has no pod of it left.
  void release(const std::string& task);
  void touch(const std::string& task);
  // A write's answer: its patch is applied to a view older than the `version` it made.
  void written(const std::string& task, const model::StatusPatch& status, uint64_t version);

  SchedulerConfig config_;
  uint64_t podSub_ = 0, taskSub_ = 0;
  model::TaskObjects<Pod> pods_; // this domain's task pods, "<ns>/<name>"
  model::TaskIndex taskPods_;    // which task each pod belongs to
  // The implicit noexcept move of nlohmann::json calls its invariant check, which clang-tidy
  // cannot prove does not throw; it does not.
  // NOLINTNEXTLINE(bugprone-exception-escape)
  struct Task {
    nlohmann::json pods;  // status.podStatuses
    uint64_t version = 0; // the resourceVersion it was read at (versionNumber(); 0: not known)
  };
  std::map<std::string, Task> tasks_; // while this instance has pods of it
  sdk::Metric malformed_;
  model::StatusWriter writer_;
  std::optional<model::FinishedTasks> finished_; // what the host may forget
};

} // namespace kuscia_host::plugins::scheduler
