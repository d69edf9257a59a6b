// PluginInstance: one (plugin, domain) pair and its lifecycle (create, start, stop, destroy).
// Every call into the plugin runs on the instance's serial executor through invoke(), which
// accounts for it (callback count, errors, duration). The host side of the ABI is split by
// concern: host_api.cc (the C table), plugin_metrics (metrics), timers (timers), plugin_kube
// (subscriptions, cache, writes, through a KubeBridge).
#pragma once

#include <kuscia_host/abi.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <spdlog/logger.h>
#include <string>

#include "common/result.h"
#include "logging/logging.h"
#include "metrics/registry.h"
#include "plugin_host/kube_bridge.h"
#include "plugin_host/library_states.h"
#include "plugin_host/loader.h"
#include "plugin_host/plugin_kube.h"
#include "plugin_host/plugin_metrics.h"
#include "plugin_host/routes.h"
#include "plugin_host/timers.h"
#include "runtime/clock.h"
#include "runtime/health.h"
#include "runtime/runtime.h"

namespace kuscia_host {

// The host's own metric families that instances update.
struct HostMetrics {
  explicit HostMetrics(MetricsRegistry& registry);
  MetricFamily* pluginsLoaded;
  MetricFamily* instances;
  MetricFamily* callbacks;
  MetricFamily* callbackErrors;
  MetricFamily* callbackDuration;
  MetricFamily* pluginCallErrors;
  MetricFamily* eventsQueued;
};

// What an instance needs from the host; all outlive the instance.
struct HostServices {
  Runtime& runtime;
  MetricsRegistry& metrics;
  HostMetrics& hostMetrics;
  LogManager& logs;
  const Clock& clock;
  KubeBridge* kube = nullptr;             // null: no cluster configured
  PluginRoutes* routes = nullptr;         // null: route_register fails (no admin server)
  LibraryStates* libraryStates = nullptr; // null: library_state gives none
};

struct InstanceOptions {
  std::string domain;
  std::string mode = "centralized";
  std::string configJson = "{}";
  bool required = true;
  std::optional<spdlog::level::level_enum> logLevel;
};

enum class InstanceState { kNew, kCreated, kRunning, kStopped, kDestroyed, kFailed, kDisabled };
const char* toString(InstanceState s);

class PluginInstance final : public RouteServer {
public:
  enum Callback {
    kOnStart,
    kOnStop,
    kOnEvent,
    kOnTimer,
    kOnKubeResult,
    kOnHttpRequest,
    kCallbackCount
  };

  PluginInstance(std::shared_ptr<PluginLibrary> library, InstanceOptions options,
                 HostServices services);
  ~PluginInstance() override;
  PluginInstance(const PluginInstance&) = delete;
  PluginInstance& operator=(const PluginInstance&) = delete;

  // on_create, on the calling thread.
  Result<void> create();
  // on_start on the executor; waits for it. The runtime must be running.
  Result<void> start();
  // Cancels timers, then on_stop on the executor; waits for it. No callback runs afterwards.
  void stop();
  // on_destroy on the calling thread. The runtime must no longer run this instance's handlers.
  void destroy();
  // Marks a failed optional instance as disabled; /readyz shows the reason.
  void disable(const std::string& reason);

  const std::string& id() const { return id_; } // "<plugin>/<domain>"
  const std::string& pluginName() const { return pluginName_; }
  const std::string& domain() const { return options_.domain; }
  bool required() const { return options_.required; }
  InstanceState state() const;
  HealthStatus health() const;
  std::size_t activeTimers() const { return timers_.active(); }
  // Kube requests sent and not yet completed.
  std::size_t pendingKubeRequests() const { return kube_.pending(); }

  // --- the host side of the ABI (host_api.cc) ---
  static PluginInstance* fromCtx(kh_host_ctx_t* ctx) {
    return reinterpret_cast<PluginInstance*>(ctx);
  }
  kh_host_ctx_t* ctx() { return reinterpret_cast<kh_host_ctx_t*>(this); }
  void log(kh_log_level_t level, const char* msg, std::size_t len);
  bool logEnabled(kh_log_level_t level) const;
  int64_t wallTimeNanos() const { return services_.clock.wallNanos(); }
  int64_t monotonicNanos() const { return services_.clock.monotonicNanos(); }
  const char* domainCStr() const { return options_.domain.c_str(); }
  const char* modeCStr() const { return options_.mode.c_str(); }
  void setReady(bool ready, const char* reason);
  PluginMetrics& metrics() { return metrics_; }
  InstanceTimers& timers() { return timers_; }
  PluginKube& kube() { return kube_; }
  // library_state: the state this host's instances of the library share (LibraryStates).
  void* libraryState(LibraryStates::Make make, LibraryStates::Destroy destroy) {
    return services_.libraryStates != nullptr
               ? services_.libraryStates->get(library_, make, destroy)
               : nullptr;
  }
  // route_register: only from on_create.
  kh_status_t registerRoute(const char* prefix, std::string& err);

  // --- RouteServer ---
  std::string routeOwner() const override { return id_; }
  std::string routePlugin() const override { return pluginName_; }
  void serveRoute(const RouteRequest& request,
                  std::function<void(RouteAnswer answer)> done) override;

private:
  // Runs a plugin callback with accounting. Must be called on the executor.
  template <class Fn> kh_status_t invoke(Callback which, Fn&& fn);
  // Runs fn on the executor and waits for it (or runs it here if the runtime is not running).
  template <class Fn> void runOnExecutor(Fn&& fn);

  std::shared_ptr<PluginLibrary> library_;
  const kh_plugin_v1_t& plugin_;
  InstanceOptions options_;
  HostServices services_;
  std::string pluginName_;
  std::string id_;
  std::shared_ptr<spdlog::logger> logger_;
  SerialExecutor executor_;
  kh_instance_t* instance_ = nullptr;
  std::atomic<bool> creating_{false};

  mutable std::mutex mu_;
  InstanceState state_ = InstanceState::kNew;
  std::string reason_;
  bool ready_ = false;
  bool readySet_ = false;
  std::string readyReason_;

  std::array<MetricSeries*, kCallbackCount> callbackSeries_{};
  std::array<MetricSeries*, kCallbackCount> errorSeries_{};
  std::array<MetricSeries*, kCallbackCount> durationSeries_{};
  std::vector<double> durationBounds_;

  PluginMetrics metrics_;
  InstanceTimers timers_;
  PluginKube kube_;
  MetricSeries* queuedSeries_; // kuscia_host_plugin_events_queued, set by kube_
};

} // namespace kuscia_host
