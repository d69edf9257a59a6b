#include "app/plugin_search.h"

#include <filesystem>

#include "common/install_dirs.h"

namespace kuscia_host {

namespace fs = std::filesystem;

Result<ConfigLoadOptions> pluginSearch(const std::vector<std::string>& pluginDirs,
                                       bool besideBinary) {
  ConfigLoadOptions options;
  for (const auto& d : pluginDirs) {
    if (!fs::path(d).is_absolute()) return makeError("--plugin-dir must be an absolute path: " + d);
    options.extraPluginDirs.push_back(d);
  }
  if (besideBinary) {
    std::error_code ec;
    fs::path exe = fs::canonical("/proc/self/exe", ec);
    if (!ec) options.defaultPluginDirs.push_back((exe.parent_path().parent_path() / "plugins"));
  }
  options.defaultPluginDirs.push_back(installedPluginDir().string());
  return options;
}

} // namespace kuscia_host
