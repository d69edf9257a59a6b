#include "plugin_host/library_states.h"

namespace kuscia_host {

LibraryStates::~LibraryStates() {
  for (auto it = states_.rbegin(); it != states_.rend(); ++it)
    if (it->destroy != nullptr) it->destroy(it->state);
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
