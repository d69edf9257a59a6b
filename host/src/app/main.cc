// kuscia-host command line: run, check-config, apiserver, demo, version, and the commands the
// plugins declare (app/plugin_commands.h).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstddef>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <unistd.h>

#include <boost/asio/signal_set.hpp>

#include "apiserver/server.h"
#include "app/cluster_reader.h"
#include "app/daemon.h"
#include "app/demo.h"
#include "app/exit_codes.h"
#include "app/plugin_checks.h"
#include "app/plugin_commands.h"
#include "app/plugin_search.h"
#include "common/install_dirs.h"
#include "common/version.h"
#include "config/config.h"
#include "kube/cluster_access.h"
#include "logging/logging.h"
#include "runtime/clock.h"
#include "runtime/runtime.h"

namespace {

using namespace kuscia_host;

// Loads the config, printing every diagnostic; nullopt on error.
std::optional<HostConfig> loadOrReport(const std::string& path,
                                       const std::vector<std::string>& pluginDirs) {
  auto options = pluginSearch(pluginDirs);
  if (!options) {
    std::cerr << "kuscia-host: " << options.error() << "\n";
    return std::nullopt;
  }
  auto result = loadHostConfig(path, *options);
  for (const auto& e : result.errors)
    std::cerr << e.str() << "\n";
  if (!result.errors.empty())
    std::cerr << "kuscia-host: " << result.errors.size() << " error(s) in " << path << "\n";
  // A kubeconfig the host could not use is a config error too, found before anything starts.
  if (result.config && result.config->cluster.source == ClusterConfig::Source::kKubeconfig) {
    if (auto access = kube::loadKubeconfig(result.config->cluster.kubeconfig); !access) {
      std::cerr << path << ": cluster.kubeconfig: " << access.error() << "\n";
      return std::nullopt;
    }
  }
  return result.config;
}

int runHost(const std::string& configPath, const std::vector<std::string>& pluginDirs,
            const std::string& adminListen) {
  auto config = loadOrReport(configPath, pluginDirs);
  if (!config) return kExitUsage;
  // --admin-listen may move the admin server off loopback: refused like the config would be.
  if (!adminListen.empty())
    if (auto problem = adminExposureProblem(adminListen, config->adminAccess); !problem.empty()) {
      std::cerr << "kuscia-host: --admin-listen: " << problem << "\n";
      return kExitUsage;
    }
  LogManager logs(config->logFormat == "json" ? LogFormat::kJson : LogFormat::kText,
                  parseLogLevel(config->logLevel).value_or(spdlog::level::info));
  auto log = logs.logger("host");
  SystemClock clock;
  Daemon daemon(std::move(*config), DaemonOptions{adminListen}, logs, clock);
  daemon.catchStopSignals(); // before start(): a signal during startup still stops it in order
  if (auto r = daemon.start(); !r) {
    log->error("{}", r.error());
    std::cerr << "kuscia-host: " << r.error() << "\n";
    return kExitFailure;
  }
  daemon.waitForSignal();
  return kExitOk;
}

int runApiServer(apiserver::ServerOptions options, const std::string& kubeconfigOut,
                 const std::string& auditLog) {
  LogManager logs(LogFormat::kText, spdlog::level::info);
  auto log = logs.logger("apiserver");
  // The audit log: one JSON line per resource request, as a Kubernetes audit event names it.
  std::ofstream audit;
  std::mutex auditMutex;
  if (!auditLog.empty()) {
    audit.open(auditLog, std::ios::app);
    if (!audit) {
      std::cerr << "kuscia-host: cannot write the audit log " << auditLog << "\n";
      return kExitFailure;
    }
    options.api.audit = [&](const apiserver::AuditRecord& a) {
      nlohmann::json line = {{"verb", a.verb},
                             {"objectRef",
                              {{"apiGroup", a.group},
                               {"resource", a.resource},
                               {"subresource", a.subresource},
                               {"namespace", a.namespaceName},
                               {"name", a.name}}},
                             {"responseStatus", {{"code", a.code}}},
                             {"userAgent", a.userAgent},
                             {"user", {{"username", a.user}}}};
      std::lock_guard lock(auditMutex);
      audit << line.dump() << std::endl;
    };
  }
  SystemClock clock;
  Runtime runtime(2);
  // Before the "listening" line, which tells a caller it may signal: one that arrives before the
  // wait below is queued instead of killing the process.
  boost::asio::signal_set signals(runtime.io(), SIGINT, SIGTERM);
  apiserver::ApiServer server(runtime.io(), clock, log, std::move(options));
  auto ep = server.start();
  if (!ep) {
    std::cerr << "kuscia-host: " << ep.error() << "\n";
    return kExitFailure;
  }
  if (!kubeconfigOut.empty()) {
    if (auto r = server.writeKubeconfig(kubeconfigOut); !r) {
      std::cerr << "kuscia-host: " << r.error() << "\n";
      return kExitFailure;
    }
  }
  runtime.start();
  std::cout << "apiserver listening on " << server.url() << std::endl;
  if (!kubeconfigOut.empty()) std::cout << "kubeconfig written to " << kubeconfigOut << std::endl;
  log->info("serving in memory: every object is lost when this process exits");
  std::promise<int> got;
  signals.async_wait(
      [&](const boost::system::error_code& ec, int sig) { got.set_value(ec ? 0 : sig); });
  int sig = got.get_future().get();
  log->info("received signal {}, stopping", sig);
  server.stop();
  runtime.stop();
  return kExitOk;
}

} // namespace

