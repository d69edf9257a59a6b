// A fake kuscia-host for plugin unit tests (header-only, C++17, no dependencies).
//
// FakeHost fills a real kh_host_api_v1_t and drives a plugin through its real descriptor, so a
// test exercises exactly the code path the daemon uses, without the daemon: a manual clock,
// timers fired by advance(), captured logs and metrics, recorded subscriptions and kube requests
// that the test completes, and a cache the test fills.
//
// Single-threaded: call everything from the test thread.
#ifndef KUSCIA_HOST_TESTING_FAKE_HOST_HPP
#define KUSCIA_HOST_TESTING_FAKE_HOST_HPP

#include <kuscia_host/abi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kuscia_host::testing {

class FakeHost {
public:
  struct LogLine {
    kh_log_level_t level;
    std::string message;
  };
  struct SubscriptionRecord {
    uint64_t id;
    std::string group, version, resource;
    kh_scope_t scope;
    std::string namespaceName, labelSelector;
    std::vector<std::string> fields;
    bool wantRaw;
  };
  struct RequestRecord {
    uint64_t id;
    kh_kube_verb_t verb;
    std::string group, version, resource, namespaceName, name, subresource;
    kh_patch_type_t patchType;
    std::string body, resourceVersion;
    uint64_t userTag;
    bool completed = false;
  };
  struct CachedObject {
    std::string key, uid, resourceVersion, fieldsJson;
  };

  explicit FakeHost(std::string domain = "alice", std::string mode = "centralized",
                    bool kube = true)
      : domain_(std::move(domain)), mode_(std::move(mode)) {
    api_.struct_size = sizeof api_;
    api_.abi_major = KH_ABI_VERSION_MAJOR;
    api_.abi_minor = KH_ABI_VERSION_MINOR;
    api_.log = &logFn;
    api_.log_enabled = &logEnabledFn;
    api_.wall_time_ns = &wallFn;
    api_.monotonic_time_ns = &monoFn;
    api_.domain_id = &domainFn;
    api_.deployment_mode = &modeFn;
    api_.metric_register = &metricRegisterFn;
    api_.metric_add = &metricAddFn;
    api_.metric_set = &metricSetFn;
    api_.metric_observe = &metricObserveFn;
    api_.timer_start = &timerStartFn;
    api_.timer_cancel = &timerCancelFn;
    api_.set_ready = &setReadyFn;
    if (kube) {
      api_.subscribe = &subscribeFn;
      api_.cache_get = &cacheGetFn;
      api_.cache_list = &cacheListFn;
      api_.kube_request = &kubeRequestFn;
    }
  }
  ~FakeHost() { destroy(); }
  FakeHost(const FakeHost&) = delete;
  FakeHost& operator=(const FakeHost&) = delete;

  // Lifecycle, through the plugin's descriptor. create/start return false and set error().
  bool create(const kh_plugin_v1_t* plugin, std::string_view configJson = "{}") {
    plugin_ = plugin;
    std::string cfg(configJson);
    char err[1024] = {0};
    creating_ = true;
    instance_ =
        plugin->on_create(&api_, ctx(), domain_.c_str(), cfg.c_str(), cfg.size(), err, sizeof err);
    creating_ = false;
    error_ = err;
    return instance_ != nullptr;
  }
  bool start() {
    char err[1024] = {0};
    kh_status_t s = plugin_->on_start(instance_, err, sizeof err);
    error_ = err;
    if (s == KH_OK && !readySet_) ready_ = true;
    return s == KH_OK;
  }
  void stop() {
    if (instance_ != nullptr && !stopped_ && plugin_->on_stop != nullptr)
      plugin_->on_stop(instance_);
    stopped_ = true;
    timers_.clear();
  }
  void destroy() {
    if (instance_ == nullptr) return;
    stop();
    plugin_->on_destroy(instance_);
    instance_ = nullptr;
  }

