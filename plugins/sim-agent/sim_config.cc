#include "sim_config.h"

#include <kuscia_model/kuscia.h>

namespace kuscia_host::plugins::sim {

const std::vector<sdk::ConfigKey>& simConfigKeys() {
  static const std::vector<sdk::ConfigKey> keys = {
      model::taskNamespaceKey(),
      {"podsPerParty", "integer", "1", "pods of each party of a task (1..16)"},
      {"ports", "string", "spu:Cluster,fed:Cluster,global:Domain",
       "the services of each pod, as name:scope (Cluster or Domain), comma-separated"},
      {"phaseMillis", "integer", "1000",
       "the pace (0..60000): the defaults of the six delays below are 1, 1.5, 1, 1.5, 1.2 and 3 "
       "times it"},
      {"scheduleMillis", "integer", "phaseMillis", "pod creation to PodScheduled=True (0..600000)"},
      {"startMillis", "integer", "1.5 x phaseMillis",
       "scheduled to started: status.startTime, a Pulling Event"},
      {"pullMillis", "integer", "phaseMillis",
       "started to the containers running: a Pulled Event, phase Running"},
      {"readyMillis", "integer", "1.5 x phaseMillis", "containers running to Ready=True"},
      {"endpointsMillis", "integer", "1.2 x phaseMillis",
       "started to the services' Endpoints addresses"},
      {"runMillis", "integer", "3 x phaseMillis",
       "all pods ready (task Running) to the task Succeeded"},
      {"cleanupMillis", "integer", "-1",
       "a finished task's pods and services are deleted this long after it finished, as "
       "Kuscia does (-1: never)"},
      {"reserveMillis", "integer", "-1",
       "each party's pods reserve through a TaskResource (Kuscia's gang reservation): Reserved "
       "this long after its creation, the pods bound once every party's is (p2p: the "
       "initiator's cluster keeps a stub of each partner's, moved as the interconnection "
       "brings it) (-1: no TaskResource; scheduleMillis then binds them)"},
      {"approveMillis", "integer", "phaseMillis",
       "a KusciaJob awaiting approval (p2p, or a party annotated approval-wait): each other "
       "party accepts this long after (a party playing approval-wait: eight times as long)"},
      {"distribution", "string", "fixed",
       "how each delay is drawn around its value: fixed, uniform (within +-spread) or lognormal "
       "(median the value, sigma spread)"},
      {"spread", "number", "0.5", "uniform: the fraction around the value; lognormal: sigma"},
      {"seed", "integer", "1", "seed of the delays and failures (runs repeat)"},
      {"failureRate", "number", "0", "probability that a pod fails to start (0..1)"},
      {"failureReason", "string", "ErrImagePull", "the reason a failing pod shows"},
  };
  return keys;
}

namespace {

std::vector<PortSpec> parsePorts(const std::string& text) {
  std::vector<PortSpec> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    auto colon = item.find(':');
    PortSpec p{item.substr(0, colon),
               colon == std::string::npos ? "Cluster" : item.substr(colon + 1)};
    if (!model::isDnsLabel(p.name) || (p.scope != "Cluster" && p.scope != "Domain"))
      throw sdk::ConfigError("ports", "config key 'ports': '" + item +
                                          "' is not name:Cluster or name:Domain");
    out.push_back(p);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

} // namespace

SimConfig parseSimConfig(std::string_view json) {
  sdk::ConfigReader r(json, simConfigKeys());
  SimConfig c;
  c.taskNamespace = model::readTaskNamespace(r);
  c.podsPerParty = r.integer("podsPerParty", c.podsPerParty, 1, 16);
  c.ports = parsePorts(r.string("ports", "spu:Cluster,fed:Cluster,global:Domain"));
  const int64_t phase = r.integer("phaseMillis", 1000, 0, 60000);
  c.scheduleMillis = r.integer("scheduleMillis", phase, 0, 600000);
  c.startMillis = r.integer("startMillis", phase * 3 / 2, 0, 600000);
  c.pullMillis = r.integer("pullMillis", phase, 0, 600000);
  c.readyMillis = r.integer("readyMillis", phase * 3 / 2, 0, 600000);
  c.endpointsMillis = r.integer("endpointsMillis", phase * 6 / 5, 0, 600000);
  c.runMillis = r.integer("runMillis", phase * 3, 0, 86400000);
  c.cleanupMillis = r.integer("cleanupMillis", -1, -1, 86400000);
  c.reserveMillis = r.integer("reserveMillis", -1, -1, 600000);
  c.approveMillis = r.integer("approveMillis", phase, 0, 600000);
  std::string d = r.oneOf("distribution", "fixed", {"fixed", "uniform", "lognormal"});
  c.distribution = d == "uniform"     ? SimConfig::Distribution::kUniform
                   : d == "lognormal" ? SimConfig::Distribution::kLognormal
                                      : SimConfig::Distribution::kFixed;
  c.spread = r.number("spread", c.spread);
  if (c.spread < 0 || c.spread > 5)
    throw sdk::ConfigError("spread", "config key 'spread': must be within [0, 5]");
  c.seed = r.integer("seed", c.seed);
  c.failureRate = r.number("failureRate", c.failureRate);
  if (c.failureRate < 0 || c.failureRate > 1)
    throw sdk::ConfigError("failureRate", "config key 'failureRate': must be within [0, 1]");
  c.failureReason = r.string("failureReason", c.failureReason);
  return c;
}

} // namespace kuscia_host::plugins::sim
