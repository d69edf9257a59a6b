#include "plugin_host/instance.h"

#include <boost/asio/post.hpp>

#include <chrono>
#include <cstring>
#include <future>

#include "plugin_host/host_api.h"

namespace kuscia_host {
namespace {

constexpr std::array<const char*, PluginInstance::kCallbackCount> kCallbackNames = {
    "on_start", "on_stop", "on_event", "on_timer", "on_kube_result", "on_http_request"};

spdlog::level::level_enum toSpdlog(kh_log_level_t level) {
  switch (level) {
  case KH_LOG_TRACE: return spdlog::level::trace;
  case KH_LOG_DEBUG: return spdlog::level::debug;
  case KH_LOG_INFO: return spdlog::level::info;
  case KH_LOG_WARN: return spdlog::level::warn;
  default: return spdlog::level::err;
  }
}

} // namespace

HostMetrics::HostMetrics(MetricsRegistry& r)
    : pluginsLoaded(r.hostFamily(MetricKind::kGauge, "kuscia_host_plugins_loaded",
                                 "Plugin libraries currently loaded", {})),
      instances(r.hostFamily(MetricKind::kGauge, "kuscia_host_plugin_instances",
                             "Plugin instances by state", {"state"})),
      callbacks(r.hostFamily(MetricKind::kCounter, "kuscia_host_plugin_callbacks_total",
                             "Plugin callbacks run", {"plugin", "domain", "callback"})),
      callbackErrors(r.hostFamily(MetricKind::kCounter, "kuscia_host_plugin_callback_errors_total",
                                  "Plugin callbacks that returned an error or threw",
                                  {"plugin", "domain", "callback"})),
      callbackDuration(r.hostFamily(MetricKind::kHistogram,
                                    "kuscia_host_plugin_callback_duration_seconds",
                                    "Time spent in plugin callbacks", {"plugin", "callback"})),
      pluginCallErrors(
          r.hostFamily(MetricKind::kCounter, "kuscia_host_plugin_host_call_errors_total",
                       "Invalid calls from plugins into the host (ignored)", {"plugin", "call"})),
      eventsQueued(r.hostFamily(MetricKind::kGauge, "kuscia_host_plugin_events_queued",
                                "Events waiting for an instance's on_event (its backlog)",
                                {"plugin", "domain"})) {}

const char* toString(InstanceState s) {
  switch (s) {
  case InstanceState::kNew: return "new";
  case InstanceState::kCreated: return "created";
  case InstanceState::kRunning: return "running";
  case InstanceState::kStopped: return "stopped";
  case InstanceState::kDestroyed: return "destroyed";
  case InstanceState::kFailed: return "failed";
  case InstanceState::kDisabled: return "disabled";
  }
  return "?";
}

PluginInstance::PluginInstance(std::shared_ptr<PluginLibrary> library, InstanceOptions options,
                               HostServices services)
    : library_(std::move(library)), plugin_(library_->descriptor()), options_(std::move(options)),
      services_(services), pluginName_(library_->name()), id_(pluginName_ + "/" + options_.domain),
      logger_(services_.logs.logger(id_, options_.logLevel)),
      executor_(services_.runtime.makeSerialExecutor()),
      durationBounds_(services_.hostMetrics.callbackDuration->buckets()),
      metrics_(services_.metrics, *services_.hostMetrics.pluginCallErrors, pluginName_,
               options_.domain, &services_.clock),
      timers_(executor_,
              [this](uint64_t id, uint64_t tag) {
                if (plugin_.on_timer != nullptr)
                  invoke(kOnTimer, [&] { return plugin_.on_timer(instance_, id, tag); });
              }),
      kube_(services_.kube, options_.domain,
            PluginKube::Callbacks{
                [this](std::function<void()> fn) { boost::asio::post(executor_, std::move(fn)); },
                [this](const kh_event_t& ev) {
                  if (plugin_.on_event != nullptr)
                    invoke(kOnEvent, [&] { return plugin_.on_event(instance_, &ev); });
                },
                [this](const kh_kube_result_t& r) {
                  if (plugin_.on_kube_result != nullptr && instance_ != nullptr)
                    invoke(kOnKubeResult, [&] { return plugin_.on_kube_result(instance_, &r); });
                },
                [this](const char* call) { metrics_.countCallError(call); },
                [this](std::size_t queued) { queuedSeries_->set(static_cast<double>(queued)); }}),
      queuedSeries_(services_.hostMetrics.eventsQueued->series({pluginName_, options_.domain})) {
  for (int i = 0; i < kCallbackCount; ++i) {
    callbackSeries_[i] =
        services_.hostMetrics.callbacks->series({pluginName_, options_.domain, kCallbackNames[i]});
    errorSeries_[i] = services_.hostMetrics.callbackErrors->series(
        {pluginName_, options_.domain, kCallbackNames[i]});
    durationSeries_[i] =
        services_.hostMetrics.callbackDuration->series({pluginName_, kCallbackNames[i]});
  }
}

PluginInstance::~PluginInstance() {
  if (instance_ == nullptr) return;
  try {
    stop();
    destroy();
  } catch (const std::exception& e) {
    logger_->error("stopping {} at destruction failed: {}", id_, e.what());
  }
}

InstanceState PluginInstance::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

HealthStatus PluginInstance::health() const {
  std::lock_guard lock(mu_);
  switch (state_) {
  case InstanceState::kRunning:
    if (ready_) return {true, true, "ok"};
    return {false, true,
            "not ready: " + (readyReason_.empty() ? std::string("the plugin reported not ready")
                                                  : readyReason_)};
  case InstanceState::kDisabled: return {false, false, "disabled (required: false): " + reason_};
  case InstanceState::kFailed: return {false, true, "failed: " + reason_};
  default: return {false, true, toString(state_)};
  }
}

template <class Fn> kh_status_t PluginInstance::invoke(Callback which, Fn&& fn) {
  auto t0 = std::chrono::steady_clock::now();
  kh_status_t status = KH_ERR_INTERNAL;
  try {
    status = fn();
  } catch (const std::exception& e) {
    logger_->error("{} threw across the plugin ABI: {}", kCallbackNames[which], e.what());
  } catch (...) {
    logger_->error("{} threw across the plugin ABI", kCallbackNames[which]);
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  callbackSeries_[which]->add(1);
  durationSeries_[which]->observe(durationBounds_, secs);
  if (status != KH_OK) {
    errorSeries_[which]->add(1);
    logger_->debug("{} returned status {}", kCallbackNames[which], status);
  }
  return status;
}

template <class Fn> void PluginInstance::runOnExecutor(Fn&& fn) {
  if (!services_.runtime.running()) {
    fn();
    return;
  }
  std::promise<void> done;
  boost::asio::post(executor_, [&] {
    fn();
    done.set_value();
  });
  done.get_future().wait();
}

Result<void> PluginInstance::create() {
  char err[1024] = {0};
  kh_instance_t* inst = nullptr;
  creating_ = true;
  kube_.setCreating(true);
  try {
    inst =
        plugin_.on_create(hostApiTable(kube_.available()), ctx(), options_.domain.c_str(),
                          options_.configJson.c_str(), options_.configJson.size(), err, sizeof err);
  } catch (...) {
    std::snprintf(err, sizeof err, "on_create threw across the plugin ABI");
  }
  kube_.setCreating(false);
  creating_ = false;
  std::lock_guard lock(mu_);
  if (inst == nullptr) {
    state_ = InstanceState::kFailed;
    reason_ = std::string("create failed: ") +
              (err[0] != 0 ? err : "on_create returned NULL without a reason");
    return makeError("plugin " + pluginName_ + " (" + library_->path() + ") for domain " +
                     options_.domain + ": " + reason_);
  }
  instance_ = inst;
  state_ = InstanceState::kCreated;
  return {};
}

Result<void> PluginInstance::start() {
  {
    std::lock_guard lock(mu_);
    if (state_ != InstanceState::kCreated)
      return makeError(id_ + ": start in state " + toString(state_));
  }
  std::string failure;
  runOnExecutor([&] {
    char err[1024] = {0};
    kh_status_t s = invoke(kOnStart, [&] { return plugin_.on_start(instance_, err, sizeof err); });
    if (s != KH_OK)
      failure = std::string(err[0] != 0 ? err : "on_start failed") + " (status " +
                std::to_string(s) + ")";
  });
  std::lock_guard lock(mu_);
  if (!failure.empty()) {
    state_ = InstanceState::kFailed;
    reason_ = "start failed: " + failure;
    return makeError("plugin " + pluginName_ + " for domain " + options_.domain + ": " + reason_);
  }
  state_ = InstanceState::kRunning;
  if (!readySet_) ready_ = true;
  return {};
}

void PluginInstance::stop() {
  timers_.stopAll();
  kube_.stop();
  InstanceState prior = state();
  bool started = prior == InstanceState::kRunning || prior == InstanceState::kFailed;
  if (instance_ != nullptr && started) {
    runOnExecutor([this] {
      if (plugin_.on_stop != nullptr)
        invoke(kOnStop, [this] {
          plugin_.on_stop(instance_);
          return KH_OK;
        });
      kube_.failPending();
    });
  }
  std::lock_guard lock(mu_);
  if (state_ == InstanceState::kRunning) state_ = InstanceState::kStopped;
}

void PluginInstance::destroy() {
  if (instance_ == nullptr) return;
  try {
    plugin_.on_destroy(instance_);
  } catch (...) {
    logger_->error("on_destroy threw across the plugin ABI");
  }
  instance_ = nullptr;
  std::lock_guard lock(mu_);
  if (state_ != InstanceState::kFailed && state_ != InstanceState::kDisabled)
    state_ = InstanceState::kDestroyed;
}

void PluginInstance::disable(const std::string& reason) {
  std::lock_guard lock(mu_);
  state_ = InstanceState::kDisabled;
  reason_ = reason;
}

void PluginInstance::log(kh_log_level_t level, const char* msg, std::size_t len) {
  logger_->log(toSpdlog(level), "{}", std::string_view(msg, len));
}

bool PluginInstance::logEnabled(kh_log_level_t level) const {
  return logger_->should_log(toSpdlog(level));
}

kh_status_t PluginInstance::registerRoute(const char* prefix, std::string& err) {
  if (!creating_) {
    err = "route_register is only allowed in on_create";
    return KH_ERR_FAILED_PRECONDITION;
  }
  if (services_.routes == nullptr) {
    err = "route_register: this host serves no admin routes";
    return KH_ERR_UNAVAILABLE;
  }
  if (prefix == nullptr) {
    err = "route_register: path_prefix is NULL";
    return KH_ERR_INVALID_ARGUMENT;
  }
  if (auto r = services_.routes->add(prefix, this); !r) {
    err = "route_register: " + r.error();
    return KH_ERR_INVALID_ARGUMENT;
  }
  return KH_OK;
}

void PluginInstance::serveRoute(const RouteRequest& request,
                                std::function<void(RouteAnswer answer)> done) {
  auto onRequest = library_->onHttpRequest();
  if (state() != InstanceState::kRunning || onRequest == nullptr)
    return done({503, "application/json", R"({"message":"the plugin instance is not running"})"});
  boost::asio::post(executor_, [this, request, done = std::move(done), onRequest] {
    kh_http_request_t req{};
    req.struct_size = sizeof req;
    req.method = request.method.c_str();
    req.path = request.path.c_str();
    req.query = request.query.c_str();
    RouteResponse res;
    res.done = done; // http_defer takes it
    if (instance_ != nullptr && state() == InstanceState::kRunning)
      invoke(kOnHttpRequest, [&] { return onRequest(instance_, &req, res.handle()); });
    if (res.deferred) return; // answered later, through the handle http_defer gave
    if (!res.answered) {
      res.status = 500;
      res.contentType = "application/json";
      res.body = R"({"message":"the plugin did not answer"})";
    }
    done({res.status, std::move(res.contentType), std::move(res.body)});
  });
}

void PluginInstance::setReady(bool ready, const char* reason) {
  std::lock_guard lock(mu_);
  readySet_ = true;
  ready_ = ready;
  readyReason_ = reason != nullptr ? reason : "";
}

} // namespace kuscia_host
