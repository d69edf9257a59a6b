// kuscia-host command line: run, check-config, version.
#include <CLI/CLI.hpp>
#include <iostream>

#include "app/daemon.h"
#include "app/version.h"
#include "config/config.h"
#include "logging/logging.h"
#include "runtime/clock.h"

namespace {

using namespace kuscia_host;

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2; // bad command line or bad config

// Loads the config, printing every diagnostic; nullopt on error.
std::optional<HostConfig> loadOrReport(const std::string& path,
                                       const std::vector<std::string>& pluginDirs) {
  ConfigLoadOptions options;
  options.defaultPluginDirs.emplace_back(kDefaultPluginDir);
  for (const auto& d : pluginDirs) {
    if (!std::filesystem::path(d).is_absolute()) {
      std::cerr << "kuscia-host: --plugin-dir must be an absolute path: " << d << "\n";
      return std::nullopt;
    }
    options.extraPluginDirs.emplace_back(d);
  }
  auto result = loadHostConfig(path, options);
  for (const auto& e : result.errors)
    std::cerr << e.str() << "\n";
  if (!result.errors.empty())
    std::cerr << "kuscia-host: " << result.errors.size() << " error(s) in " << path << "\n";
  return result.config;
}

int runHost(const std::string& configPath, const std::vector<std::string>& pluginDirs,
            const std::string& adminListen) {
  auto config = loadOrReport(configPath, pluginDirs);
  if (!config) return kExitUsage;
  LogManager logs(config->logFormat == "json" ? LogFormat::kJson : LogFormat::kText,
                  parseLogLevel(config->logLevel).value_or(spdlog::level::info));
  auto log = logs.logger("host");
  if (config->cluster.source != ClusterConfig::Source::kNone)
    log->warn(
        "cluster access is not available in this build yet: plugins run without kube operations");
  SystemClock clock;
  Daemon daemon(std::move(*config), DaemonOptions{adminListen}, logs, clock);
  if (auto r = daemon.start(); !r) {
    log->error("{}", r.error());
    std::cerr << "kuscia-host: " << r.error() << "\n";
    return kExitFailure;
  }
  daemon.waitForSignal();
  return kExitOk;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "kuscia-host: task-startup observability for Kuscia deployments.\n"
      "Loads plugins (.so) through a stable C ABI and serves /livez, /readyz and /metrics."};
  app.set_version_flag("--version", std::string("kuscia-host ") + kVersion);
  app.require_subcommand(1);

  std::string configPath;
  std::vector<std::string> pluginDirs;
  std::string adminListen;

  auto* run = app.add_subcommand("run", "Run the host daemon until SIGTERM or SIGINT");
  run->add_option("-c,--config", configPath, "Host config file (YAML)")->required();
  run->add_option("--plugin-dir", pluginDirs,
                  "Extra plugin directory searched before pluginDirs (absolute; repeatable)");
  run->add_option("--admin-listen", adminListen,
                  "Override admin.listen (host:port; port 0 picks a free port)");

  auto* check = app.add_subcommand("check-config",
                                   "Validate a config file (and find its plugins) without running");
  check->add_option("-c,--config", configPath, "Host config file (YAML)")->required();
  check->add_option("--plugin-dir", pluginDirs,
                    "Extra plugin directory searched before pluginDirs (absolute; repeatable)");
  check->footer("Config keys:\n" + configReference());

  auto* version = app.add_subcommand("version", "Print the version and the plugin ABI version");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }

  if (*version) {
    std::cout << "kuscia-host " << kVersion << "\nplugin ABI " << kAbiVersion << "\n";
    return kExitOk;
  }
  if (*check) {
    auto config = loadOrReport(configPath, pluginDirs);
    if (!config) return kExitUsage;
    std::size_t n = 0;
    for (const auto& d : config->domains)
      n += d.plugins.size();
    std::cout << configPath << ": ok (" << config->domains.size() << " domain(s), " << n
              << " plugin instance(s), mode " << config->mode << ")\n";
    return kExitOk;
  }
  if (*run) return runHost(configPath, pluginDirs, adminListen);
  return kExitUsage;
}
