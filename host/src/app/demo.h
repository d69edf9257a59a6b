// `kuscia-host demo`: the whole product on one machine, as its config file says
// (config/demo/demo.yaml, compiled in; its host texts are read by the same loader as `run`).
// Starts the embedded API server and a host with every party's domain (centralized), or one host
// per party, each with its own embedded API server (--p2p, the objects created in each); creates
// the namespaces; submits the objects; runs the plugin command the file names to show them (it
// waits for them and prints them); then keeps serving (kubectl, the plugins' pages and APIs)
// until Ctrl-C, or exits when done.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "common/defaults.h"

namespace kuscia_host {

struct DemoOptions {
  bool p2p = false;
  int tasks = 3;
  bool exitWhenDone = false;
  std::string outputDir;               // given to the show command (each object as <name>.json)
  std::vector<std::string> pluginDirs; // searched first (absolute)
  std::string adminListen = defaults::kAdminListen;
  std::string workDir;    // kubeconfigs and the log; default /tmp/kuscia-host-demo-<uid>
  int phaseMillis = 1000; // the simulated agent's pace: about this long per phase
  int timeoutSeconds = 120;
  // "default"; "slow-party": bob's image pulls are slow; or one of the config's `scenarios`
  // (what the objects play in turn).
  std::string scenario = "default";
  std::string otlpEndpoint; // when set, every domain also exports traces to it
  std::string demoConfig;   // the demo's config file; empty: the one compiled in
};

// config/demo/demo.yaml as it was at build time.
const char* embeddedDemoConfig();

// Runs the demo; the process exit code.
int runDemo(const DemoOptions& options, std::ostream& out, std::ostream& err);

} // namespace kuscia_host
