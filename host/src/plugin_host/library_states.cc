#include "plugin_host/library_states.h"

namespace kuscia_host {

LibraryStates::~LibraryStates() {
  while (!states_.empty()) {
    State s = states_.back();
    states_.pop_back();
    if (s.destroy != nullptr) s.destroy(s.state);
  }
}

void* LibraryStates::get(const std::shared_ptr<PluginLibrary>& library, Make make,
                         Destroy destroy) {
  if (make == nullptr) return nullptr;
  std::lock_guard lock(mu_);
  for (const auto& s : states_)
    if (s.make == make) return s.state;
  void* state = make();
  if (state != nullptr) states_.push_back({library, make, destroy, state});
  return state;
}

std::size_t LibraryStates::size() const {
  std::lock_guard lock(mu_);
  return states_.size();
}

} // namespace kuscia_host
