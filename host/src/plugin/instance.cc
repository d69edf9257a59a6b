#include "plugin/instance.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstring>
#include <future>

namespace kuscia_host {
namespace {

constexpr std::array<const char*, PluginInstance::kCallbackCount> kCallbackNames = {
    "on_start", "on_stop", "on_event", "on_timer", "on_kube_result"};

void copyError(char* err, std::size_t len, const std::string& msg) {
  if (err == nullptr || len == 0) return;
  std::size_t n = std::min(len - 1, msg.size());
  std::memcpy(err, msg.data(), n);
  err[n] = '\0';
}

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
                       "Invalid calls from plugins into the host (ignored)", {"plugin", "call"})) {}

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

struct PluginInstance::Timer {
  Timer(const SerialExecutor& ex, uint64_t id_, uint64_t period, uint64_t tag_)
      : timer(ex), id(id_), periodMs(period), tag(tag_) {}
  boost::asio::steady_timer timer;
  uint64_t id;
  uint64_t periodMs;
  uint64_t tag;
  std::atomic<bool> cancelled{false};
};

struct PluginInstance::Metric {
  PluginInstance* owner;
  MetricFamily* family;
  std::size_t pluginLabels;
};

// The C entry points of the host services table. Each forwards to the instance behind ctx.
struct HostApi {
  static void log(kh_host_ctx_t* c, kh_log_level_t level, const char* msg, size_t len) {
    if (msg != nullptr) PluginInstance::fromCtx(c)->log(level, msg, len);
  }
  static int32_t logEnabled(kh_host_ctx_t* c, kh_log_level_t level) {
    return PluginInstance::fromCtx(c)->logEnabled(level) ? 1 : 0;
  }
  static int64_t wall(kh_host_ctx_t* c) { return PluginInstance::fromCtx(c)->wallTimeNanos(); }
  static int64_t mono(kh_host_ctx_t* c) { return PluginInstance::fromCtx(c)->monotonicNanos(); }
  static const char* domain(kh_host_ctx_t* c) { return PluginInstance::fromCtx(c)->domainCStr(); }
  static const char* mode(kh_host_ctx_t* c) { return PluginInstance::fromCtx(c)->modeCStr(); }
  static kh_status_t metricRegister(kh_host_ctx_t* c, const kh_metric_desc_t* d, kh_metric_t** out,
                                    char* err, size_t len) {
    std::string e;
    kh_status_t s = PluginInstance::fromCtx(c)->registerMetric(d, out, e);
    if (s != KH_OK) copyError(err, len, e);
    return s;
  }
  static void update(kh_metric_t* m, const char* const* values, size_t n, double v, int op) {
    auto* metric = reinterpret_cast<PluginInstance::Metric*>(m);
    if (metric == nullptr) return;
    static constexpr std::array<const char*, 3> kOps = {"metric_add", "metric_set",
                                                        "metric_observe"};
    MetricKind k = metric->family->kind();
    bool kindOk = (op == 0 && k != MetricKind::kHistogram) ||
                  (op == 1 && k == MetricKind::kGauge) || (op == 2 && k == MetricKind::kHistogram);
    if (!kindOk || n != metric->pluginLabels || (values == nullptr && n > 0) ||
        (op == 0 && k == MetricKind::kCounter && !(v >= 0))) {
      metric->owner->countPluginCallError(kOps[op]);
      return;
    }
    std::vector<std::string> labels;
    labels.reserve(n + 2);
    labels.emplace_back(metric->owner->pluginName());
    labels.emplace_back(metric->owner->domain());
    for (size_t i = 0; i < n; ++i)
      labels.emplace_back(values[i] != nullptr ? values[i] : "");
    MetricSeries* s = metric->family->series(labels);
    if (op == 0)
      s->add(v);
    else if (op == 1)
      s->set(v);
    else
      s->observe(metric->family->buckets(), v);
  }
  static void metricAdd(kh_metric_t* m, const char* const* values, size_t n, double v) {
    update(m, values, n, v, 0);
  }
  static void metricSet(kh_metric_t* m, const char* const* values, size_t n, double v) {
    update(m, values, n, v, 1);
  }
  static void metricObserve(kh_metric_t* m, const char* const* values, size_t n, double v) {
    update(m, values, n, v, 2);
  }
  static kh_status_t timerStart(kh_host_ctx_t* c, uint64_t delay, uint64_t period, uint64_t tag,
                                uint64_t* outId, char* err, size_t len) {
    std::string e;
    kh_status_t s = PluginInstance::fromCtx(c)->startTimer(delay, period, tag, outId, e);
    if (s != KH_OK) copyError(err, len, e);
    return s;
  }
  static kh_status_t timerCancel(kh_host_ctx_t* c, uint64_t id) {
    return PluginInstance::fromCtx(c)->cancelTimer(id);
  }
  static void setReady(kh_host_ctx_t* c, int32_t ready, const char* reason) {
    PluginInstance::fromCtx(c)->setReady(ready != 0, reason);
  }