namespace {

// A subcommand: its CLI::App (set when added) and what it runs once parsed.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command addRun(CLI::App& app) {
  struct Options {
    std::string config, adminListen;
    std::vector<std::string> pluginDirs;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("run", "Run the host daemon until SIGTERM or SIGINT");
  cmd->add_option("-c,--config", o->config, "Host config file (YAML)")->required();
  cmd->add_option("--plugin-dir", o->pluginDirs,
                  "Extra plugin directory searched before pluginDirs (absolute; repeatable)");
  cmd->add_option("--admin-listen", o->adminListen,
                  "Override admin.listen (host:port; port 0 picks a free port)");
  return {cmd, [o] { return runHost(o->config, o->pluginDirs, o->adminListen); }};
}

int checkConfig(const std::string& configPath, const std::vector<std::string>& pluginDirs) {
  auto config = loadOrReport(configPath, pluginDirs);
  if (!config) return kExitUsage;
  // The plugins, through the loader `run` uses: what run refuses, check-config refuses.
  auto plugins = checkPlugins(*config);
  for (const auto& w : plugins.warnings)
    std::cerr << "warning: " << w.str() << "\n";
  for (const auto& e : plugins.errors)
    std::cerr << e.str() << "\n";
  if (!plugins.errors.empty()) {
    std::cerr << "kuscia-host: " << plugins.errors.size() << " error(s) in " << configPath << "\n";
    return kExitUsage;
  }
  std::size_t n = 0;
  for (const auto& d : config->domains)
    n += d.plugins.size();
  std::cout << configPath << ": ok (" << config->domains.size() << " domain(s), " << n
            << " plugin instance(s), mode " << config->mode << ")\n";
  return kExitOk;
}

Command addCheckConfig(CLI::App& app) {
  struct Options {
    std::string config;
    std::vector<std::string> pluginDirs;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("check-config",
                                 "Validate a config file (and find its plugins) without running");
  cmd->add_option("-c,--config", o->config, "Host config file (YAML)")->required();
  cmd->add_option("--plugin-dir", o->pluginDirs,
                  "Extra plugin directory searched before pluginDirs (absolute; repeatable)");
  cmd->footer("Config keys:\n" + configReference());
  return {cmd, [o] { return checkConfig(o->config, o->pluginDirs); }};
}

struct ApiServerCommandOptions {
  apiserver::ServerOptions api;
  std::string kubeconfigOut, auditLog, clientCaPath, tokenAuthFile;
  int bookmarkMs = 5000;
};

int apiServerCommand(ApiServerCommandOptions& o) {
  o.api.api.bookmarkInterval = std::chrono::milliseconds(o.bookmarkMs);
  if (!o.clientCaPath.empty()) {
    if (!o.api.tls) {
      std::cerr << "kuscia-host: --client-ca needs --tls\n";
      return kExitUsage;
    }
    std::ifstream in(o.clientCaPath);
    std::stringstream pem;
    pem << in.rdbuf();
    o.api.clientCaPem = pem.str();
    if (!in || o.api.clientCaPem.find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
      std::cerr << "kuscia-host: --client-ca " << o.clientCaPath
                << ": not a readable PEM certificate file\n";
      return kExitUsage;
    }
  }
  if (!o.tokenAuthFile.empty()) {
    std::ifstream in(o.tokenAuthFile);
    std::stringstream text;
    text << in.rdbuf();
    auto tokens = apiserver::parseTokenAuthFile(text.str());
    if (!in || !tokens) {
      std::cerr << "kuscia-host: --token-auth-file " << o.tokenAuthFile << ": "
                << (in ? tokens.error() : std::string("cannot read it")) << "\n";
      return kExitUsage;
    }
    o.api.api.tokens = std::move(*tokens);
  }
  return runApiServer(o.api, o.kubeconfigOut, o.auditLog);
}

Command addApiServer(CLI::App& app) {
  auto o = std::make_shared<ApiServerCommandOptions>();
  auto* cmd = app.add_subcommand(
      "apiserver",
      "Run the embedded Kubernetes-compatible API server alone (state in memory only)");
  cmd->add_option("--listen", o->api.listen, "host:port to listen on; port 0 picks a free port")
      ->capture_default_str();
  cmd->add_option("--kubeconfig-out", o->kubeconfigOut,
                  "Write a kubeconfig for clients to this file");
  cmd->add_option("--audit-log", o->auditLog,
                  "Append one JSON line per resource request (verb, objectRef, "
                  "responseStatus.code, userAgent, user.username) to this file");
  cmd->add_flag("--tls", o->api.tls,
                "Serve HTTPS with a CA and certificate generated at start; clients need the "
                "bearer token (both are in the kubeconfig)");
  cmd->add_option("--token", o->api.token,
                  "With --tls: the bearer token to require (default: random)");
  cmd->add_option("--client-ca", o->clientCaPath,
                  "With --tls: client certificates signed by this CA (PEM file) authenticate "
                  "too, without the token")
      ->check(CLI::ExistingFile);
  cmd->add_option("--token-auth-file", o->tokenAuthFile,
                  "Identities for TokenReview and bearer tokens, as kube-apiserver's: "
                  "token,user,uid,\"group1,group2\" per line; SubjectAccessReviews are answered "
                  "from the RBAC objects stored")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--fault-injection", o->api.faultInjection,
                "Serve /debug/faults/* for tests (drop watches, compact history, inject errors "
                "and latency)");
  cmd->add_option("--bookmark-interval-ms", o->bookmarkMs,
                  "Interval of BOOKMARK events on watches that ask for them")
      ->capture_default_str()
      ->check(CLI::Range(10, 3600000));
  cmd->add_option("--history", o->api.historyLimit,
                  "Watch events kept for resuming watches; older resourceVersions get 410 Expired")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000000));
  return {cmd, [o] { return apiServerCommand(*o); }};
}