  // Clock and timers. advance() moves both clocks and fires due timers in time order.
  void setWallTimeNanos(int64_t ns) { wallNs_ = ns; }
  int64_t wallTimeNanos() const { return wallNs_; }
  void advanceMillis(int64_t ms) {
    int64_t target = monoNs_ + ms * 1000000;
    for (;;) {
      auto next = std::min_element(timers_.begin(), timers_.end(), [](auto& a, auto& b) {
        return a.second.dueNs < b.second.dueNs;
      });
      if (next == timers_.end() || next->second.dueNs > target) break;
      int64_t step = next->second.dueNs - monoNs_;
      monoNs_ += step;
      wallNs_ += step;
      uint64_t id = next->first;
      uint64_t tag = next->second.tag;
      if (next->second.periodMs > 0)
        next->second.dueNs += static_cast<int64_t>(next->second.periodMs) * 1000000;
      else
        timers_.erase(next);
      record(plugin_->on_timer(instance_, id, tag));
    }
    wallNs_ += target - monoNs_;
    monoNs_ = target;
  }
  size_t activeTimers() const { return timers_.size(); }

  // Subscriptions, events and cache.
  const std::vector<SubscriptionRecord>& subscriptions() const { return subs_; }
  kh_status_t deliver(uint64_t subscriptionId, kh_event_type_t type, const std::string& key,
                      const std::string& uid, const std::string& rv, const std::string& fieldsJson,
                      const std::string& rawJson = "") {
    kh_event_t e{};
    e.struct_size = sizeof e;
    e.subscription_id = subscriptionId;
    e.type = type;
    e.key = key.c_str();
    e.uid = uid.c_str();
    e.resource_version = rv.c_str();
    e.fields_json = fieldsJson.c_str();
    e.fields_json_len = fieldsJson.size();
    e.raw_json = rawJson.empty() ? nullptr : rawJson.c_str();
    e.raw_json_len = rawJson.size();
    return record(plugin_->on_event(instance_, &e));
  }
  void putObject(uint64_t subscriptionId, CachedObject obj) {
    auto& objects = cache_[subscriptionId];
    std::string key = obj.key;
    objects[key] = std::move(obj);
  }
  void removeObject(uint64_t subscriptionId, const std::string& key) {
    cache_[subscriptionId].erase(key);
  }

  // Kube requests: recorded, completed by the test.
  std::vector<RequestRecord>& requests() { return requests_; }
  kh_status_t complete(uint64_t requestId, int32_t httpCode, const std::string& body = "{}",
                       const std::string& message = "") {
    for (auto& r : requests_) {
      if (r.id != requestId || r.completed) continue;
      r.completed = true;
      kh_kube_result_t res{};
      res.struct_size = sizeof res;
      res.request_id = requestId;
      res.user_tag = r.userTag;
      res.http_code = httpCode;
      res.body = body.c_str();
      res.body_len = body.size();
      res.message = message.c_str();
      return record(plugin_->on_kube_result(instance_, &res));
    }
    return KH_ERR_NOT_FOUND;
  }

  // Observations.
  const std::vector<LogLine>& logs() const { return logs_; }
  bool logged(std::string_view needle) const {
    return std::any_of(logs_.begin(), logs_.end(), [&](const LogLine& l) {
      return l.message.find(needle) != std::string::npos;
    });
  }
  // Value of a counter/gauge series, or the observation count of a histogram series; labels in
  // declaration order joined by ','. Returns -1 when the series does not exist.
  double metric(const std::string& name, const std::string& labels = "") const {
    for (const auto& m : metrics_) {
      if (m.name != name) continue;
      auto it = m.values.find(labels);
      return it == m.values.end() ? -1 : it->second;
    }
    return -1;
  }
  bool ready() const { return ready_; }
  const std::string& readyReason() const { return readyReason_; }
  const std::string& error() const { return error_; }
  int callbackErrors() const { return callbackErrors_; }
  kh_host_ctx_t* ctx() { return reinterpret_cast<kh_host_ctx_t*>(this); }
  // The plugin's instance handle (nullptr before create and after destroy); C++ plugins get their
  // object with sdk::pluginObject<T>(host.instance()).
  kh_instance_t* instance() const { return instance_; }
  const kh_host_api_v1_t* api() const { return &api_; }

private:
  struct Timer {
    int64_t dueNs;
    uint64_t periodMs;
    uint64_t tag;
  };
  struct MetricRecord {
    kh_metric_kind_t kind;
    std::string name;
    size_t labelCount;
    std::map<std::string, double> values;
  };

