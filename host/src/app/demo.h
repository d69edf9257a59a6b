// `kuscia-host demo`: the whole product on one machine. Starts the embedded API server and a host
// with domains alice and bob (centralized), or two hosts each with its own embedded API server
// (--p2p, the task created in both as interconnection would), configured by the demo's config
// file (config/demo/demo.yaml, compiled in; its host texts are read by the same loader as `run`)
// that enables sim-agent and the timeline plugins; submits two-party tasks; shows progress while
// they start; prints each task's timeline (a table and a Gantt chart); then keeps serving
// (kubectl, the web page, the timeline API) until Ctrl-C, or exits when done.
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
  std::string outputDir;               // each task's timeline as <task>.json, when set
  std::vector<std::string> pluginDirs; // searched first (absolute)
  std::string adminListen = defaults::kAdminListen;
  std::string workDir;    // kubeconfigs and the log; default /tmp/kuscia-host-demo-<uid>
  int phaseMillis = 1000; // the simulated agent's pace: about this long per phase
  int timeoutSeconds = 120;
  std::string scenario = "default"; // or "slow-party": bob's image pulls are slow
  std::string otlpEndpoint;         // when set, every domain also runs otel-export to it
  std::string demoConfig;           // the demo's config file; empty: the one compiled in
};

// config/demo/demo.yaml as it was at build time.
const char* embeddedDemoConfig();

// Runs the demo; the process exit code.
int runDemo(const DemoOptions& options, std::ostream& out, std::ostream& err);

} // namespace kuscia_host