  static kh_status_t subscribe(kh_host_ctx_t* c, const kh_subscription_t* sub, uint64_t* outId,
                               char* err, size_t len) {
    std::string e;
    kh_status_t s = PluginInstance::fromCtx(c)->subscribe(sub, outId, e);
    if (s != KH_OK) copyError(err, len, e);
    return s;
  }
  static kh_status_t cacheGet(kh_host_ctx_t* c, uint64_t sub, const char* key,
                              kh_object_visitor_t visitor, void* user) {
    return PluginInstance::fromCtx(c)->cacheGet(sub, key, visitor, user);
  }
  static kh_status_t cacheList(kh_host_ctx_t* c, uint64_t sub, const char* selector,
                               kh_object_visitor_t visitor, void* user) {
    return PluginInstance::fromCtx(c)->cacheList(sub, selector, visitor, user);
  }
  static kh_status_t kubeRequest(kh_host_ctx_t* c, const kh_kube_request_t* req, uint64_t* outId,
                                 char* err, size_t len) {
    std::string e;
    kh_status_t s = PluginInstance::fromCtx(c)->kubeRequest(req, outId, e);
    if (s != KH_OK) copyError(err, len, e);
    return s;
  }

  static kh_host_api_v1_t make() {
    kh_host_api_v1_t t{};
    t.struct_size = sizeof t;
    t.abi_major = KH_ABI_VERSION_MAJOR;
    t.abi_minor = KH_ABI_VERSION_MINOR;
    t.log = &log;
    t.log_enabled = &logEnabled;
    t.wall_time_ns = &wall;
    t.monotonic_time_ns = &mono;
    t.domain_id = &domain;
    t.deployment_mode = &mode;
    t.metric_register = &metricRegister;
    t.metric_add = &metricAdd;
    t.metric_set = &metricSet;
    t.metric_observe = &metricObserve;
    t.timer_start = &timerStart;
    t.timer_cancel = &timerCancel;
    t.set_ready = &setReady;
    t.subscribe = &subscribe;
    t.cache_get = &cacheGet;
    t.cache_list = &cacheList;
    t.kube_request = &kubeRequest;
    return t;
  }
};

const kh_host_api_v1_t* hostApiTable(bool withKube) {
  static const kh_host_api_v1_t full = HostApi::make();
  static const kh_host_api_v1_t noKube = [] {
    kh_host_api_v1_t t = HostApi::make();
    t.subscribe = nullptr;
    t.cache_get = nullptr;
    t.cache_list = nullptr;
    t.kube_request = nullptr;
    return t;
  }();
  return withKube ? &full : &noKube;
}

