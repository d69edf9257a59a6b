// sim-agent's configuration: every key optional. The defaults make each phase take about a
// second, so that the times differ at the one-second resolution of API timestamps.
#pragma once

#include <kuscia_host/config_reader.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kuscia_host::plugins::sim {

struct PortSpec {
  std::string name;
  std::string scope; // Cluster or Domain
};

struct SimConfig {
  enum class Distribution { kFixed, kUniform, kLognormal };
  std::string taskNamespace = "cross-domain";
  int64_t podsPerParty = 1;
  std::vector<PortSpec> ports = {{"spu", "Cluster"}, {"fed", "Cluster"}, {"global", "Domain"}};
  int64_t scheduleMillis = 1000;
  int64_t startMillis = 1500;
  int64_t pullMillis = 1000;
  int64_t readyMillis = 1500;
  int64_t endpointsMillis = 1200;
  int64_t runMillis = 3000;
  int64_t cleanupMillis = -1; // after a task finished, delete its pods and services; -1 never
  // >= 0: each party reserves through a TaskResource, Reserved this long after its creation;
  // the pods are bound once every party's is (p2p: through the interconnection's summary and
  // the initiator's stubs). -1: no TaskResource.
  int64_t reserveMillis = -1;
  // A partner's approval of a KusciaJob that awaits it (a party playing approval-wait: 8x).
  int64_t approveMillis = 1000;
  Distribution distribution = Distribution::kFixed;
  double spread = 0.5;
  int64_t seed = 1;
  double failureRate = 0;
  std::string failureReason = "ErrImagePull";
};

const std::vector<sdk::ConfigKey>& simConfigKeys();
// Throws sdk::ConfigError naming the key.
SimConfig parseSimConfig(std::string_view json);

} // namespace kuscia_host::plugins::sim