  kh_status_t record(kh_status_t s) {
    if (s != KH_OK) ++callbackErrors_;
    return s;
  }
  static FakeHost* self(kh_host_ctx_t* c) { return reinterpret_cast<FakeHost*>(c); }
  static void fail(char* err, size_t len, const char* msg) {
    if (err != nullptr && len > 0) {
      std::strncpy(err, msg, len - 1);
      err[len - 1] = '\0';
    }
  }
  static std::string str(const char* s) { return s != nullptr ? s : ""; }

  static void logFn(kh_host_ctx_t* c, kh_log_level_t level, const char* msg, size_t len) {
    self(c)->logs_.push_back({level, std::string(msg, len)});
  }
  static int32_t logEnabledFn(kh_host_ctx_t*, kh_log_level_t) { return 1; }
  static int64_t wallFn(kh_host_ctx_t* c) { return self(c)->wallNs_; }
  static int64_t monoFn(kh_host_ctx_t* c) { return self(c)->monoNs_; }
  static const char* domainFn(kh_host_ctx_t* c) { return self(c)->domain_.c_str(); }
  static const char* modeFn(kh_host_ctx_t* c) { return self(c)->mode_.c_str(); }

  static kh_status_t metricRegisterFn(kh_host_ctx_t* c, const kh_metric_desc_t* d,
                                      kh_metric_t** out, char* err, size_t len) {
    auto* h = self(c);
    if (d == nullptr || d->name == nullptr || d->name[0] == '\0') {
      fail(err, len, "metric name is empty");
      return KH_ERR_INVALID_ARGUMENT;
    }
    for (auto& m : h->metrics_) {
      if (m.name != d->name) continue;
      if (m.kind != d->kind || m.labelCount != d->label_count) {
        fail(err, len, "metric registered twice with a different shape");
        return KH_ERR_INVALID_ARGUMENT;
      }
      *out = reinterpret_cast<kh_metric_t*>(&m);
      return KH_OK;
    }
    h->metrics_.reserve(64); // records are handed out by address
    if (h->metrics_.size() == 64) {
      fail(err, len, "fake host holds at most 64 metric families");
      return KH_ERR_INTERNAL;
    }
    h->metrics_.push_back({d->kind, d->name, d->label_count, {}});
    *out = reinterpret_cast<kh_metric_t*>(&h->metrics_.back());
    return KH_OK;
  }
  static std::string joinLabels(const char* const* values, size_t n) {
    std::string key;
    for (size_t i = 0; i < n; ++i) {
      if (i > 0) key += ',';
      key += values[i];
    }
    return key;
  }
  static void metricAddFn(kh_metric_t* m, const char* const* values, size_t n, double v) {
    auto* r = reinterpret_cast<MetricRecord*>(m);
    if (n == r->labelCount) r->values[joinLabels(values, n)] += v;
  }
  static void metricSetFn(kh_metric_t* m, const char* const* values, size_t n, double v) {
    auto* r = reinterpret_cast<MetricRecord*>(m);
    if (n == r->labelCount) r->values[joinLabels(values, n)] = v;
  }
  static void metricObserveFn(kh_metric_t* m, const char* const* values, size_t n, double) {
    auto* r = reinterpret_cast<MetricRecord*>(m);
    if (n == r->labelCount) r->values[joinLabels(values, n)] += 1;
  }

  static kh_status_t timerStartFn(kh_host_ctx_t* c, uint64_t delayMs, uint64_t periodMs,
                                  uint64_t tag, uint64_t* outId, char*, size_t) {
    auto* h = self(c);
    uint64_t id = ++h->nextId_;
    h->timers_[id] = Timer{h->monoNs_ + static_cast<int64_t>(delayMs) * 1000000, periodMs, tag};
    *outId = id;
    return KH_OK;
  }
  static kh_status_t timerCancelFn(kh_host_ctx_t* c, uint64_t id) {
    return self(c)->timers_.erase(id) > 0 ? KH_OK : KH_ERR_NOT_FOUND;
  }
  static void setReadyFn(kh_host_ctx_t* c, int32_t ready, const char* reason) {
    auto* h = self(c);
    h->readySet_ = true;
    h->ready_ = ready != 0;
    h->readyReason_ = str(reason);
  }

