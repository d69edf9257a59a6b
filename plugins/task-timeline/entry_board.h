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

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace kuscia_host::plugins::timeline {

class EntryBoard {
public:
  // The board of this process (the plugin's library is loaded once per host).
  static EntryBoard& process();

  // Sets the entry "<ns>/<name>" (a status-like object: times and "reasons", "waiting").
  void put(const std::string& key, nlohmann::json facts);
  void erase(const std::string& key);
  // The entry's facts, or null.
  nlohmann::json get(const std::string& key) const;
  // Calls `read` with the entry's facts, without copying them, when the board has the entry.
  template <class F> void read(const std::string& key, F&& read) const {
    std::lock_guard lock(mu_);
    if (auto it = entries_.find(key); it != entries_.end()) std::forward<F>(read)(it->second);
  }
  std::size_t size() const;

private:
  mutable std::mutex mu_;
  std::map<std::string, nlohmann::json> entries_;
};

} // namespace kuscia_host::plugins::timeline
