// The states the instances of one plugin library share within one host (ABI 1.5 library_state):
// in centralized mode, one instance per domain reads what the others publish. Each state is made
// at its first request and destroyed with this object, which the host destroys after every
// instance; a state keeps its library loaded until then (its destroy function lives there).
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "plugin_host/loader.h"

namespace kuscia_host {

class LibraryStates {
public:
  using Make = void* (*)();
  using Destroy = void (*)(void*);

  LibraryStates() = default;
  ~LibraryStates(); // destroys the states, the last made first
  LibraryStates(const LibraryStates&) = delete;
  LibraryStates& operator=(const LibraryStates&) = delete;

  // The state `make` made for this host (one per make function: one per type per library);
  // made now at the first call. nullptr when make gave none (asked again at the next call).
  void* get(const std::shared_ptr<PluginLibrary>& library, Make make, Destroy destroy);
  std::size_t size() const;

private:
  struct State {
    std::shared_ptr<PluginLibrary> library;
    Make make;
    Destroy destroy;
    void* state;
  };
  mutable std::mutex mu_;
  std::vector<State> states_;
};

} // namespace kuscia_host
