// PluginInstance: one (plugin, domain) pair. Owns the host side of the ABI for that instance:
// the kh_host_ctx_t, its serial executor, its timers, its logger and its metrics. Every call
// into the plugin goes through run(), which is serialised on the executor and accounted for
// (callback count, errors, duration).
#pragma once

#include <kuscia_host/abi.h>

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <spdlog/logger.h>
#include <string>
#include <vector>

#include "admin/health.h"
#include "common/result.h"
#include "kube/kube_client.h"
#include "logging/logging.h"
#include "metrics/registry.h"
#include "plugin/loader.h"
#include "runtime/clock.h"
#include "runtime/runtime.h"

namespace kuscia_host {

struct HostApi;

// The host's own metric families that instances update.
struct HostMetrics {
  explicit HostMetrics(MetricsRegistry& registry);
  MetricFamily* pluginsLoaded;
  MetricFamily* instances;
  MetricFamily* callbacks;
  MetricFamily* callbackErrors;
  MetricFamily* callbackDuration;
  MetricFamily* pluginCallErrors;
};

// What an instance needs from the host; all outlive the instance.
struct HostServices {
  Runtime& runtime;
  MetricsRegistry& metrics;
  HostMetrics& hostMetrics;
  LogManager& logs;
  const Clock& clock;
  kube::KubeClient* kube = nullptr; // null: no cluster configured
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

class PluginInstance {
public:
  enum Callback { kOnStart, kOnStop, kOnEvent, kOnTimer, kOnKubeResult, kCallbackCount };

  PluginInstance(std::shared_ptr<PluginLibrary> library, InstanceOptions options,
                 HostServices services);
  ~PluginInstance();
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
  std::size_t activeTimers() const;

  // --- host side of the ABI (called by the trampolines in host_api.cc) ---
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
  kh_status_t registerMetric(const kh_metric_desc_t* desc, kh_metric_t** out, std::string& err);
  kh_status_t startTimer(uint64_t delayMs, uint64_t periodMs, uint64_t tag, uint64_t* outId,
                         std::string& err);
  kh_status_t cancelTimer(uint64_t id);
  void setReady(bool ready, const char* reason);
  void countPluginCallError(const char* what);
  kh_status_t subscribe(const kh_subscription_t* sub, uint64_t* outId, std::string& err);
  kh_status_t cacheGet(uint64_t subscription, const char* key, kh_object_visitor_t visitor,
                       void* user);
  kh_status_t cacheList(uint64_t subscription, const char* selector, kh_object_visitor_t visitor,
                        void* user);
  kh_status_t kubeRequest(const kh_kube_request_t* req, uint64_t* outId, std::string& err);
  // Kube requests sent and not yet completed.
  std::size_t pendingKubeRequests() const;

private:
  friend struct HostApi;
  struct Timer;
  struct Metric;

  // Runs a plugin callback on the executor with accounting. Must be called on the executor.
  template <class Fn> kh_status_t invoke(Callback which, Fn&& fn);
  void armTimer(const std::shared_ptr<Timer>& t);
  bool ownsSubscription(uint64_t id) const;
  void deliver(const kube::Subscription& sub, kube::ChangeType type, kube::RecordPtr record);
  void completeRequest(uint64_t id, const kube::KubeWriteResult& result);
  // Completes every pending kube request with http_code 0. On the executor.
  void failPendingRequests();

  std::shared_ptr<PluginLibrary> library_;
  const kh_plugin_v1_t& plugin_;
  InstanceOptions options_;
  HostServices services_;
  std::string pluginName_;
  std::string id_;
  std::shared_ptr<spdlog::logger> logger_;
  SerialExecutor executor_;
  kh_instance_t* instance_ = nullptr;

  mutable std::mutex mu_;
  InstanceState state_ = InstanceState::kNew;
  std::string reason_;
  bool ready_ = false;
  bool readySet_ = false;
  std::string readyReason_;
  std::atomic<bool> stopping_{false};
  uint64_t nextTimerId_ = 0;
  std::map<uint64_t, std::shared_ptr<Timer>> timers_;
  std::vector<std::unique_ptr<Metric>> metrics_;
  bool creating_ = false;
  std::vector<uint64_t> subscriptions_;
  uint64_t nextRequestId_ = 0;
  std::map<uint64_t, uint64_t> pendingRequests_; // request id -> user tag

  std::array<MetricSeries*, kCallbackCount> callbackSeries_{};
  std::array<MetricSeries*, kCallbackCount> errorSeries_{};
  std::array<MetricSeries*, kCallbackCount> durationSeries_{};
  std::vector<double> durationBounds_;
};

// The host services table handed to every plugin; the kube operations are NULL when no cluster
// is configured.
const kh_host_api_v1_t* hostApiTable(bool withKube);

} // namespace kuscia_host
