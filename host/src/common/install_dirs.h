// Installed locations that follow the installation prefix: found from the running binary's own
// path rather than compiled in, so that `cmake --install build --prefix P` and the packages
// (/usr) both find their plugins without configuration.
#pragma once

#include <filesystem>
#include <system_error>

#include "common/version.h"

namespace kuscia_host {

// The plugin directory of this installation: <dir of kuscia-host>/<kPluginDirFromBinDir>, or the
// configured prefix's when /proc/self/exe cannot be read.
inline std::filesystem::path installedPluginDir() {
  std::error_code ec;
  auto exe = std::filesystem::canonical("/proc/self/exe", ec);
  if (ec) return kConfiguredPluginDir;
  return (exe.parent_path() / kPluginDirFromBinDir).lexically_normal();
}

} // namespace kuscia_host
