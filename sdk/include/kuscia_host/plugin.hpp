// kuscia-host C++ plugin wrapper (header-only, C++17, compiled into the plugin).
//
// A plugin derives from kuscia_host::sdk::Plugin, takes (Host, domain, configJson) in its
// constructor, overrides the on* hooks it needs and registers itself once with
// KH_PLUGIN(ClassName, "name", "version", "description"). The wrapper turns every C++
// exception into an error status at the ABI boundary: nothing thrown ever reaches the host.
//
// A class with `static void validateConfig(std::string_view configJson)` (throwing
// sdk::ConfigError, as its constructor would) gets ABI 1.1's validate_config, so that
// `kuscia-host check-config` reports its bad settings with file, line and key.
#ifndef KUSCIA_HOST_PLUGIN_HPP
#define KUSCIA_HOST_PLUGIN_HPP

#include <kuscia_host/abi.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace kuscia_host::sdk {

// Thrown by host calls that fail; carries the kh_status_t and the host's message.
class HostError : public std::runtime_error {
public:
  HostError(kh_status_t status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  kh_status_t status() const noexcept { return status_; }

private:
  kh_status_t status_;
};

// An error about one key of a plugin's config (sdk::ConfigError from config_reader.hpp is one):
// check-config points at that key's line.
class ConfigKeyError : public std::runtime_error {
public:
  ConfigKeyError(std::string key, const std::string& message)
      : std::runtime_error(message), key_(std::move(key)) {}
  const std::string& key() const noexcept { return key_; }

private:
  std::string key_;
};

enum class LogLevel : kh_log_level_t {
  kTrace = KH_LOG_TRACE,
  kDebug = KH_LOG_DEBUG,
  kInfo = KH_LOG_INFO,
  kWarn = KH_LOG_WARN,
  kError = KH_LOG_ERROR,
};

// A registered metric family; cheap to copy. Label values are given in declaration order.
class Metric {
public:
  Metric() = default;
  Metric(const kh_host_api_v1_t* api, kh_metric_t* metric) : api_(api), metric_(metric) {}

  void add(double v, std::initializer_list<const char*> labels = {}) const {
    if (metric_ != nullptr && api_->metric_add != nullptr)
      api_->metric_add(metric_, labels.begin(), labels.size(), v);
  }
  void set(double v, std::initializer_list<const char*> labels = {}) const {
    if (metric_ != nullptr && api_->metric_set != nullptr)
      api_->metric_set(metric_, labels.begin(), labels.size(), v);
  }
  void observe(double v, std::initializer_list<const char*> labels = {}) const {
    if (metric_ != nullptr && api_->metric_observe != nullptr)
      api_->metric_observe(metric_, labels.begin(), labels.size(), v);
  }
  // An exemplar's label, e.g. {"trace_id", "<32 hex digits>"}.
  struct ExemplarLabel {
    const char* name;
    const char* value;
  };
  // Observes v with an exemplar (ABI 1.6); a host without exemplars records the observation.
  void observe(double v, std::initializer_list<const char*> labels,
               std::initializer_list<ExemplarLabel> exemplar) const {
    if (metric_ == nullptr) return;
    if (!KH_HAS_FIELD(api_, kh_host_api_v1_t, metric_observe_exemplar) ||
        api_->metric_observe_exemplar == nullptr)
      return observe(v, labels);
    std::vector<const char*> names;
    std::vector<const char*> values;
    for (const auto& l : exemplar) {
      names.push_back(l.name);
      values.push_back(l.value);
    }
    api_->metric_observe_exemplar(metric_, labels.begin(), labels.size(), v, names.data(),
                                  values.data(), names.size());
  }

private:
  const kh_host_api_v1_t* api_ = nullptr;
  kh_metric_t* metric_ = nullptr;
};

// C++ view of a subscription (see kh_subscription_t).
struct Subscription {
  std::string group;
  std::string version;
  std::string resource;
  kh_scope_t scope = KH_SCOPE_DOMAIN;
  std::string namespaceName;
  std::string labelSelector;
  std::vector<std::string> fields;
  bool wantRaw = false;
};

// C++ view of a cached object (cacheGet, cacheList); the string_views are valid only during the
// visitor's call.
struct Object {
  std::string_view key;
  std::string_view uid;
  std::string_view resourceVersion;
  std::string_view fieldsJson;
};

// A request to one of the instance's admin routes (ABI 1.1); valid only during onHttpRequest.
struct HttpRequest {
  std::string_view method;
  std::string_view path;
  std::string_view query;
};

class DeferredResponse;

// The answer onHttpRequest fills in, or defers (defer()).
struct HttpResponse {
  int32_t status = 404;
  std::string contentType = "application/json";
  std::string body;

