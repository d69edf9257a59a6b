// How a status-writing plugin lives beside other writers of the same fields: it never fights.
//
// Kuscia's own task controller has written createTime, startTime and readyTime into podStatuses
// and serviceStatuses since 2023, with full-status PUTs, on every reconcile in which its computed
// status differs from the stored one. Two writers that hold different values for one field, each
// writing when the stored value is not its own, write forever: each write triggers the other.
//
// The contest records every time field the plugin wrote (its instant and the task's
// resourceVersion after the write) and compares each later task event with it. A field that
// holds another value, or none, in a version newer than the write was overwritten by someone else:
//  - replaced (another value) `yieldAfter` times within the window: the plugin yields that field
//    of that entry. It never writes it again for this incarnation of the entry (a new createTime
//    starts afresh), logs once with both values and counts
//    <prefix>_yielded_fields_total{field}. Its own value stays where it owns the meaning (the
//    timeline document, the histograms).
//  - removed (a writer that does not know the field, such as an older controller's full-status
//    PUT): written again, so nothing recorded is lost; at once the first time in the window, then
//    after 1, 2, 4 ... s (at most kMaxHoldMillis), so that a writer erasing in reaction to each
//    write is not fed one write per write; removed kRemovalsToYield times within the window:
//    yielded as above.
// Two instants that differ only below the second are one time: Kuscia's types serialise times in
// whole seconds (metav1.Time), so a status holding our time truncated to the second holds it.
//
// Single-threaded: called on the owning instance's executor only.
#pragma once

#include <kuscia_host/plugin.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <kuscia_model/kuscia_time.h>
#include <kuscia_model/status_patch.h>

namespace kuscia_host::model {

// Whether a status holding `have` holds the time `want` (equal, or `want` truncated to whole
// seconds, as a writer with second-precision types writes it).
bool sameTime(int64_t have, int64_t want);
// A resourceVersion as a number (Kubernetes' are etcd revisions); 0 when it is not one, and
// then no event is taken for older than a write.
uint64_t versionNumber(std::string_view rv);
// metadata.resourceVersion of a stored object's JSON, without parsing the whole object.
uint64_t responseVersion(std::string_view body);

class WriteContest {
public:
  static constexpr int64_t kWindowMillis = 60000;
  static constexpr int kRemovalsToYield = 6;
  static constexpr int64_t kMaxHoldMillis = 8000;

  // `yieldAfter`: replacements within the window that make the plugin yield a field.
  WriteContest(sdk::Host host, const std::string& metricPrefix, int yieldAfter);

  // A write of `status` to `task` succeeded; `version` is the task's resourceVersion in the
  // server's answer (responseVersion(); 0: not known).
  void wrote(const std::string& task, const StatusPatch& status, uint64_t version);
  // The task as a watch event or cache read shows it: finds what someone else overwrote.
  void observed(const std::string& task, std::string_view resourceVersion,
                const nlohmann::json& podStatuses, const nlohmann::json& serviceStatuses);
  // Removes the yielded fields from a patch, and the entries left with no time field.
  void filter(const std::string& task, StatusPatch& status);
  // Milliseconds to wait before writing `task` again (0: now), after repeated removals.
  int64_t holdMillis(const std::string& task) const;
  // Whether `field` of `entry` ("<group>" "podStatuses"/"serviceStatuses") is yielded.
  bool yielded(const std::string& task, std::string_view group, std::string_view entry,
               std::string_view field) const;
  // The task is gone: what was known of it goes.
  void forget(const std::string& task);
  // Whether anything of `task` is known: observed() of a task it does not know does nothing.
  bool knows(const std::string& task) const { return tasks_.count(task) > 0; }

private:
  // What is known of a field once another writer overwrote it: rare, so kept apart and allocated
  // only then (a record per field written is the contest's whole cost at work: B7, L1).
  struct Contest {
    // Monotonic millis of overwrites in the window: a few at most.
    std::vector<int64_t> replaced, removed;
    bool yielded = false;
    Instant createNanos; // of the entry when yielded: a new incarnation starts afresh
  };
  // A time field of an entry this host wrote (24 bytes). Its entry is a group (0 podStatuses, 1
  // serviceStatuses) and a key, kept once per task in Task::keys (keyAt: where); its name is an
  // index into names_.
  struct Field {
    Instant lastWritten;         // the instant this host last wrote
    uint64_t writtenVersion = 0; // the task's resourceVersion after it (0: unknown)
    uint16_t keyAt = 0;
    uint8_t group = 0;
    uint8_t name = 0;
    bool defending = false; // the last write is not yet seen overwritten
    bool contested = false; // Task::contests holds its Contest
  };
  using ContestKey = std::tuple<uint8_t, std::string, uint8_t>; // group, entry key, name
  // The fields written of a task, ordered by entry (group, then key) and name. The entries' keys
  // are written once each into one string, each followed by a NUL: a task's contest is a few
  // hundred bytes, not a string, a vector and a record per entry (about 1.4 KB: L1).
  struct Task {
    std::string keys;
    std::vector<Field> fields;
    std::unique_ptr<std::map<ContestKey, Contest>> contests; // rare: see Contest
    int64_t holdUntilMillis = 0;
  };
  static constexpr std::size_t kMaxKeys = UINT16_MAX; // bytes of a task's keys
  int64_t nowMillis() const;
  // The index of a field's name (added when `add`; nullopt when unknown and not added).
  std::optional<uint8_t> nameIndex(std::string_view field, bool add);
  static std::string_view keyOf(const Task& t, const Field& f);
  // The field (added in its place when `add`; nullptr when unknown and not added, or when the
  // task's keys are full).
  static Field* findField(Task& t, uint8_t group, std::string_view key, uint8_t name, bool add);
  const Field* findField(const Task& t, std::string_view group, std::string_view entry,
                         std::string_view field) const;
  static ContestKey contestKey(const Task& t, const Field& f);
  // The field's contest, if it has one (contestOf with `add`: made when it has none).
  static const Contest* findContest(const Task& t, const Field& f);
  static Contest* contestOf(Task& t, Field& f, bool add);
  // Drops what is left of no field (after fields were erased).
  static void compactKeys(Task& t);
  void overwritten(const std::string& task, Task& t, Field& f, const nlohmann::json* value);
  void yield(const std::string& task, Task& t, Field& f, Contest& c, const std::string& theirs);

  sdk::Host host_;
  int yieldAfter_;
  sdk::Metric yieldedMetric_, overwrites_;
  std::vector<std::string> names_;              // of the fields written, at most 256
  std::unordered_map<std::string, Task> tasks_; // hashed: looked up on every task event
};

} // namespace kuscia_host::model
