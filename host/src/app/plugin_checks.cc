#include "app/plugin_checks.h"

#include <unistd.h>

#include <map>

#include "plugin/loader.h"

namespace kuscia_host {

PluginCheckResult checkPlugins(const HostConfig& config) {
  PluginCheckResult out;
  PluginLoader loader(LoaderOptions{::geteuid()});
  std::map<std::string, std::shared_ptr<PluginLibrary>> loaded; // path -> library
  for (const auto& domain : config.domains) {
    for (const auto& entry : domain.plugins) {
      auto lib = loader.load(entry.path, entry.name);
      if (lib) {
        loaded[entry.path] = lib.value();
        continue;
      }
      ConfigDiagnostic d{config.file, entry.line, entry.column, entry.keyPath + ".name",
                         lib.error()};
      if (entry.required) {
        out.errors.push_back(std::move(d));
      } else {
        d.message += " (required: false: run would disable this instance)";
        out.warnings.push_back(std::move(d));
      }
    }
  }
  return out;
}

} // namespace kuscia_host
