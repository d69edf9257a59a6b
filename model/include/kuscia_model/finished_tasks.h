// Lets the host forget the finished KusciaTasks this instance is done with (ABI 1.3
// cache_release), so that a month of finished tasks costs the host a digest each instead of
// their projected fields: memory follows the work in flight.
//
// A task is released once it is finished (status.phase Succeeded or Failed), `keepSeconds`
// have passed since its status.completionTime (or since this instance first saw it finished,
// when it has none), and the owner says it is not busy with it (no pod or service of it in
// memory, nothing left to write or send). Nothing is released before every subscription the
// owner named in waitFor() has had its initial list: a restarted host must see a finished task's
// remaining pods before it decides it has nothing to do. The tasks' own initial list need not be
// in: the host delivers a first list page by page, so finished tasks are released (and
// forgotten) while the rest arrives.
// Releasing is only a permission: the host forgets a task once every subscriber released it,
// and a change of what any of them declared brings it back as a new object (released again here
// when it is still finished).
//
// Single-threaded, like the plugin instance that owns it.
#pragma once

#include <kuscia_host/plugin.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace kuscia_host::model {

// Whether a KusciaTask phase is final.
inline bool finishedPhase(std::string_view phase) {
  return phase == "Succeeded" || phase == "Failed";
}

class FinishedTasks {
public:
  // Whether the owner still has work for a task.
  using Busy = std::function<bool(const std::string& task)>;
  // `phaseField` and `completionField`: the positions of "/status/phase" and
  // "/status/completionTime" in the task subscription's fields (both among the first few: they
  // are read without parsing the rest).
  FinishedTasks(sdk::Host host, uint64_t taskSubscription, std::string taskNamespace,
                std::size_t phaseField, std::size_t completionField, int64_t keepSeconds,
                Busy busy);

  // A subscription whose initial list must be in before anything is released. From the owner's
  // constructor.
  void waitFor(uint64_t subscription) { waiting_.insert(subscription); }
  // Every event the owner gets (only SYNCED and the task subscription's are looked at).
  void onEvent(const sdk::Event& e);
  // The owner let go of what it held of `task`: release it now if it is due.
  void recheck(const std::string& task);
  // Releases what came due; the owner calls it from a periodic timer (needed when keepSeconds >
  // 0, or when finished tasks may stay busy).
  void tick();

  // Finished tasks not released yet (kept, or busy).
  std::size_t waiting() const { return due_.size(); }
  // Whether releasing has begun (every awaited initial list is in; with none awaited, at once).
  bool ready() const { return waiting_.empty(); }

private:
  struct Due {
    int64_t at = 0; // wall-clock nanoseconds
    std::string resourceVersion;
  };
  // A task seen finished (or not): released, kept in due_, or dropped from it.
  void consider(const std::string& name, std::string_view resourceVersion,
                std::string_view fieldsJson);
  void release(const std::string& name, const std::string& resourceVersion);
  bool finished(std::string_view fieldsJson, int64_t* completion) const;

  sdk::Host host_;
  uint64_t taskSub_;
  std::string prefix_; // "<taskNamespace>/"
  std::size_t phaseField_, completionField_;
  int64_t keepNanos_;
  Busy busy_;
  std::set<uint64_t> waiting_;
  std::map<std::string, Due> due_;
};

} // namespace kuscia_host::model