  // Since ABI 1.4: the answer is given later, through the returned handle, and this one is
  // ignored; onHttpRequest may return at once (a query then runs on a thread of the plugin's
  // own: callbacks must not block). Only during onHttpRequest, once. The handle is empty (false)
  // when the host predates 1.4 or outside onHttpRequest (an offline route): then answer here.
  DeferredResponse defer();

  // Set by the adapter around onHttpRequest (not for plugins).
  const kh_host_api_v1_t* hostApi = nullptr;
  kh_http_response_t* hostHandle = nullptr;
  bool deferred = false;
};

// A deferred answer (HttpResponse::defer). Answer it once, from any thread, before the
// instance is destroyed; one destroyed unanswered answers 500. Move-only.
class DeferredResponse {
public:
  DeferredResponse() = default;
  DeferredResponse(const kh_host_api_v1_t* api, kh_http_response_t* handle)
      : api_(api), handle_(handle) {}
  DeferredResponse(DeferredResponse&& o) noexcept
      : api_(o.api_), handle_(std::exchange(o.handle_, nullptr)) {}
  DeferredResponse& operator=(DeferredResponse&& o) noexcept {
    if (this != &o) {
      abandon();
      api_ = o.api_;
      handle_ = std::exchange(o.handle_, nullptr);
    }
    return *this;
  }
  DeferredResponse(const DeferredResponse&) = delete;
  DeferredResponse& operator=(const DeferredResponse&) = delete;
  ~DeferredResponse() { abandon(); }

  explicit operator bool() const { return handle_ != nullptr; }
  void respond(const HttpResponse& r) {
    if (handle_ == nullptr) return;
    api_->http_respond(std::exchange(handle_, nullptr), r.status, r.contentType.c_str(),
                       r.body.data(), r.body.size());
  }

private:
  void abandon() noexcept {
    if (handle_ == nullptr) return;
    static constexpr std::string_view kBody = R"({"message":"the plugin did not answer"})";
    api_->http_respond(std::exchange(handle_, nullptr), 500, "application/json", kBody.data(),
                       kBody.size());
  }

  const kh_host_api_v1_t* api_ = nullptr;
  kh_http_response_t* handle_ = nullptr;
};

inline DeferredResponse HttpResponse::defer() {
  if (hostApi == nullptr || hostHandle == nullptr || deferred ||
      !KH_HAS_FIELD(hostApi, kh_host_api_v1_t, http_defer) || hostApi->http_defer == nullptr)
    return {};
  kh_http_response_t* later = hostApi->http_defer(hostHandle);
  if (later == nullptr) return {};
  deferred = true;
  return {hostApi, later};
}

// C++ view of an event; the string_views are valid only during onEvent.
struct Event {
  uint64_t subscriptionId = 0;
  kh_event_type_t type = 0;
  std::string_view key;
  std::string_view uid;
  std::string_view resourceVersion;
  std::string_view fieldsJson;
  std::string_view rawJson;
};

// C++ view of a write (see kh_kube_request_t).
struct KubeRequest {
  kh_kube_verb_t verb = KH_KUBE_PATCH;
  std::string group;
  std::string version;
  std::string resource;
  std::string namespaceName;
  std::string name;
  std::string subresource;
  kh_patch_type_t patchType = KH_PATCH_MERGE;
  std::string body;
  std::string resourceVersion;
  uint64_t userTag = 0;
};

// C++ view of a completed write; the string_views are valid only during onKubeResult.
struct KubeResult {
  uint64_t requestId = 0;
  uint64_t userTag = 0;
  int32_t httpCode = 0;
  std::string_view body;
  std::string_view message;
};

// The host as a plugin instance sees it. Cheap to copy; valid until the instance is destroyed.
class Host {
public:
  Host(const kh_host_api_v1_t* api, kh_host_ctx_t* ctx) : api_(api), ctx_(ctx) {}

