// Writes one plugin instance's part of KusciaTask statuses, with the discipline upstream lacks:
// JSON merge patches on kusciatasks/<task>/status that carry only what differs (never a
// full-object PUT, never a write when nothing differs), at most one write in flight per task,
// changes to one task coalesced within a window. Transient failures (429, 5xx, no answer) are
// retried by the host, the one layer that retries, until the answer is final: nothing is dropped
// while the task exists. A 409 decides again from the task as it is now; a 404 (the task is
// gone) ends it until the task appears again.
// It never fights another writer of the same fields (write_contest.h): the plugin reports each
// task as it sees it through observed(); fields someone else keeps replacing are yielded, and
// fields someone keeps removing are written again ever more slowly.
//
// The plugin says what differs through the Diff callback, evaluated when the write is made (not
// when the change happened), so a write always carries the latest desired state. A write is a
// StatusPatch (status_patch.h): built, filtered, sent, remembered and applied as facts.
//
// A change the plugin calls deferrable (a time that ends no wait: a new entry, its createTime or
// startTime) waits up to deferMillis for one that is not (a readyTime, the clearing
// of an earlier incarnation's times), which then carries it: a pod's create, start and ready make
// one write when it gets ready within that time, instead of one each. Every write costs the API
// server a new resourceVersion of the task, each watcher an event, and Kuscia's controller, which
// PUTs whole statuses, a chance of a conflict.
#pragma once

#include <kuscia_host/config_reader.hpp>
#include <kuscia_host/plugin.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <kuscia_model/kuscia_model.h>
#include <kuscia_model/status_patch.h>
#include <kuscia_model/write_contest.h>

namespace kuscia_host::model {

// The settings every status-writing plugin takes, read by readStatusWriterConfig.
struct StatusWriterConfig {
  std::string taskNamespace = "cross-domain";
  int64_t coalesceMillis = 150;
  // Not one of the shared keys: a plugin whose changes may wait reads its own (task-timeline's
  // deferMillis). 0: none waits.
  int64_t deferMillis = 0;
  int yieldAfterOverwrites = 2;
};
// Their keys (taskNamespace, coalesceMillis, yieldAfterOverwrites), for the plugin's table of
// keys.
std::vector<sdk::ConfigKey> statusWriterKeys();
// Throws sdk::ConfigError naming the key.
void readStatusWriterConfig(const sdk::ConfigReader& r, StatusWriterConfig& c);

class StatusWriter {
public:
  struct Options {
    std::string taskNamespace = "cross-domain";
    int64_t coalesceMillis = 150;
    // How long a deferrable change waits for one that is not (never less than coalesceMillis).
    int64_t deferMillis = 0;
    // Names the metric families "<metricPrefix>_status_writes_total",
    // "<metricPrefix>_status_patch_bytes_total" and the contest's (write_contest.h).
    std::string metricPrefix;
    // Replacements of one field by another writer within a minute that make it yielded.
    int yieldAfter = 2;
  };
  // The "status" of the merge patch that brings `task` to the desired state (empty when it
  // already holds it).
  using Diff = std::function<StatusPatch(const std::string& task)>;
  // After a successful write: the patch that was applied, and the task's resourceVersion after
  // it (versionNumber(); 0: not known). The plugin applies the patch to its view of the task, so
  // that the next diff does not repeat it while the watch event is on its way (cheaper than
  // parsing the whole task the server answers with); not when its view is of that version or a
  // later one (the events came first: another writer may have changed what was written since).
  using Written =
      std::function<void(const std::string& task, const StatusPatch& status, uint64_t version)>;

  StatusWriter(sdk::Host host, Options options, Diff diff, Written written);
  // With the plugin's settings; metric families named "<metricPrefix>_...".
  StatusWriter(sdk::Host host, const StatusWriterConfig& config, std::string metricPrefix,
               Diff diff, Written written);

  // The desired state of `task` may have changed: write within the coalescing window, or, when
  // the change can wait (`deferrable`), within deferMillis unless a change that cannot wait comes
  // first.
  void changed(const std::string& task, bool deferrable = false);
  // Route the instance's timer and kube callbacks here first; true when they were the writer's.
  bool onTimer(uint64_t timerId);
  bool onKubeResult(const sdk::KubeResult& result);

  // The task as the plugin sees it now (a watch event): what another writer overwrote.
  void observed(const std::string& task, std::string_view resourceVersion,
                const nlohmann::json& podStatuses, const nlohmann::json& serviceStatuses) {
    contest_.observed(task, resourceVersion, podStatuses, serviceStatuses);
  }
  // The task is gone.
  void forget(const std::string& task);
  // Called when a timer or an answer of `task` leaves it settled(): nothing of it due, on its
  // way or owed any more. `answered` is the task's resourceVersion after the write just answered
  // (versionNumber(); 0 after a timer with nothing to write, or when the answer does not tell).
  // The plugin may let its view of the task go then: the events it decided on have come (a task
  // event may come before the answer of its write, when the host read the watch first).
  using Settled = std::function<void(const std::string& task, uint64_t answered)>;
  void onSettled(Settled settled) { settled_ = std::move(settled); }
  const WriteContest& contest() const { return contest_; }

  // Whether nothing of `task` is due, on its way or owed: the plugin may let its view of the task
  // go (the next change brings it back from the host's cache).
  bool settled(const std::string& task) const {
    auto it = tasks_.find(task);
    return it == tasks_.end() || (!it->second.dirty && !it->second.owed && it->second.timer == 0 &&
                                  it->second.request == 0);
  }
  // Whether the last write of `task` did not land (not sent, refused, or the task was gone) and
  // nothing is on its way: the plugin's next look at the task must compare again, even when
  // what it sees did not change.
  bool owes(const std::string& task) const {
    auto it = tasks_.find(task);
    return it != tasks_.end() && it->second.owed && it->second.timer == 0 &&
           it->second.request == 0;
  }

private:
  struct TaskState {
    bool dirty = false;
    bool urgent = false;   // what is due holds a change that cannot wait
    bool owed = false;     // the last write did not land (owes())
    bool deferred = false; // `timer` is the deferral's (an urgent change replaces it)
    uint64_t timer = 0;
    uint64_t request = 0;
  };
  void schedule(const std::string& task, TaskState& st, int64_t delayMillis, bool deferred = false);
  // schedule() for what is due: within the coalescing window when it is urgent, else deferred.
  void scheduleDue(const std::string& task, TaskState& st);
  void flush(const std::string& task);

  sdk::Host host_;
  Options options_;
  Diff diff_;
  Written written_;
  Settled settled_;
  sdk::Metric writes_;
  sdk::Metric bytes_;
  WriteContest contest_;
  std::unordered_map<std::string, TaskState> tasks_; // hashed: looked up on every change
  std::map<uint64_t, std::string> timers_;           // timer id -> task
  struct Sent {
    std::string task;
    StatusPatch status; // what was sent
  };
  std::map<uint64_t, Sent> requests_; // request id -> what was sent
};

} // namespace kuscia_host::model