Command addDemo(CLI::App& app) {
  auto demo = std::make_shared<DemoOptions>();
  auto* cmd = app.add_subcommand(
      "demo", "The whole product on one machine, as its config file says: an embedded cluster, "
              "the parties' domains and their plugins (a simulated agent among them); submits "
              "tasks and shows how each started");
  cmd->add_flag("--p2p", demo->p2p,
                "Two hosts, each with its own embedded API server (one per party), the task "
                "created in both");
  cmd->add_option("--tasks", demo->tasks, "Two-party tasks to submit")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_flag("--exit-when-done", demo->exitWhenDone,
                "Exit once every task is shown: ready, failed or stuck, each with its outcome "
                "(default: serve until Ctrl-C). Exit status 0: all ready; 3: some failed or "
                "stuck; 1: the time ran out");
  cmd->add_option("--output", demo->outputDir, "Write each task's document as DIR/<task>.json");
  cmd->add_option("--plugin-dir", demo->pluginDirs,
                  "Directory searched first for the plugins (absolute; repeatable)");
  cmd->add_option("--admin-listen", demo->adminListen,
                  "The admin server (the plugins' web page and APIs); with --p2p the second host "
                  "uses the next port")
      ->capture_default_str();
  cmd->add_option("--work-dir", demo->workDir,
                  "Where the kubeconfigs and the log go (default /tmp/kuscia-host-demo-<uid>)");
  cmd->add_option("--phase-millis", demo->phaseMillis,
                  "The simulated agent's pace: about this long per startup phase")
      ->capture_default_str()
      ->check(CLI::Range(0, 60000));
  cmd->add_option("--timeout", demo->timeoutSeconds, "Give up waiting after this many seconds")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  cmd->add_option("--scenario", demo->scenario,
                  "default; slow-party: bob's image pulls take eight phases, so the summary "
                  "blames bob's pulling; slow-reservation: bob's pods take eight phases to "
                  "reserve, and every party waits for them; or a scenario of the demo's config "
                  "(the built-in one's: "
                  "image-missing, oom, crash, peer-network or unschedulable, every task's bob "
                  "pod plays that failure and the summary says why the task failed or is "
                  "stuck; route-down: the route to bob is down and each task fails at its "
                  "pre-check; mixed: some of those beside normal tasks)")
      ->capture_default_str();
  cmd->add_option(
      "--otlp-endpoint", demo->otlpEndpoint,
      "Also send every task's startup as a trace to this OTLP/HTTP receiver "
      "(http(s)://host:port, e.g. an OpenTelemetry Collector's :4318), as the config file's "
      "`traces` text says");
  cmd->add_option("--demo-config", demo->demoConfig,
                  "The demo's config file: its hosts' plugins, its parties, the objects it "
                  "submits (default: config/demo/demo.yaml, compiled in)");
  return {cmd, [demo] {
            for (const auto& d : demo->pluginDirs)
              if (!std::filesystem::path(d).is_absolute()) {
                std::cerr << "kuscia-host: --plugin-dir must be an absolute path: " << d << "\n";
                return kExitUsage;
              }
            return runDemo(*demo, std::cout, std::cerr);
          }};
}

