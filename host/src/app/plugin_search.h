// Where the commands look for plugins, one rule for `run`, `check-config` and `demo`: the
// --plugin-dir directories first, then the config file's pluginDirs or, when it has none, the
// packaged directory (and for the demo the plugins next to the binary too: a build or install
// tree), skipping those that do not exist.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "config/config.h"

namespace kuscia_host {

// `pluginDirs` must be absolute; `besideBinary` adds <dir of the binary>/../plugins.
Result<ConfigLoadOptions> pluginSearch(const std::vector<std::string>& pluginDirs,
                                       bool besideBinary = false);

} // namespace kuscia_host