  const kh_host_api_v1_t* api() const { return api_; }
  kh_host_ctx_t* ctx() const { return ctx_; }

  void log(LogLevel level, std::string_view msg) const {
    if (api_->log != nullptr)
      api_->log(ctx_, static_cast<kh_log_level_t>(level), msg.data(), msg.size());
  }
  bool logEnabled(LogLevel level) const {
    return api_->log_enabled != nullptr &&
           api_->log_enabled(ctx_, static_cast<kh_log_level_t>(level)) != 0;
  }
  void trace(std::string_view m) const { log(LogLevel::kTrace, m); }
  void debug(std::string_view m) const { log(LogLevel::kDebug, m); }
  void info(std::string_view m) const { log(LogLevel::kInfo, m); }
  void warn(std::string_view m) const { log(LogLevel::kWarn, m); }
  void error(std::string_view m) const { log(LogLevel::kError, m); }

  int64_t wallTimeNanos() const { return api_->wall_time_ns ? api_->wall_time_ns(ctx_) : 0; }
  int64_t monotonicNanos() const {
    return api_->monotonic_time_ns ? api_->monotonic_time_ns(ctx_) : 0;
  }
  std::string_view domainId() const { return api_->domain_id ? api_->domain_id(ctx_) : ""; }
  std::string_view deploymentMode() const {
    return api_->deployment_mode ? api_->deployment_mode(ctx_) : "";
  }

  Metric counter(const std::string& name, const std::string& help,
                 const std::vector<std::string>& labels = {}) const {
    return registerMetric(KH_METRIC_COUNTER, name, help, labels, {});
  }
  Metric gauge(const std::string& name, const std::string& help,
               const std::vector<std::string>& labels = {}) const {
    return registerMetric(KH_METRIC_GAUGE, name, help, labels, {});
  }
  Metric histogram(const std::string& name, const std::string& help,
                   const std::vector<std::string>& labels = {},
                   const std::vector<double>& buckets = {}) const {
    return registerMetric(KH_METRIC_HISTOGRAM, name, help, labels, buckets);
  }

  // Returns the timer id; throws HostError when timers are unavailable.
  uint64_t startTimer(uint64_t delayMs, uint64_t periodMs = 0, uint64_t userTag = 0) const {
    if (api_->timer_start == nullptr) throw HostError(KH_ERR_UNAVAILABLE, "timers unavailable");
    uint64_t id = 0;
    char err[256] = {0};
    check(api_->timer_start(ctx_, delayMs, periodMs, userTag, &id, err, sizeof err), err);
    return id;
  }
  bool cancelTimer(uint64_t id) const {
    return api_->timer_cancel != nullptr && api_->timer_cancel(ctx_, id) == KH_OK;
  }
  void setReady(bool ready, const std::string& reason = "") const {
    if (api_->set_ready != nullptr) api_->set_ready(ctx_, ready ? 1 : 0, reason.c_str());
  }

  // Kubernetes access; kubeAvailable() is false when the host runs without a cluster.
  bool kubeAvailable() const { return api_->subscribe != nullptr && api_->kube_request != nullptr; }

