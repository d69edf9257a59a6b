// What the task-timeline instances of one host know of their own domain's entries beyond the
// task's status: the first ready, the image pull, the containers' start, why each phase waited
// and what an entry waits for now. Each instance publishes its own entries; every instance reads
// them all, so that in centralized mode (one instance per domain, one process) each answers the
// same document with the same summary, and the admin server's key-by-key merge of their answers
// holds one answer (docs/design/critical-path.md, "One answer in centralized mode").
//
// Only live objects are on the board: an instance takes an entry off when it forgets the object,
// and all of its entries when it is destroyed. Thread-safe (instances run on their own executors).
#pragma once

#include <kuscia_host/pod_events.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
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
  std::optional<int64_t> firstReady;      // pods: the first Ready=True of the incarnation
  std::optional<int64_t> containersStart; // pods: every container running
  // The image pull, and why each phase waited: shared with the instance that published them, and
  // never changed once shared (a change is made on a copy); nullptr: none.
  std::shared_ptr<const sdk::timeline::PodFacts> facts;
  std::unique_ptr<Waiting> waiting; // what it waits for now (none once ready: 8 bytes)

  // The status-like object the timeline document's entry takes these from ("firstReadyTime",
  // "containersStartTime", "imagePullStartTime", "imagePullEndTime", "reasons", "waiting").
  nlohmann::json toJson() const;
};

class EntryBoard {
public:
  // The board of this process (the plugin's library is loaded once per host).
  static EntryBoard& process();

  // Sets the entry "<ns>/<name>".
  void put(const std::string& key, EntryFacts facts);
  void erase(const std::string& key);
  // Calls `read` with the entry's facts, without copying them, when the board has the entry.
  template <class F> void read(const std::string& key, F&& read) const {
    std::lock_guard lock(mu_);
    if (auto it = entries_.find(key); it != entries_.end()) std::forward<F>(read)(it->second);
  }
  std::size_t size() const;

private:
  mutable std::mutex mu_;
  std::map<std::string, EntryFacts> entries_;
};

} // namespace kuscia_host::plugins::timeline