// The process's allocator: jemalloc (linked, as the packages build it, or preloaded) answers its
// mallctl("version"); anything else is the system's.
std::string allocatorName() {
  using Mallctl = int (*)(const char*, void*, std::size_t*, void*, std::size_t);
  auto* mallctl = reinterpret_cast<Mallctl>(dlsym(RTLD_DEFAULT, "mallctl"));
  if (mallctl == nullptr) return "system malloc";
  const char* version = nullptr;
  std::size_t size = sizeof version;
  if (mallctl("version", static_cast<void*>(&version), &size, nullptr, 0) != 0 ||
      version == nullptr)
    return "jemalloc";
  return std::string("jemalloc ") + version;
}

Command addVersion(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("version", "Print the version, the plugin ABI version, the default plugin "
                                    "directory and the allocator");
  return {cmd, [] {
            std::cout << "kuscia-host " << kVersion << "\nplugin ABI " << kAbiVersion
                      << "\nplugin directory " << installedPluginDir().string() << "\nallocator "
                      << allocatorName() << "\n";
            return kExitOk;
          }};
}

// A command that is not the host's own: run from the plugin that declares it, if one does.
// Otherwise nullopt, and the help lists the plugins' commands.
std::optional<int> runDeclaredCommand(int argc, char** argv, const std::vector<Command>& own) {
  if (argc < 2) return std::nullopt;
  std::vector<std::string> args(argv + 1, argv + argc);
  auto isOwn = [&](const std::string& name) {
    return std::any_of(own.begin(), own.end(),
                       [&](const Command& c) { return c.app->get_name() == name; });
  };
  if (args[0] == "--help" || args[0] == "-h") {
    if (auto dirs = takeCommandPluginDirs(args))
      own.front().app->get_parent()->footer("\n" + pluginCommandsHelp(findPluginCommands(*dirs)));
    return std::nullopt;
  }
  if (args[0].empty() || args[0][0] == '-' || isOwn(args[0])) return std::nullopt;
  auto dirs = takeCommandPluginDirs(args);
  if (!dirs) {
    std::cerr << "kuscia-host: " << dirs.error() << "\n";
    return kExitUsage;
  }
  if (auto command = findPluginCommand(args[0], *dirs))
    return runPluginCommand(*command, args, std::cout, std::cerr, ::isatty(STDOUT_FILENO) != 0);
  return std::nullopt;
}

int runMain(int argc, char** argv) {
  CLI::App app{
      "kuscia-host: task-startup observability for Kuscia deployments.\n"
      "Loads plugins (.so) through a stable C ABI and serves /livez, /readyz and /metrics."};
  app.set_version_flag("--version", std::string("kuscia-host ") + kVersion);
  app.require_subcommand(1);
  const std::vector<Command> commands = {addRun(app), addCheckConfig(app), addApiServer(app),
                                         addDemo(app), addVersion(app)};
  if (auto code = runDeclaredCommand(argc, argv, commands)) return *code;
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
  for (const auto& c : commands)
    if (c.app->parsed()) return c.run();
  return kExitUsage;
}

} // namespace

int main(int argc, char** argv) {
  try {
    return runMain(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "kuscia-host: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "kuscia-host: unknown error\n";
  }
  return kExitFailure;
}