  uint64_t subscribe(const Subscription& s) const {
    if (api_->subscribe == nullptr)
      throw HostError(KH_ERR_UNAVAILABLE,
                      "kubernetes subscriptions are not available in this host");
    std::vector<const char*> fields;
    fields.reserve(s.fields.size());
    for (const auto& f : s.fields)
      fields.push_back(f.c_str());
    kh_subscription_t sub{};
    sub.struct_size = sizeof sub;
    sub.group = s.group.c_str();
    sub.version = s.version.c_str();
    sub.resource = s.resource.c_str();
    sub.scope = s.scope;
    sub.namespace_name = s.namespaceName.c_str();
    sub.label_selector = s.labelSelector.c_str();
    sub.fields = fields.data();
    sub.field_count = fields.size();
    sub.want_raw = s.wantRaw ? 1 : 0;
    uint64_t id = 0;
    char err[512] = {0};
    check(api_->subscribe(ctx_, &sub, &id, err, sizeof err), err);
    return id;
  }

  uint64_t kubeRequest(const KubeRequest& r) const {
    if (api_->kube_request == nullptr)
      throw HostError(KH_ERR_UNAVAILABLE, "kubernetes writes are not available in this host");
    kh_kube_request_t req{};
    req.struct_size = sizeof req;
    req.verb = r.verb;
    req.group = r.group.c_str();
    req.version = r.version.c_str();
    req.resource = r.resource.c_str();
    req.namespace_name = r.namespaceName.c_str();
    req.name = r.name.c_str();
    req.subresource = r.subresource.c_str();
    req.patch_type = r.patchType;
    req.body = r.body.data();
    req.body_len = r.body.size();
    req.resource_version = r.resourceVersion.c_str();
    req.user_tag = r.userTag;
    uint64_t id = 0;
    char err[512] = {0};
    check(api_->kube_request(ctx_, &req, &id, err, sizeof err), err);
    return id;
  }

  // Calls fn(const Object&) for the cached object; false when absent. An exception thrown by fn
  // stops the call and is rethrown here, once the host has returned.
  template <class Fn>
  bool cacheGet(uint64_t subscriptionId, const std::string& key, Fn&& fn) const {
    if (api_->cache_get == nullptr) return false;
    Visit<Fn> v{fn, nullptr};
    kh_status_t s = api_->cache_get(ctx_, subscriptionId, key.c_str(), &Visit<Fn>::call, &v);
    if (v.error) std::rethrow_exception(v.error);
    return s == KH_OK;
  }
  // Calls fn(const Object&) for every cached object matching the label selector ("" = all);
  // fn may return true to stop early. Returns the host's status: KH_ERR_FAILED_PRECONDITION for a
  // selector on a subscription that caches no labels, KH_ERR_INVALID_ARGUMENT for a bad one,
  // KH_ERR_UNAVAILABLE without a cluster. An exception thrown by fn is rethrown here.
  template <class Fn>
  kh_status_t cacheList(uint64_t subscriptionId, const std::string& selector, Fn&& fn) const {
    if (api_->cache_list == nullptr) return KH_ERR_UNAVAILABLE;
    Visit<Fn> v{fn, nullptr};
    kh_status_t s = api_->cache_list(ctx_, subscriptionId, selector.c_str(), &Visit<Fn>::call, &v);
    if (v.error) std::rethrow_exception(v.error);
    return s;
  }

