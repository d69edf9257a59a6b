#include "entry_board.h"

namespace kuscia_host::plugins::timeline {

EntryBoard& EntryBoard::process() {
  static EntryBoard board;
  return board;
}

void EntryBoard::put(const std::string& key, nlohmann::json facts) {
  std::lock_guard lock(mu_);
  entries_[key] = std::move(facts);
}

void EntryBoard::erase(const std::string& key) {
  std::lock_guard lock(mu_);
  entries_.erase(key);
}

nlohmann::json EntryBoard::get(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  return it == entries_.end() ? nlohmann::json() : it->second;
}

std::size_t EntryBoard::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

} // namespace kuscia_host::plugins::timeline
