// What `check-config` verifies about the plugins a valid config names, with the very loader
// `run` uses: each file passes the permission checks, loads, speaks a compatible ABI and carries
// the configured name. A required plugin that fails is an error; an optional one a warning, since
// `run` would only disable its instance.
#pragma once

#include <vector>

#include "config/config.h"

namespace kuscia_host {

struct PluginCheckResult {
  std::vector<ConfigDiagnostic> errors;
  std::vector<ConfigDiagnostic> warnings;
};

PluginCheckResult checkPlugins(const HostConfig& config);

} // namespace kuscia_host