  // ABI 1.3: this subscription is done with the object `key` as of `resourceVersion` (the
  // version it last got): the host may forget it until it changes (kh_host_api_v1_t.
  // cache_release says exactly what follows). Returns KH_OK, KH_ERR_NOT_FOUND (not cached),
  // KH_ERR_STALE (the cache holds a newer version), or KH_ERR_UNAVAILABLE from a host older than
  // 1.3, which forgets nothing: there is nothing to do then.
  kh_status_t cacheRelease(uint64_t subscriptionId, const std::string& key,
                           const std::string& resourceVersion) const {
    if (!KH_HAS_FIELD(api_, kh_host_api_v1_t, cache_release) || api_->cache_release == nullptr)
      return KH_ERR_UNAVAILABLE;
    return api_->cache_release(ctx_, subscriptionId, key.c_str(), resourceVersion.c_str());
  }
  // The same, and when the version named is stale: reads the newer one and releases it if
  // `stillDone(const Object&)` says the subscription is still done with it.
  template <class Fn>
  kh_status_t cacheRelease(uint64_t subscriptionId, const std::string& key,
                           const std::string& resourceVersion, Fn&& stillDone) const {
    kh_status_t s = cacheRelease(subscriptionId, key, resourceVersion);
    for (int retry = 0; s == KH_ERR_STALE && retry < 3; ++retry) {
      std::string latest;
      bool found = cacheGet(subscriptionId, key, [&](const Object& o) {
        if (stillDone(o)) latest = std::string(o.resourceVersion);
      });
      if (!found) return KH_ERR_NOT_FOUND;
      if (latest.empty()) return KH_ERR_STALE; // not done any more: its event will tell
      s = cacheRelease(subscriptionId, key, latest);
    }
    return s;
  }

  // ABI 1.5: the T that the instances of this plugin's library share within this host (one per
  // type T), made at the first call and destroyed after the host's last instance of the library:
  // in centralized mode, what every domain's instance sees. Another host in the same process has
  // its own. Throws HostError where the host offers none (a fake host without it).
  template <class T> T& libraryState() const;

  // ABI 1.1: serves GET requests under `pathPrefix` through Plugin::onHttpRequest. Only from the
  // constructor (on_create). Throws HostError; KH_ERR_UNAVAILABLE from a 1.0 host.
  void registerRoute(const std::string& pathPrefix) const {
    if (!KH_HAS_FIELD(api_, kh_host_api_v1_t, route_register) || api_->route_register == nullptr)
      throw HostError(KH_ERR_UNAVAILABLE, "admin routes are not available in this host (ABI " +
                                              std::to_string(api_->abi_major) + "." +
                                              std::to_string(api_->abi_minor) + " < 1.1)");
    char err[512] = {0};
    check(api_->route_register(ctx_, pathPrefix.c_str(), err, sizeof err), err);
  }

private:
  // Adapts fn (taking const Object&, or const kh_object_t& as in SDK 1.0) to the C visitor, and
  // carries an exception out of it.
  template <class Fn> struct Visit {
    Fn& fn;
    std::exception_ptr error;
    static int32_t call(void* user, const kh_object_t* o) {
      auto* self = static_cast<Visit*>(user);
      try {
        if constexpr (std::is_invocable_v<Fn&, const kh_object_t&>) {
          using R = std::invoke_result_t<Fn&, const kh_object_t&>;
          if constexpr (std::is_convertible_v<R, bool>) return self->fn(*o) ? 1 : 0;
          self->fn(*o);
        } else {
          Object obj{o->key != nullptr ? o->key : "", o->uid != nullptr ? o->uid : "",
                     o->resource_version != nullptr ? o->resource_version : "",
                     std::string_view(o->fields_json != nullptr ? o->fields_json : "",
                                      o->fields_json != nullptr ? o->fields_json_len : 0)};
          using R = std::invoke_result_t<Fn&, const Object&>;
          if constexpr (std::is_convertible_v<R, bool>) return self->fn(obj) ? 1 : 0;
          self->fn(obj);
        }
        return 0;
      } catch (...) {
        self->error = std::current_exception(); // rethrown by the caller, after the host returns
        return 1;
      }
    }
  };

  static void check(kh_status_t status, const char* err) {
    if (status != KH_OK) throw HostError(status, err[0] != 0 ? err : "host call failed");
  }

