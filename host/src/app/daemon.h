// Daemon: assembles the host from its config (runtime, metrics, health, admin server, plugin
// libraries and instances), starts it, and shuts it down in the one safe order: stop every
// instance, stop the runtime, destroy every instance, then unload the libraries.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "admin/admin_server.h"
#include "admin/tls_files.h"
#include "apiserver/server.h"
#include "common/result.h"
#include "config/config.h"
#include "kube/kube_client.h"
#include "logging/logging.h"
#include "metrics/registry.h"
#include "plugin_host/instance.h"
#include "plugin_host/kube_bridge.h"
#include "plugin_host/loader.h"
#include "runtime/clock.h"
#include "runtime/health.h"
#include "runtime/runtime.h"

namespace kuscia_host {

struct DaemonOptions {
  std::string adminListen;          // overrides config.adminListen when not empty
  kube::ReflectorOptions reflector; // list/watch timing (tests shorten the backoff)
};

class Daemon {
public:
  Daemon(HostConfig config, DaemonOptions options, LogManager& logs, const Clock& clock);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Loads and starts everything. A failing required plugin returns its error after undoing what
  // was started; a failing optional one only disables its instance.
  Result<void> start();
  // Idempotent; see the class comment for the order.
  void shutdown();
  // Takes SIGINT and SIGTERM over. Call it before start(): a signal during startup is then kept
  // for waitForSignal() (Asio queues it) instead of killing the process mid-start.
  void catchStopSignals();
  // Blocks until SIGTERM or SIGINT, then shuts down.
  void waitForSignal();

  std::optional<boost::asio::ip::tcp::endpoint> adminEndpoint() const { return adminEndpoint_; }
  // admin.metricsListen's bound address, when set.
  std::optional<boost::asio::ip::tcp::endpoint> metricsEndpoint() const { return metricsEndpoint_; }
  // The embedded API server, when the config asks for one (cluster.embedded).
  apiserver::ApiServer* embeddedApiServer() { return apiServer_.get(); }
  MetricsRegistry& metrics() { return metrics_; }
  // The cluster client, when a cluster is configured.
  kube::KubeClient* kube() { return kube_.get(); }
  HealthRegistry& health() { return health_; }
  const std::vector<std::unique_ptr<PluginInstance>>& instances() const { return instances_; }

private:
  // Loads (or finds) the library an entry names: the checks `check-config` runs too.
  Result<std::shared_ptr<PluginLibrary>> library(const PluginEntry& entry);
  Result<void> startEmbeddedApiServer();
  Result<void> connectCluster();
  // Loads and creates every instance; then starts the admin server; then the instances.
  Result<void> createInstances();
  Result<void> startAdmin();
  // admin.metricsListen, when set.
  Result<void> startMetricsListener();
  // The admin server's TLS context (nullptr: plain HTTP) and who may read it.
  Result<std::shared_ptr<boost::asio::ssl::context>> adminTls(const std::string& listen);
  std::shared_ptr<AdminAuth> adminAuth();
  Result<void> startInstances();
  // An instance failed with `error`: a required one fails the start (the error), an optional one
  // is disabled by `disable` and the host goes on.
  Result<void> tolerate(bool required, const std::string& error,
                        const std::function<void()>& disable);
  void updateInstanceGauges();
  // Mounts every prefix plugin instances registered on the admin server.
  void mountPluginRoutes();

  HostConfig config_;
  DaemonOptions options_;
  LogManager& logs_;
  const Clock& clock_;
  std::shared_ptr<spdlog::logger> logger_;
  MetricsRegistry metrics_;
  HostMetrics hostMetrics_;
  HealthRegistry health_;
  Runtime runtime_;
  AdminServer admin_;
  AdminServer metricsServer_;          // admin.metricsListen: /metrics alone, plain HTTP
  std::unique_ptr<TlsFiles> tlsFiles_; // admin.tls from files: renewals
  PluginRoutes routes_;
  std::unique_ptr<apiserver::ApiServer> apiServer_;
  std::unique_ptr<kube::KubeClient> kube_;
  std::unique_ptr<KubeClientBridge> kubeBridge_;
  PluginLoader loader_;
  std::map<std::string, std::shared_ptr<PluginLibrary>> libraries_;
  LibraryStates libraryStates_; // before instances_: destroyed after them
  std::vector<std::unique_ptr<PluginInstance>> instances_;
  std::optional<boost::asio::ip::tcp::endpoint> adminEndpoint_, metricsEndpoint_;
  bool shutDown_ = false;
  std::unique_ptr<boost::asio::signal_set> signals_; // after runtime_: destroyed before it
};

} // namespace kuscia_host
