#include "app/plugin_checks.h"

#include <unistd.h>

#include <cstdio>
#include <map>
#include <optional>
#include <tuple>

#include "plugin_host/loader.h"

namespace kuscia_host {

namespace {

// The plugin's own verdict on its config (ABI 1.1 validate_config), located at the key.
std::optional<ConfigDiagnostic> validateConfig(const PluginLibrary& lib, const PluginEntry& entry) {
  auto validate = lib.validateConfig();
  if (validate == nullptr) return std::nullopt;
  char key[256] = {0};
  char err[1024] = {0};
  kh_status_t s = KH_OK;
  try {
    s = validate(entry.configJson.c_str(), entry.configJson.size(), key, sizeof key, err,
                 sizeof err);
  } catch (...) {
    s = KH_ERR_INTERNAL;
    std::snprintf(err, sizeof err, "validate_config threw across the plugin ABI");
  }
  if (s == KH_OK) return std::nullopt;
  ConfigDiagnostic d;
  d.keyPath = entry.keyPath + ".config";
  auto [line, column] = entry.configMark;
  if (auto it = entry.configKeyMarks.find(key);
      key[0] != '\0' && it != entry.configKeyMarks.end()) {
    d.keyPath += std::string(".") + key;
    std::tie(line, column) = it->second;
  } else if (line == 0) {
    std::tie(line, column) = std::make_pair(entry.line, entry.column);
  }
  d.line = line;
  d.column = column;
  d.message = "plugin " + entry.name + ": " + (err[0] != '\0' ? err : "invalid config");
  return d;
}

} // namespace

PluginCheckResult checkPlugins(const HostConfig& config) {
  PluginCheckResult out;
  PluginLoader loader(LoaderOptions{::geteuid()});
  std::map<std::string, std::shared_ptr<PluginLibrary>> loaded; // path -> library
  for (const auto& domain : config.domains) {
    for (const auto& entry : domain.plugins) {
      ConfigDiagnostic d;
      auto lib = loader.load(entry.path, entry.name);
      if (lib) {
        loaded[entry.path] = lib.value();
        auto problem = validateConfig(*lib.value(), entry);
        if (!problem) continue;
        d = std::move(*problem);
        d.file = config.file;
      } else {
        d = ConfigDiagnostic{config.file, entry.line, entry.column, entry.keyPath + ".name",
                             lib.error()};
      }
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