  Metric registerMetric(kh_metric_kind_t kind, const std::string& name, const std::string& help,
                        const std::vector<std::string>& labels,
                        const std::vector<double>& buckets) const {
    if (api_->metric_register == nullptr) return {};
    std::vector<const char*> names;
    names.reserve(labels.size());
    for (const auto& l : labels)
      names.push_back(l.c_str());
    kh_metric_desc_t desc{};
    desc.struct_size = sizeof desc;
    desc.kind = kind;
    desc.name = name.c_str();
    desc.help = help.c_str();
    desc.label_names = names.data();
    desc.label_count = names.size();
    desc.buckets = buckets.empty() ? nullptr : buckets.data();
    desc.bucket_count = buckets.size();
    kh_metric_t* out = nullptr;
    char err[512] = {0};
    check(api_->metric_register(ctx_, &desc, &out, err, sizeof err), err);
    return Metric(api_, out);
  }

  const kh_host_api_v1_t* api_;
  kh_host_ctx_t* ctx_;
};

// Base class of a plugin instance. Hooks run on the instance's serial executor; an exception
// thrown from a hook is caught by the wrapper, logged through the host and reported as an error.
class Plugin {
public:
  explicit Plugin(Host host) : host_(host) {}
  virtual ~Plugin() = default;
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;

  virtual void onStart() {}
  virtual void onStop() {}
  virtual void onEvent(const Event& /*event*/) {}
  virtual void onTimer(uint64_t /*timerId*/, uint64_t /*userTag*/) {}
  virtual void onKubeResult(const KubeResult& /*result*/) {}
  // ABI 1.1: a request to a route registered with Host::registerRoute. Fill in `response`.
  virtual void onHttpRequest(const HttpRequest& /*request*/, HttpResponse& response) {
    response.status = 404;
    response.body = R"({"message":"not found"})";
  }

