// What the task-timeline instances of one host (one board per host: sdk::Host::libraryState) know
// of their own domain's entries beyond the task's status: the first ready, the image pull, the
// containers' start, why each phase waited and what an entry waits for now. Each instance publishes
// its own entries; every instance reads them all, so that in centralized mode (one instance per
// domain, one process) each answers the same document with the same summary, and the admin server's
// key-by-key merge of their answers holds one answer (docs/design/critical-path.md, "One answer in
// centralized mode").
//
// Only live objects are on the board: an instance takes an entry off when it forgets the object,
// and all of its entries when it is destroyed. Thread-safe (instances run on their own executors).
#pragma once

#include <kuscia_model/kuscia_time.h>
#include <kuscia_model/pod_events.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace kuscia_host::plugins::timeline {

// Why an entry has not reached its next time yet, and since when.
struct Waiting {
  std::string phase; // "scheduling", "starting", "ready"
  std::string reason;
  std::string message;
  int64_t sinceNanos = 0;
};

// One entry's facts as its instance publishes them: values, not a document. The documents read
// them as JSON (toJson); the summary reads the values.
struct EntryFacts {
  model::Instant firstReady;      // pods: the first Ready=True of the incarnation
  model::Instant containersStart; // pods: every container running
  // pods: their party's reservation (TaskResource) begun, reserved, every party reserved
  model::Instant reserving, reserved, schedulable;
  // The image pull, and why each phase waited: shared with the instance that published them, and
  // never changed once shared (a change is made on a copy); nullptr: none.
  std::shared_ptr<const model::timeline::PodFacts> facts;
  std::unique_ptr<Waiting> waiting; // what it waits for now (none once ready: 8 bytes)

  // The status-like object the timeline document's entry takes these from ("firstReadyTime",
  // "containersStartTime", "imagePullStartTime", "imagePullEndTime", "reservingTime",
  // "reservedTime", "schedulableTime", "reasons", "waiting").
  nlohmann::json toJson() const;
};

class EntryBoard {
public:
  // Sets the entry "<ns>/<name>". The board keeps a view of `key`, not a copy: it is the key of
  // the publishing instance's own record of the object, which must stay where it is until the
  // instance erases the entry (before it forgets the record; all of them before it goes).
  void put(const std::string& key, EntryFacts facts);
  void erase(std::string_view key);
  // Calls `read` with the entry's facts, without copying them, when the board has the entry.
  template <class F> void read(std::string_view key, F&& read) const {
    std::lock_guard lock(mu_);
    if (auto it = entries_.find(key); it != entries_.end()) std::forward<F>(read)(it->second);
  }
  std::size_t size() const;

  // The domains of this host's instances. A task's facts are kept (kept_facts.h) by one instance
  // of the host: that of the first of its domains, in order, that the task has entries of.
  void addDomain(const std::string& domain);
  void removeDomain(const std::string& domain);
  bool hasDomain(std::string_view domain) const;
  // Whether `domain` is the first of the host's domains (in name order).
  bool isFirst(std::string_view domain) const;
  // Whether `domain` keeps the facts of a task with entries of `taskDomains`.
  bool keeps(const std::string& domain,
             const std::set<std::string, std::less<>>& taskDomains) const;

private:
  mutable std::mutex mu_;
  std::multiset<std::string, std::less<>> domains_;
  // An entry is 96 bytes: a copy of each key would add a string and its text (64 more). Hashed:
  // every instance of the process puts and reads its entries here on most events.
  std::unordered_map<std::string_view, EntryFacts> entries_;
};

} // namespace kuscia_host::plugins::timeline
