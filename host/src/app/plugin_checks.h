// What `check-config` and `run` verify about the plugins a valid config names, with the loader
// the daemon uses: each file passes the permission checks, loads, speaks a compatible ABI and
// carries the configured name, and (ABI 1.1 plugins) accepts its `config`, checked by the
// plugin's validate_config and reported at the key's line. A required plugin that fails is an
// error; an optional one a warning, since `run` would only disable its instance.
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