  const Host& host() const { return host_; }

private:
  Host host_;
};

namespace detail {

inline void copyError(char* err, size_t len, const char* what) {
  if (err == nullptr || len == 0) return;
  std::strncpy(err, what, len - 1);
  err[len - 1] = '\0';
}

inline kh_status_t failHook(Plugin* p, const char* hook, const char* what) {
  std::string msg = std::string(hook) + " failed: " + what;
  p->host().error(msg);
  return KH_ERR_INTERNAL;
}

template <class Fn> kh_status_t guard(kh_instance_t* instance, const char* hook, Fn&& fn) {
  auto* p = reinterpret_cast<Plugin*>(instance);
  try {
    fn(p);
    return KH_OK;
  } catch (const std::exception& e) {
    return failHook(p, hook, e.what());
  } catch (...) {
    return failHook(p, hook, "unknown exception");
  }
}

// Whether T declares `static void validateConfig(std::string_view)`.
template <class T, class = void> struct HasValidateConfig : std::false_type {};
template <class T>
struct HasValidateConfig<T, std::void_t<decltype(T::validateConfig(std::string_view()))>>
    : std::true_type {};

template <class T> struct Adapter {
  static kh_instance_t* create(const kh_host_api_v1_t* api, kh_host_ctx_t* ctx, const char* domain,
                               const char* config, size_t configLen, char* err, size_t errLen) {
    try {
      Plugin* p =
          new T(Host(api, ctx), std::string_view(domain), std::string_view(config, configLen));
      return reinterpret_cast<kh_instance_t*>(p);
    } catch (const std::exception& e) {
      copyError(err, errLen, e.what());
    } catch (...) {
      copyError(err, errLen, "unknown exception in plugin constructor");
    }
    return nullptr;
  }
  static kh_status_t start(kh_instance_t* instance, char* err, size_t errLen) {
    auto* p = reinterpret_cast<Plugin*>(instance);
    try {
      p->onStart();
      return KH_OK;
    } catch (const std::exception& e) {
      copyError(err, errLen, e.what());
    } catch (...) {
      copyError(err, errLen, "unknown exception in onStart");
    }
    return KH_ERR_INTERNAL;
  }
  static void stop(kh_instance_t* instance) {
    guard(instance, "onStop", [](Plugin* p) { p->onStop(); });
  }
  static void destroy(kh_instance_t* instance) {
    try {
      delete reinterpret_cast<Plugin*>(instance);
    } catch (...) { // a destructor that throws must not unwind into the host
    }
  }
  static kh_status_t event(kh_instance_t* instance, const kh_event_t* e) {
    return guard(instance, "onEvent", [e](Plugin* p) {
      Event ev;
      ev.subscriptionId = e->subscription_id;
      ev.type = e->type;
      ev.key = e->key != nullptr ? e->key : "";
      ev.uid = e->uid != nullptr ? e->uid : "";
      ev.resourceVersion = e->resource_version != nullptr ? e->resource_version : "";
      ev.fieldsJson = std::string_view(e->fields_json != nullptr ? e->fields_json : "",
                                       e->fields_json != nullptr ? e->fields_json_len : 0);
      if (e->raw_json != nullptr) ev.rawJson = std::string_view(e->raw_json, e->raw_json_len);
      p->onEvent(ev);
    });
  }
  static kh_status_t timer(kh_instance_t* instance, uint64_t id, uint64_t tag) {
    return guard(instance, "onTimer", [id, tag](Plugin* p) { p->onTimer(id, tag); });
  }
  static kh_status_t httpRequest(kh_instance_t* instance, const kh_http_request_t* q,
                                 kh_http_response_t* out) {
    auto* p = reinterpret_cast<Plugin*>(instance);
    const kh_host_api_v1_t* api = p->host().api();
    HttpResponse res;
    res.hostApi = api;
    res.hostHandle = out;
    kh_status_t s = guard(instance, "onHttpRequest", [q, &res](Plugin* pl) {
      HttpRequest req{q->method != nullptr ? q->method : "", q->path != nullptr ? q->path : "",
                      q->query != nullptr ? q->query : ""};
      pl->onHttpRequest(req, res);
    });
    if (res.deferred) return s; // the DeferredResponse answers (or answered already)
    if (s != KH_OK) {
      res.status = 500;
      res.contentType = "application/json";
      res.body = R"({"message":"the plugin failed to answer"})";
    }
    if (KH_HAS_FIELD(api, kh_host_api_v1_t, http_respond) && api->http_respond != nullptr)
      api->http_respond(out, res.status, res.contentType.c_str(), res.body.data(), res.body.size());
    return s;
  }
  static kh_status_t validateConfig(const char* config, size_t len, char* key, size_t keyLen,
                                    char* err, size_t errLen) {
    if constexpr (HasValidateConfig<T>::value) {
      try {
        T::validateConfig(std::string_view(config != nullptr ? config : "", len));
        return KH_OK;
      } catch (const std::exception& e) {
        copyError(err, errLen, e.what());
        copyError(key, keyLen, keyOf(e).c_str());
      } catch (...) {
        copyError(err, errLen, "unknown exception in validateConfig");
        copyError(key, keyLen, "");
      }
      return KH_ERR_INVALID_ARGUMENT;
    } else {
      (void)config, (void)len, (void)key, (void)keyLen, (void)err, (void)errLen;
      return KH_OK;
    }
  }
  static std::string keyOf(const std::exception& e) {
    const auto* k = dynamic_cast<const ConfigKeyError*>(&e);
    return k != nullptr ? k->key() : std::string();
  }

  static kh_status_t kubeResult(kh_instance_t* instance, const kh_kube_result_t* r) {
    return guard(instance, "onKubeResult", [r](Plugin* p) {
      KubeResult kr;
      kr.requestId = r->request_id;
      kr.userTag = r->user_tag;
      kr.httpCode = r->http_code;
      if (r->body != nullptr) kr.body = std::string_view(r->body, r->body_len);
      if (r->message != nullptr) kr.message = r->message;
      p->onKubeResult(kr);
    });
  }

  static const kh_plugin_v1_t* descriptor(const char* name, const char* version,
                                          const char* description) {
    static const kh_plugin_v1_t d = {
        sizeof(kh_plugin_v1_t),
        KH_ABI_VERSION_MAJOR,
        KH_ABI_VERSION_MINOR,
        name,
        version,
        description,
        &create,
        &start,
        &stop,
        &destroy,
        &event,
        &timer,
        &kubeResult,
        &httpRequest,
        HasValidateConfig<T>::value ? &validateConfig : nullptr,
    };
    return &d;
  }
};

// Since 1.2: the body of kh_offline_get_v1 for a class with
// `static void serveOffline(std::string_view configJson, const HttpRequest&, HttpResponse&)`.
template <class T>
kh_status_t offlineGet(const char* config, size_t len, const char* path, const char* query,
                       kh_offline_respond_fn respond, void* user, char* err, size_t errLen) {
  try {
    HttpRequest req{"GET", path != nullptr ? path : "", query != nullptr ? query : ""};
    HttpResponse res;
    T::serveOffline(std::string_view(config != nullptr ? config : "", len), req, res);
    respond(user, res.status, res.contentType.c_str(), res.body.data(), res.body.size());
    return KH_OK;
  } catch (const std::exception& e) {
    copyError(err, errLen, e.what());
  } catch (...) {
    copyError(err, errLen, "unknown exception in serveOffline");
  }
  return KH_ERR_INVALID_ARGUMENT;
}

} // namespace detail

namespace detail {
template <class T> void* makeState() noexcept {
  try {
    return new T();
  } catch (...) {
    return nullptr;
  }
}
template <class T> void destroyState(void* state) noexcept {
  delete static_cast<T*>(state);
}
} // namespace detail

template <class T> T& Host::libraryState() const {
  if (!KH_HAS_FIELD(api_, kh_host_api_v1_t, library_state) || api_->library_state == nullptr)
    throw HostError(KH_ERR_UNAVAILABLE, "library state is not available in this host (ABI " +
                                            std::to_string(api_->abi_major) + "." +
                                            std::to_string(api_->abi_minor) + " < 1.5)");
  void* state = api_->library_state(ctx_, &detail::makeState<T>, &detail::destroyState<T>);
  if (state == nullptr) throw HostError(KH_ERR_INTERNAL, "library state: cannot make it");
  return *static_cast<T*>(state);
}

// The plugin object behind an instance handle, for tests that drive a plugin through the ABI
// (testing::FakeHost::instance()) and want to look inside it; nullptr if it is not a T.
template <class T> T* pluginObject(kh_instance_t* instance) {
  return dynamic_cast<T*>(reinterpret_cast<Plugin*>(instance));
}

// The descriptor KH_PLUGIN would export for T; lets unit tests drive a plugin class through the
// ABI (e.g. with testing::FakeHost) without loading a library.
template <class T>
const kh_plugin_v1_t* pluginDescriptor(const char* name, const char* version = "test",
                                       const char* description = "") {
  return detail::Adapter<T>::descriptor(name, version, description);
}

} // namespace kuscia_host::sdk