PluginInstance::PluginInstance(std::shared_ptr<PluginLibrary> library, InstanceOptions options,
                               HostServices services)
    : library_(std::move(library)), plugin_(library_->descriptor()), options_(std::move(options)),
      services_(services), pluginName_(library_->name()), id_(pluginName_ + "/" + options_.domain),
      logger_(services_.logs.logger(id_, options_.logLevel)),
      executor_(services_.runtime.makeSerialExecutor()),
      durationBounds_(services_.hostMetrics.callbackDuration->buckets()) {
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
  if (instance_ != nullptr) {
    stop();
    destroy();
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

std::size_t PluginInstance::activeTimers() const {
  std::lock_guard lock(mu_);
  return timers_.size();
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

Result<void> PluginInstance::create() {
  char err[1024] = {0};
  kh_instance_t* inst = nullptr;
  creating_ = true;
  try {
    inst =
        plugin_.on_create(hostApiTable(services_.kube != nullptr), ctx(), options_.domain.c_str(),
                          options_.configJson.c_str(), options_.configJson.size(), err, sizeof err);
  } catch (...) {
    std::snprintf(err, sizeof err, "on_create threw across the plugin ABI");
  }
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
  std::promise<std::string> done;
  boost::asio::post(executor_, [this, &done] {
    char err[1024] = {0};
    kh_status_t s = invoke(kOnStart, [&] { return plugin_.on_start(instance_, err, sizeof err); });
    done.set_value(s == KH_OK ? std::string()
                              : std::string(err[0] != 0 ? err : "on_start failed") + " (status " +
                                    std::to_string(s) + ")");
  });
  std::string failure = done.get_future().get();
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
  stopping_ = true;
  InstanceState prior;
  {
    std::lock_guard lock(mu_);
    for (auto& [id, t] : timers_) {
      t->cancelled = true;
      boost::asio::post(executor_, [t = t] { t->timer.cancel(); });
    }
    timers_.clear();
    prior = state_;
  }
  bool started = prior == InstanceState::kRunning || prior == InstanceState::kFailed;
  if (instance_ == nullptr || !started || prior == InstanceState::kStopped) {
    std::lock_guard lock(mu_);
    if (state_ == InstanceState::kRunning) state_ = InstanceState::kStopped;
    return;
  }
  auto callStop = [this] {
    if (plugin_.on_stop != nullptr)
      invoke(kOnStop, [this] {
        plugin_.on_stop(instance_);
        return KH_OK;
      });
    failPendingRequests();
  };
  if (services_.runtime.running()) {
    std::promise<void> done;
    boost::asio::post(executor_, [&] {
      callStop();
      done.set_value();
    });
    done.get_future().wait();
  } else {
    callStop();
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

void PluginInstance::countPluginCallError(const char* what) {
  services_.hostMetrics.pluginCallErrors->series({pluginName_, what})->add(1);
}

kh_status_t PluginInstance::registerMetric(const kh_metric_desc_t* d, kh_metric_t** out,
                                           std::string& err) {
  if (d == nullptr || out == nullptr || d->struct_size < sizeof(kh_metric_desc_t) ||
      d->name == nullptr) {
    err = "metric_register: descriptor is NULL, too small or has no name";
    return KH_ERR_INVALID_ARGUMENT;
  }
  MetricKind kind;
  switch (d->kind) {
  case KH_METRIC_COUNTER: kind = MetricKind::kCounter; break;
  case KH_METRIC_GAUGE: kind = MetricKind::kGauge; break;
  case KH_METRIC_HISTOGRAM: kind = MetricKind::kHistogram; break;
  default:
    err = "metric " + std::string(d->name) + ": unknown kind " + std::to_string(d->kind);
    return KH_ERR_INVALID_ARGUMENT;
  }
  std::vector<std::string> labels = {"plugin", "domain"};
  for (size_t i = 0; i < d->label_count; ++i) {
    std::string l = d->label_names[i] != nullptr ? d->label_names[i] : "";
    if (l == "plugin" || l == "domain") {
      err =
          "metric " + std::string(d->name) + ": the host adds the labels plugin and domain itself";
      return KH_ERR_INVALID_ARGUMENT;
    }
    labels.push_back(l);
  }
  std::vector<double> buckets;
  if (d->buckets != nullptr) buckets.assign(d->buckets, d->buckets + d->bucket_count);
  auto family =
      services_.metrics.family(kind, d->name, d->help != nullptr ? d->help : "", labels, buckets);
  if (!family) {
    err = family.error();
    return KH_ERR_INVALID_ARGUMENT;
  }
  std::lock_guard lock(mu_);
  metrics_.push_back(std::make_unique<Metric>(Metric{this, family.value(), d->label_count}));
  *out = reinterpret_cast<kh_metric_t*>(metrics_.back().get());
  return KH_OK;
}

void PluginInstance::armTimer(const std::shared_ptr<Timer>& t) {
  t->timer.async_wait([this, t](const boost::system::error_code& ec) {
    if (ec || t->cancelled || stopping_) return;
    if (plugin_.on_timer != nullptr)
      invoke(kOnTimer, [&] { return plugin_.on_timer(instance_, t->id, t->tag); });
    if (t->periodMs > 0 && !t->cancelled && !stopping_) {
      t->timer.expires_at(t->timer.expiry() + std::chrono::milliseconds(t->periodMs));
      armTimer(t);
    } else {
      std::lock_guard lock(mu_);
      timers_.erase(t->id);
    }
  });
}

kh_status_t PluginInstance::startTimer(uint64_t delayMs, uint64_t periodMs, uint64_t tag,
                                       uint64_t* outId, std::string& err) {
  if (outId == nullptr) {
    err = "timer_start: out_id is NULL";
    return KH_ERR_INVALID_ARGUMENT;
  }
  if (stopping_) {
    err = "timer_start: the instance is stopping";
    return KH_ERR_FAILED_PRECONDITION;
  }
  std::shared_ptr<Timer> t;
  {
    std::lock_guard lock(mu_);
    t = std::make_shared<Timer>(executor_, ++nextTimerId_, periodMs, tag);
    timers_[t->id] = t;
  }
  *outId = t->id;
  boost::asio::post(executor_, [this, t, delayMs] {
    if (t->cancelled || stopping_) return;
    t->timer.expires_after(std::chrono::milliseconds(delayMs));
    armTimer(t);
  });
  return KH_OK;
}

kh_status_t PluginInstance::cancelTimer(uint64_t id) {
  std::lock_guard lock(mu_);
  auto it = timers_.find(id);
  if (it == timers_.end()) return KH_ERR_NOT_FOUND;
  auto t = it->second;
  t->cancelled = true;
  boost::asio::post(executor_, [t] { t->timer.cancel(); });
  timers_.erase(it);
  return KH_OK;
}

void PluginInstance::setReady(bool ready, const char* reason) {
  std::lock_guard lock(mu_);
  readySet_ = true;
  ready_ = ready;
  readyReason_ = reason != nullptr ? reason : "";
}

// --- Kubernetes ----------------------------------------------------------------------------

kh_status_t PluginInstance::subscribe(const kh_subscription_t* sub, uint64_t* outId,
                                      std::string& err) {
  if (services_.kube == nullptr) {
    err = "subscribe: no cluster is configured (cluster.embedded, kubeconfig or inCluster)";
    return KH_ERR_UNAVAILABLE;
  }
  if (!creating_) {
    err = "subscribe is only allowed in on_create";
    return KH_ERR_FAILED_PRECONDITION;
  }
  if (sub == nullptr || outId == nullptr || sub->struct_size < sizeof(kh_subscription_t) ||
      sub->version == nullptr || sub->resource == nullptr ||
      (sub->field_count > 0 && sub->fields == nullptr)) {
    err = "subscribe: the subscription is NULL, too small, or lacks version, resource or fields";
    return KH_ERR_INVALID_ARGUMENT;
  }
  kube::SubscriptionSpec spec;
  spec.group = sub->group != nullptr ? sub->group : "";
  spec.version = sub->version;
  spec.resource = sub->resource;
  switch (sub->scope) {
  case KH_SCOPE_DOMAIN: spec.namespaceName = options_.domain; break;
  case KH_SCOPE_NAMESPACE:
    if (sub->namespace_name == nullptr || sub->namespace_name[0] == '\0') {
      err = "subscribe: KH_SCOPE_NAMESPACE needs namespace_name";
      return KH_ERR_INVALID_ARGUMENT;
    }
    spec.namespaceName = sub->namespace_name;
    break;
  case KH_SCOPE_ALL: break;
  default:
    err = "subscribe: unknown scope " + std::to_string(sub->scope);
    return KH_ERR_INVALID_ARGUMENT;
  }
  spec.labelSelector = sub->label_selector != nullptr ? sub->label_selector : "";
  for (std::size_t i = 0; i < sub->field_count; ++i) {
    if (sub->fields[i] == nullptr) {
      err = "subscribe: fields[" + std::to_string(i) + "] is NULL";
      return KH_ERR_INVALID_ARGUMENT;
    }
    spec.fields.emplace_back(sub->fields[i]);
  }
  spec.wantRaw = sub->want_raw != 0;
  auto id = services_.kube->subscribe(std::move(spec),
                                      [this](const kube::Subscription& s, kube::ChangeType t,
                                             kube::RecordPtr r) { deliver(s, t, std::move(r)); });
  if (!id) {
    err = "subscribe: " + id.error();
    return KH_ERR_INVALID_ARGUMENT;
  }
  std::lock_guard lock(mu_);
  subscriptions_.push_back(*id);
  *outId = *id;
  return KH_OK;
}

void PluginInstance::deliver(const kube::Subscription& sub, kube::ChangeType type,
                             kube::RecordPtr record) {
  if (stopping_ || plugin_.on_event == nullptr) return;
  std::string fields = record ? sub.fieldsJson(*record) : std::string();
  bool raw = sub.spec().wantRaw;
  boost::asio::post(executor_, [this, id = sub.id(), type, record = std::move(record),
                                fields = std::move(fields), raw] {
    if (stopping_) return;
    kh_event_t ev{};
    ev.struct_size = sizeof ev;
    ev.subscription_id = id;
    ev.type = static_cast<kh_event_type_t>(type);
    ev.key = record ? record->key().data() : "";
    ev.uid = record ? record->uid().data() : "";
    ev.resource_version = record ? record->resourceVersion().data() : "";
    ev.fields_json = fields.c_str();
    ev.fields_json_len = fields.size();
    if (raw && record) {
      ev.raw_json = record->raw().data();
      ev.raw_json_len = record->raw().size();
    }
    invoke(kOnEvent, [&] { return plugin_.on_event(instance_, &ev); });
  });
}

namespace {

// Calls the visitor with `r` as `sub` sees it; true when the visitor asks to stop.
bool visitRecord(const kube::Subscription& sub, const kube::Record& r, kh_object_visitor_t visitor,
                 void* user) {
  std::string fields = sub.fieldsJson(r);
  kh_object_t o{};
  o.struct_size = sizeof o;
  o.key = r.key().data();
  o.uid = r.uid().data();
  o.resource_version = r.resourceVersion().data();
  o.fields_json = fields.c_str();
  o.fields_json_len = fields.size();
  return visitor(user, &o) != 0;
}

} // namespace

bool PluginInstance::ownsSubscription(uint64_t id) const {
  std::lock_guard lock(mu_);
  return std::find(subscriptions_.begin(), subscriptions_.end(), id) != subscriptions_.end();
}

kh_status_t PluginInstance::cacheGet(uint64_t subscription, const char* key,
                                     kh_object_visitor_t visitor, void* user) {
  if (services_.kube == nullptr) return KH_ERR_UNAVAILABLE;
  if (key == nullptr || visitor == nullptr) {
    countPluginCallError("cache_get");
    return KH_ERR_INVALID_ARGUMENT;
  }
  if (!ownsSubscription(subscription)) return KH_ERR_NOT_FOUND;
  auto [informer, sub] = services_.kube->find(subscription);
  if (!informer) return KH_ERR_NOT_FOUND;
  kube::RecordPtr r = informer->get(key);
  if (!r || !sub->matches(*r)) return KH_ERR_NOT_FOUND;
  visitRecord(*sub, *r, visitor, user);
  return KH_OK;
}

kh_status_t PluginInstance::cacheList(uint64_t subscription, const char* selector,
                                      kh_object_visitor_t visitor, void* user) {
  if (services_.kube == nullptr) return KH_ERR_UNAVAILABLE;
  if (visitor == nullptr) {
    countPluginCallError("cache_list");
    return KH_ERR_INVALID_ARGUMENT;
  }
  if (!ownsSubscription(subscription)) return KH_ERR_NOT_FOUND;
  auto found = services_.kube->find(subscription);
  const auto& informer = found.first;
  const auto& sub = found.second;
  if (!informer) return KH_OK; // not started yet: nothing cached
  auto sel = apiserver::LabelSelector::parse(selector != nullptr ? selector : "");
  if (!sel) {
    countPluginCallError("cache_list");
    return KH_ERR_INVALID_ARGUMENT;
  }
  // Snapshot first: the visitor may call back into the host.
  std::vector<kube::RecordPtr> matching;
  bool labelsMissing = false;
  informer->forEach([&](const kube::RecordPtr& r) {
    if (!sub->matches(*r)) return;
    if (!sel->empty()) {
      if (!r->hasLabels()) {
        labelsMissing = true;
        return;
      }
      if (!sel->matches([&r](std::string_view k) { return r->label(k); })) return;
    }
    matching.push_back(r);
  });
  if (labelsMissing) {
    countPluginCallError("cache_list");
    return KH_ERR_FAILED_PRECONDITION;
  }
  for (const auto& r : matching)
    if (visitRecord(*sub, *r, visitor, user)) break;
  return KH_OK;
}

kh_status_t PluginInstance::kubeRequest(const kh_kube_request_t* req, uint64_t* outId,
                                        std::string& err) {
  if (services_.kube == nullptr) {
    err = "kube_request: no cluster is configured (cluster.embedded, kubeconfig or inCluster)";
    return KH_ERR_UNAVAILABLE;
  }
  if (stopping_) {
    err = "kube_request: the instance is stopping";
    return KH_ERR_FAILED_PRECONDITION;
  }
  if (req == nullptr || outId == nullptr || req->struct_size < sizeof(kh_kube_request_t)) {
    err = "kube_request: the request is NULL or too small";
    return KH_ERR_INVALID_ARGUMENT;
  }
  auto str = [](const char* p) { return p != nullptr ? std::string(p) : std::string(); };
  kube::KubeWrite w;
  switch (req->verb) {
  case KH_KUBE_PATCH: w.verb = kube::KubeWrite::Verb::kPatch; break;
  case KH_KUBE_CREATE: w.verb = kube::KubeWrite::Verb::kCreate; break;
  case KH_KUBE_DELETE: w.verb = kube::KubeWrite::Verb::kDelete; break;
  default:
    err = "kube_request: unknown verb " + std::to_string(req->verb);
    return KH_ERR_INVALID_ARGUMENT;
  }
  if (w.verb == kube::KubeWrite::Verb::kPatch) {
    if (req->patch_type == KH_PATCH_MERGE)
      w.patchType = kube::KubeWrite::PatchType::kMerge;
    else if (req->patch_type == KH_PATCH_JSON)
      w.patchType = kube::KubeWrite::PatchType::kJson;
    else {
      err = "kube_request: unknown patch type " + std::to_string(req->patch_type);
      return KH_ERR_INVALID_ARGUMENT;
    }
  }
  w.group = str(req->group);
  w.version = str(req->version);
  w.resource = str(req->resource);
  w.namespaceName = str(req->namespace_name);
  w.name = str(req->name);
  w.subresource = str(req->subresource);
  if (req->body != nullptr) w.body.assign(req->body, req->body_len);
  w.resourceVersion = str(req->resource_version);
  uint64_t id;
  {
    std::lock_guard lock(mu_);
    id = ++nextRequestId_;
    pendingRequests_[id] = req->user_tag;
  }
  auto sent = services_.kube->write(w, [this, id](kube::KubeWriteResult r) {
    boost::asio::post(executor_, [this, id, r = std::move(r)] { completeRequest(id, r); });
  });
  if (!sent) {
    std::lock_guard lock(mu_);
    pendingRequests_.erase(id);
    err = "kube_request: " + sent.error();
    return KH_ERR_INVALID_ARGUMENT;
  }
  *outId = id;
  return KH_OK;
}

void PluginInstance::completeRequest(uint64_t id, const kube::KubeWriteResult& result) {
  uint64_t tag;
  {
    std::lock_guard lock(mu_);
    auto it = pendingRequests_.find(id);
    if (it == pendingRequests_.end()) return; // already completed when the instance stopped
    tag = it->second;
    pendingRequests_.erase(it);
  }
  if (plugin_.on_kube_result == nullptr || instance_ == nullptr) return;
  kh_kube_result_t r{};
  r.struct_size = sizeof r;
  r.request_id = id;
  r.user_tag = tag;
  r.http_code = result.httpCode;
  r.body = result.body.c_str();
  r.body_len = result.body.size();
  r.message = result.message.c_str();
  invoke(kOnKubeResult, [&] { return plugin_.on_kube_result(instance_, &r); });
}

void PluginInstance::failPendingRequests() {
  std::map<uint64_t, uint64_t> pending;
  {
    std::lock_guard lock(mu_);
    pending.swap(pendingRequests_);
  }
  for (const auto& [id, tag] : pending) {
    if (plugin_.on_kube_result == nullptr) break;
    kh_kube_result_t r{};
    r.struct_size = sizeof r;
    r.request_id = id;
    r.user_tag = tag;
    r.http_code = 0;
    r.body = "";
    r.message = "the instance stopped before the request completed";
    invoke(kOnKubeResult, [&] { return plugin_.on_kube_result(instance_, &r); });
  }
}

std::size_t PluginInstance::pendingKubeRequests() const {
  std::lock_guard lock(mu_);
  return pendingRequests_.size();
}

} // namespace kuscia_host