  static kh_status_t subscribeFn(kh_host_ctx_t* c, const kh_subscription_t* s, uint64_t* outId,
                                 char* err, size_t len) {
    auto* h = self(c);
    if (!h->creating_) {
      fail(err, len, "subscribe is only allowed in on_create");
      return KH_ERR_FAILED_PRECONDITION;
    }
    SubscriptionRecord r{
        ++h->nextId_,    str(s->group),          str(s->version),        str(s->resource),
        s->scope,        str(s->namespace_name), str(s->label_selector), {},
        s->want_raw != 0};
    for (size_t i = 0; i < s->field_count; ++i)
      r.fields.push_back(str(s->fields[i]));
    h->subs_.push_back(r);
    *outId = r.id;
    return KH_OK;
  }
  static kh_status_t visitOne(const CachedObject& o, kh_object_visitor_t visitor, void* user) {
    kh_object_t obj{};
    obj.struct_size = sizeof obj;
    obj.key = o.key.c_str();
    obj.uid = o.uid.c_str();
    obj.resource_version = o.resourceVersion.c_str();
    obj.fields_json = o.fieldsJson.c_str();
    obj.fields_json_len = o.fieldsJson.size();
    return visitor(user, &obj);
  }
  static kh_status_t cacheGetFn(kh_host_ctx_t* c, uint64_t sub, const char* key,
                                kh_object_visitor_t visitor, void* user) {
    auto& objects = self(c)->cache_[sub];
    auto it = objects.find(str(key));
    if (it == objects.end()) return KH_ERR_NOT_FOUND;
    visitOne(it->second, visitor, user);
    return KH_OK;
  }
  // The fake ignores label selectors: tests put only the objects a selector would match.
  static kh_status_t cacheListFn(kh_host_ctx_t* c, uint64_t sub, const char*,
                                 kh_object_visitor_t visitor, void* user) {
    for (const auto& [key, o] : self(c)->cache_[sub])
      if (visitOne(o, visitor, user) != 0) break;
    return KH_OK;
  }
  static kh_status_t kubeRequestFn(kh_host_ctx_t* c, const kh_kube_request_t* q, uint64_t* outId,
                                   char* err, size_t len) {
    auto* h = self(c);
    if (q->verb < KH_KUBE_PATCH || q->verb > KH_KUBE_DELETE) {
      fail(err, len, "unknown verb");
      return KH_ERR_INVALID_ARGUMENT;
    }
    RequestRecord r{++h->nextId_,
                    q->verb,
                    str(q->group),
                    str(q->version),
                    str(q->resource),
                    str(q->namespace_name),
                    str(q->name),
                    str(q->subresource),
                    q->patch_type,
                    q->body != nullptr ? std::string(q->body, q->body_len) : std::string(),
                    str(q->resource_version),
                    q->user_tag};
    h->requests_.push_back(r);
    *outId = r.id;
    return KH_OK;
  }

  std::string domain_, mode_;
  kh_host_api_v1_t api_{};
  const kh_plugin_v1_t* plugin_ = nullptr;
  kh_instance_t* instance_ = nullptr;
  bool creating_ = false, stopped_ = false, ready_ = false, readySet_ = false;
  std::string error_, readyReason_;
  int callbackErrors_ = 0;
  int64_t wallNs_ = 1700000000LL * 1000000000LL; // 2023-11-14T22:13:20Z
  int64_t monoNs_ = 0;
  uint64_t nextId_ = 0;
  std::map<uint64_t, Timer> timers_;
  std::vector<LogLine> logs_;
  std::vector<MetricRecord> metrics_;
  std::vector<SubscriptionRecord> subs_;
  std::vector<RequestRecord> requests_;
  std::map<uint64_t, std::map<std::string, CachedObject>> cache_;
};

} // namespace kuscia_host::testing

#endif // KUSCIA_HOST_TESTING_FAKE_HOST_HPP