// Registers a plugin class: emits the one exported entry symbol, kh_plugin_entry_v1.
// Use once per plugin library, at namespace scope.
#define KH_PLUGIN(Class, name, version, description)                                               \
  extern "C" KH_EXPORT const kh_plugin_v1_t* kh_plugin_entry_v1(void) {                            \
    return ::kuscia_host::sdk::detail::Adapter<Class>::descriptor(name, version, description);     \
  }

// Since 1.2: exports kh_offline_get_v1 (abi.h, "offline routes") for a class with
// `static void serveOffline(std::string_view configJson, const sdk::HttpRequest&,
// sdk::HttpResponse&)`, which answers its routes from its config alone (throwing
// sdk::ConfigError for a bad config). Use at most once per plugin library, beside KH_PLUGIN.
#define KH_OFFLINE_ROUTES(Class)                                                                   \
  extern "C" KH_EXPORT kh_status_t kh_offline_get_v1(                                              \
      const char* config, size_t len, const char* path, const char* query,                         \
      kh_offline_respond_fn respond, void* user, char* err, size_t errLen) {                       \
    return ::kuscia_host::sdk::detail::offlineGet<Class>(config, len, path, query, respond, user,  \
                                                         err, errLen);                             \
  }

#endif // KUSCIA_HOST_PLUGIN_HPP
