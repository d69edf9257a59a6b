// What Kuscia's interconnection carries between the parties' clusters for a task's gang
// reservation, as sim-agent plays it in p2p mode: each party's cluster pushes when its party
// reserved into the KusciaTaskSummary's resourceStatus, the initiator's cluster moves its stub
// TaskResource of that party from it, and its group's decision (every TaskResource Schedulable)
// goes back to the partners' clusters the same way (docs/design/control-plane.md). The instances
// of one process share it: the demo's p2p hosts run in one process, each with its own cluster,
// as Kuscia's clusters do. Thread-safe (each host runs its instances on threads of its own).
#pragma once

#include <optional>
#include <string>

namespace kuscia_host::plugins::sim {

class Interconn {
public:
  // `party` of `task` reserved at `at` (RFC 3339), as its cluster's summary says.
  static void reserved(const std::string& task, const std::string& party, const std::string& at);
  // The initiator's group made every TaskResource of `task` Schedulable at `at`.
  static void schedulable(const std::string& task, const std::string& at);
  static std::optional<std::string> reservedAt(const std::string& task, const std::string& party);
  static std::optional<std::string> schedulableAt(const std::string& task);
};

} // namespace kuscia_host::plugins::sim
