// A fake kuscia-host for plugin unit tests (header-only, C++17, no dependencies).
//
// FakeHost fills a real kh_host_api_v1_t and drives a plugin through its real descriptor, so a
// test exercises exactly the code path the daemon uses, without the daemon: a manual clock,
// timers fired by advance(), captured logs and metrics, recorded subscriptions and kube requests
// that the test completes, a cache the test fills, and admin routes the test calls.
//
// It follows the real host's rules, so that a plugin tested here behaves the same in production
// (tests/integration/conformance_test.cc runs one suite against both): the same validation of
// subscriptions, writes and metric calls, with the same status codes; subscribe and
// route_register only from on_create; label selectors honoured by cache_list (and refused on a
// subscription that caches no labels); requests still pending at stop completed with http_code 0
// before on_destroy; nothing accepted after stop.
//
// Single-threaded: call everything from the test thread.
#ifndef KUSCIA_HOST_TESTING_FAKE_HOST_HPP
#define KUSCIA_HOST_TESTING_FAKE_HOST_HPP

#include <kuscia_host/abi.h>
#include <kuscia_host/label_selector.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kuscia_host::testing {

namespace detail {

// Where a deferred answer (ABI 1.4) arrives, from any thread.
struct FakeDeferred {
  std::mutex mu;
  std::condition_variable cv;
  bool answered = false;
  int32_t status = 500;
  std::string contentType, body;
};

// The fake host's answer buffer behind the opaque kh_http_response_t. http_defer makes a heap
// one that answers `later`.
struct FakeResponse {
  int32_t status = 500;
  std::string contentType = "application/json";
  std::string body;
  bool answered = false;
  bool deferred = false; // this one's answer comes through `later`
  bool onHeap = false;   // a deferred handle: http_respond answers `later` and frees it
  std::shared_ptr<FakeDeferred> later;
};

// JSON well-formedness, enough to refuse what the real host refuses: returns the kind of the
// single value in `s` ('o' object, 'a' array, 's' string, 'n' number, 'l' literal), 0 if invalid.
class JsonCheck {
public:
  static char kind(std::string_view s) {
    JsonCheck c{s};
    c.ws();
    char k = c.peek();
    if (!c.value(0)) return 0;
    c.ws();
    if (c.i_ != s.size()) return 0;
    return k == '{' ? 'o' : k == '[' ? 'a' : k == '"' ? 's' : (k == '-' || isDigit(k)) ? 'n' : 'l';
  }

private:
  explicit JsonCheck(std::string_view s) : s_(s) {}
  static bool isDigit(char c) { return c >= '0' && c <= '9'; }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  bool lit(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }
  bool str() {
    if (peek() != '"') return false;
    for (++i_; i_ < s_.size(); ++i_) {
      char c = s_[i_];
      if (c == '"') return ++i_, true;
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c == '\\') {
        if (++i_ >= s_.size()) return false;
        if (s_[i_] == 'u') {
          for (int k = 0; k < 4; ++k)
            if (++i_ >= s_.size() || std::strchr("0123456789abcdefABCDEF", s_[i_]) == nullptr)
              return false;
        } else if (std::strchr("\"\\/bfnrt", s_[i_]) == nullptr) {
          return false;
        }
      }
    }
    return false;
  }
  bool num() {
    std::size_t start = i_;
    if (peek() == '-') ++i_;
    if (peek() == '0') {
      ++i_;
    } else if (isDigit(peek())) {
      while (isDigit(peek()))
        ++i_;
    } else {
      return false;
    }
    if (peek() == '.') {
      ++i_;
      if (!isDigit(peek())) return false;
      while (isDigit(peek()))
        ++i_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++i_;
      if (peek() == '+' || peek() == '-') ++i_;
      if (!isDigit(peek())) return false;
      while (isDigit(peek()))
        ++i_;
    }
    return i_ > start;
  }
  bool value(int depth) {
    if (depth > 256) return false;
    ws();
    switch (peek()) {
    case '{': {
      ++i_;
      ws();
      if (peek() == '}') return ++i_, true;
      for (;;) {
        ws();
        if (!str()) return false;
        ws();
        if (peek() != ':') return false;
        ++i_;
        if (!value(depth + 1)) return false;
        ws();
        if (peek() == ',') {
          ++i_;
          continue;
        }
        if (peek() == '}') return ++i_, true;
        return false;
      }
    }
    case '[': {
      ++i_;
      ws();
      if (peek() == ']') return ++i_, true;
      for (;;) {
        if (!value(depth + 1)) return false;
        ws();
        if (peek() == ',') {
          ++i_;
          continue;
        }
        if (peek() == ']') return ++i_, true;
        return false;
      }
    }
    case '"': return str();
    case 't': return lit("true");
    case 'f': return lit("false");
    case 'n': return lit("null");
    default: return num();
    }
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

} // namespace detail

// The states the instances of one library share within one host (ABI 1.5 library_state): one
// per FakeHost unless tests share them (FakeHost::shareLibraryStates), as the instances of one
// host in centralized mode do. Destroyed with the last FakeHost holding them.
class FakeLibraryStates {
public:
  FakeLibraryStates() = default;
  ~FakeLibraryStates() {
    while (!states_.empty()) { // the last made first
      State s = states_.back();
      states_.pop_back();
      if (s.destroy != nullptr) s.destroy(s.state);
    }
  }
  FakeLibraryStates(const FakeLibraryStates&) = delete;
  FakeLibraryStates& operator=(const FakeLibraryStates&) = delete;
  void* get(void* (*make)(), void (*destroy)(void*)) {
    if (make == nullptr) return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& s : states_)
      if (s.make == make) return s.state;
    void* state = make();
    if (state != nullptr) states_.push_back({make, destroy, state});
    return state;
  }

private:
  struct State {
    void* (*make)();
    void (*destroy)(void*);
    void* state;
  };
  std::mutex mu_;
  std::vector<State> states_;
};

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
    std::map<std::string, std::string> labels; // seen by label selectors in cacheList
  };
  struct HttpAnswer {
    int32_t status;
    std::string contentType;
    std::string body;
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
      api_.cache_release = &cacheReleaseFn;
    }
    api_.route_register = &routeRegisterFn;
    api_.http_respond = &httpRespondFn;
    api_.http_defer = &httpDeferFn;
    api_.library_state = &libraryStateFn;
    api_.metric_observe_exemplar = &metricObserveExemplarFn;
  }
  ~FakeHost() { destroy(); }
  FakeHost(const FakeHost&) = delete;
  FakeHost& operator=(const FakeHost&) = delete;

  // Shares the library states of `other` (before create): as two domains' instances in one
  // centralized host, they then see the same state.
  void shareLibraryStates(const FakeHost& other) { states_ = other.states_; }

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
    if (s == KH_OK) {
      running_ = true;
      if (!readySet_) ready_ = true;
    }
    return s == KH_OK;
  }
  // As the host stops an instance: timers cancelled and nothing new accepted, on_stop, then every
  // request still pending completes with http_code 0.
  void stop() {
    if (stopped_) return;
    stopped_ = true;
    running_ = false;
    timers_.clear();
    if (instance_ == nullptr) return;
    if (plugin_->on_stop != nullptr) plugin_->on_stop(instance_);
    for (auto& r : requests_)
      if (!r.completed) complete(r.id, 0, "", "the instance stopped before the request completed");
  }
  void destroy() {
    if (instance_ == nullptr) return;
    stop();
    plugin_->on_destroy(instance_);
    instance_ = nullptr;
  }

  // The plugin's validate_config (ABI 1.1), as check-config calls it: nullopt when the config is
  // accepted (or the plugin has no validate_config), else {key, message}.
  static std::optional<std::pair<std::string, std::string>>
  validateConfig(const kh_plugin_v1_t* plugin, std::string_view configJson) {
    if (!KH_HAS_FIELD(plugin, kh_plugin_v1_t, validate_config) ||
        plugin->validate_config == nullptr)
      return std::nullopt;
    char key[256] = {0};
    char err[1024] = {0};
    if (plugin->validate_config(configJson.data(), configJson.size(), key, sizeof key, err,
                                sizeof err) == KH_OK)
      return std::nullopt;
    return std::make_pair(std::string(key), std::string(err));
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
  // Objects the plugin released (ABI 1.3 cache_release), in order. Like a host whose other
  // subscribers are all done, the fake forgets a released object at once: cacheGet and
  // cacheList no longer find it through that subscription (putObject brings it back).
  struct Release {
    uint64_t subscription;
    std::string key, resourceVersion;
  };
  const std::vector<Release>& releases() const { return releases_; }
  bool released(uint64_t subscriptionId, const std::string& key) const {
    return std::any_of(releases_.begin(), releases_.end(), [&](const Release& r) {
      return r.subscription == subscriptionId && r.key == key;
    });
  }

  // Kube requests: recorded, completed by the test.
  std::vector<RequestRecord>& requests() { return requests_; }
  const std::vector<RequestRecord>& requests() const { return requests_; }
  // The requests not completed yet.
  std::vector<RequestRecord*> pendingRequests() {
    std::vector<RequestRecord*> out;
    for (auto& r : requests_)
      if (!r.completed) out.push_back(&r);
    return out;
  }
  kh_status_t complete(uint64_t requestId, int32_t httpCode, const std::string& body = "{}",
                       const std::string& message = "") {
    for (auto& r : requests_) {
      if (r.id != requestId || r.completed) continue;
      r.completed = true;
      if (plugin_->on_kube_result == nullptr) return KH_OK;
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

  // Admin routes (ABI 1.1).
  const std::vector<std::string>& routes() const { return routes_; }
  // A GET as the admin server would route it: 404 when no registered prefix matches.
  HttpAnswer httpGet(const std::string& path, const std::string& query = "") {
    bool routed = std::any_of(routes_.begin(), routes_.end(),
                              [&](const std::string& p) { return path.rfind(p, 0) == 0; });
    if (!routed || !KH_HAS_FIELD(plugin_, kh_plugin_v1_t, on_http_request) ||
        plugin_->on_http_request == nullptr)
      return {404, "text/plain; charset=utf-8", "not found: " + path + "\n"};
    if (!running_) return {503, "application/json", R"({"message":"not running"})"};
    kh_http_request_t req{};
    req.struct_size = sizeof req;
    req.method = "GET";
    req.path = path.c_str();
    req.query = query.c_str();
    detail::FakeResponse res;
    record(plugin_->on_http_request(instance_, &req, reinterpret_cast<kh_http_response_t*>(&res)));
    if (res.deferred) {
      // A deferred answer comes from the plugin's thread: wait for it as the admin server would
      // (its timeout is 5 s; tests get more room).
      auto& d = *res.later;
      std::unique_lock lock(d.mu);
      if (!d.cv.wait_for(lock, deferredWait_, [&d] { return d.answered; }))
        return {503, "application/json", R"({"message":"no answer in time"})"};
      return {d.status, d.contentType, d.body};
    }
    if (!res.answered) return {500, "application/json", R"({"message":"no answer"})"};
    return {res.status, res.contentType, res.body};
  }
  // How long httpGet waits for a deferred answer (default 10 s).
  void setDeferredWait(std::chrono::milliseconds wait) { deferredWait_ = wait; }

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
  // The sum of a histogram series' observations, -1 when the series does not exist.
  double metricSum(const std::string& name, const std::string& labels = "") const {
    for (const auto& m : metrics_) {
      if (m.name != name) continue;
      auto it = m.sums.find(labels);
      return it == m.sums.end() ? -1 : it->second;
    }
    return -1;
  }
  // The labels of the latest exemplar observed on a histogram series (name -> value), empty
  // when it has none.
  std::map<std::string, std::string> exemplar(const std::string& name,
                                              const std::string& labels = "") const {
    for (const auto& m : metrics_) {
      if (m.name != name) continue;
      auto it = m.exemplars.find(labels);
      return it == m.exemplars.end() ? std::map<std::string, std::string>{} : it->second;
    }
    return {};
  }
  // Metric calls the host ignored as invalid (wrong label count, negative counter increment,
  // an operation the kind does not take).
  int invalidMetricCalls() const { return invalidMetricCalls_; }
  bool ready() const { return ready_; }
  const std::string& readyReason() const { return readyReason_; }
  const std::string& error() const { return error_; }
  int callbackErrors() const { return callbackErrors_; }
  kh_host_ctx_t* ctx() { return reinterpret_cast<kh_host_ctx_t*>(this); }
  const kh_host_api_v1_t* api() const { return &api_; }
  // The plugin's instance handle (nullptr before create and after destroy); C++ plugins get their
  // object with sdk::pluginObject<T>(host.instance()).
  kh_instance_t* instance() const { return instance_; }

private:
  struct Timer {
    int64_t dueNs;
    uint64_t periodMs;
    uint64_t tag;
  };
  struct MetricRecord {
    FakeHost* owner;
    kh_metric_kind_t kind;
    std::string name;
    size_t labelCount;
    std::map<std::string, double> values;
    std::map<std::string, double> sums;
    std::map<std::string, std::map<std::string, std::string>> exemplars;
  };

  kh_status_t record(kh_status_t s) {
    if (s != KH_OK) ++callbackErrors_;
    return s;
  }
  static FakeHost* self(kh_host_ctx_t* c) { return reinterpret_cast<FakeHost*>(c); }
  static kh_status_t fail(char* err, size_t len, const std::string& msg, kh_status_t status) {
    if (err != nullptr && len > 0) {
      std::strncpy(err, msg.c_str(), len - 1);
      err[len - 1] = '\0';
    }
    return status;
  }
  static std::string str(const char* s) { return s != nullptr ? s : ""; }
  // The first of `parts` that cannot be a path segment, as the host checks.
  static const std::string* badSegment(std::initializer_list<const std::string*> parts) {
    for (const std::string* part : parts)
      for (unsigned char ch : *part)
        if (ch < 0x20 || ch == 0x7f || ch == '/' || ch == '?' || ch == '#' || ch == '%' ||
            ch == ' ')
          return part;
    return nullptr;
  }
  static bool validPointer(const std::string& p) {
    if (p.empty() || p[0] != '/') return false;
    for (size_t i = 0; i < p.size(); ++i)
      if (p[i] == '~' && (i + 1 >= p.size() || (p[i + 1] != '0' && p[i + 1] != '1'))) return false;
    return true;
  }
  bool cachesLabels(uint64_t sub) const {
    for (const auto& s : subs_)
      if (s.id == sub)
        return !s.labelSelector.empty() ||
               std::find(s.fields.begin(), s.fields.end(), "/metadata/labels") != s.fields.end();
    return false;
  }
  bool owns(uint64_t sub) const {
    return std::any_of(subs_.begin(), subs_.end(), [&](const auto& s) { return s.id == sub; });
  }

  static void logFn(kh_host_ctx_t* c, kh_log_level_t level, const char* msg, size_t len) {
    if (msg != nullptr) self(c)->logs_.push_back({level, std::string(msg, len)});
  }
  static int32_t logEnabledFn(kh_host_ctx_t*, kh_log_level_t) { return 1; }
  static int64_t wallFn(kh_host_ctx_t* c) { return self(c)->wallNs_; }
  static int64_t monoFn(kh_host_ctx_t* c) { return self(c)->monoNs_; }
  static const char* domainFn(kh_host_ctx_t* c) { return self(c)->domain_.c_str(); }
  static const char* modeFn(kh_host_ctx_t* c) { return self(c)->mode_.c_str(); }

  static kh_status_t metricRegisterFn(kh_host_ctx_t* c, const kh_metric_desc_t* d,
                                      kh_metric_t** out, char* err, size_t len) {
    auto* h = self(c);
    if (d == nullptr || out == nullptr || !KH_HAS_FIELD(d, kh_metric_desc_t, bucket_count) ||
        d->name == nullptr)
      return fail(err, len, "metric_register: descriptor is NULL, too small or has no name",
                  KH_ERR_INVALID_ARGUMENT);
    if (d->kind < KH_METRIC_COUNTER || d->kind > KH_METRIC_HISTOGRAM)
      return fail(err, len,
                  "metric " + std::string(d->name) + ": unknown kind " + std::to_string(d->kind),
                  KH_ERR_INVALID_ARGUMENT);
    for (size_t i = 0; i < d->label_count; ++i) {
      std::string l = str(d->label_names[i]);
      if (l == "plugin" || l == "domain")
        return fail(err, len,
                    "metric " + std::string(d->name) +
                        ": the host adds the labels plugin and domain itself",
                    KH_ERR_INVALID_ARGUMENT);
    }
    for (auto& m : h->metrics_) {
      if (m.name != d->name) continue;
      if (m.kind != d->kind || m.labelCount != d->label_count)
        return fail(err, len,
                    "metric " + std::string(d->name) +
                        " is already registered with a different type, help, labels or buckets",
                    KH_ERR_INVALID_ARGUMENT);
      *out = reinterpret_cast<kh_metric_t*>(&m);
      return KH_OK;
    }
    h->metrics_.reserve(64); // records are handed out by address
    if (h->metrics_.size() == 64)
      return fail(err, len, "fake host holds at most 64 metric families", KH_ERR_INTERNAL);
    h->metrics_.push_back({h, d->kind, d->name, d->label_count, {}, {}});
    if (d->label_count == 0) h->metrics_.back().values[""] = 0; // exported from registration
    *out = reinterpret_cast<kh_metric_t*>(&h->metrics_.back());
    return KH_OK;
  }
  static std::string joinLabels(const char* const* values, size_t n) {
    std::string key;
    for (size_t i = 0; i < n; ++i) {
      if (i > 0) key += ',';
      key += str(values[i]);
    }
    return key;
  }
  // The record to update, or nullptr (and the call counted) when the host would ignore it.
  static MetricRecord* valid(kh_metric_t* m, const char* const* values, size_t n, bool ok) {
    auto* r = reinterpret_cast<MetricRecord*>(m);
    if (r == nullptr) return nullptr;
    if (!ok || n != r->labelCount || (values == nullptr && n > 0)) {
      ++r->owner->invalidMetricCalls_;
      return nullptr;
    }
    return r;
  }
  static void metricAddFn(kh_metric_t* m, const char* const* values, size_t n, double v) {
    auto* r = reinterpret_cast<MetricRecord*>(m);
    bool ok = r != nullptr && r->kind != KH_METRIC_HISTOGRAM &&
              !(r->kind == KH_METRIC_COUNTER && !(v >= 0));
    if (auto* rec = valid(m, values, n, ok)) rec->values[joinLabels(values, n)] += v;
  }
  static void metricSetFn(kh_metric_t* m, const char* const* values, size_t n, double v) {
    auto* r = reinterpret_cast<MetricRecord*>(m);
    if (auto* rec = valid(m, values, n, r != nullptr && r->kind == KH_METRIC_GAUGE))
      rec->values[joinLabels(values, n)] = v;
  }
  static void metricObserveFn(kh_metric_t* m, const char* const* values, size_t n, double v) {
    auto* r = reinterpret_cast<MetricRecord*>(m);
    if (auto* rec = valid(m, values, n, r != nullptr && r->kind == KH_METRIC_HISTOGRAM)) {
      rec->values[joinLabels(values, n)] += 1;
      rec->sums[joinLabels(values, n)] += v;
    }
  }
  // As the host: the observation always counts; an exemplar with a NULL, a bad label name or
  // more than 128 characters of names and values (counted in bytes here) is dropped and the call
  // counted as invalid.
  static void metricObserveExemplarFn(kh_metric_t* m, const char* const* values, size_t n, double v,
                                      const char* const* names, const char* const* exemplarValues,
                                      size_t count) {
    auto* r = reinterpret_cast<MetricRecord*>(m);
    auto* rec = valid(m, values, n, r != nullptr && r->kind == KH_METRIC_HISTOGRAM);
    if (rec == nullptr) return;
    metricObserveFn(m, values, n, v);
    std::map<std::string, std::string> labels;
    size_t length = 0;
    bool ok = count == 0 || (names != nullptr && exemplarValues != nullptr);
    for (size_t i = 0; ok && i < count; ++i) {
      ok = names[i] != nullptr && exemplarValues[i] != nullptr && validLabelName(names[i]);
      if (!ok) break;
      length += std::strlen(names[i]) + std::strlen(exemplarValues[i]);
      labels[names[i]] = exemplarValues[i];
    }
    if (!ok || length > 128) {
      ++rec->owner->invalidMetricCalls_;
      return;
    }
    rec->exemplars[joinLabels(values, n)] = std::move(labels);
  }
  static bool validLabelName(std::string_view name) {
    if (name.empty() || name.rfind("__", 0) == 0) return false;
    for (size_t i = 0; i < name.size(); ++i) {
      char c = name[i];
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
            (i > 0 && c >= '0' && c <= '9')))
        return false;
    }
    return true;
  }

  static kh_status_t timerStartFn(kh_host_ctx_t* c, uint64_t delayMs, uint64_t periodMs,
                                  uint64_t tag, uint64_t* outId, char* err, size_t len) {
    auto* h = self(c);
    if (outId == nullptr)
      return fail(err, len, "timer_start: out_id is NULL", KH_ERR_INVALID_ARGUMENT);
    if (h->stopped_)
      return fail(err, len, "timer_start: the instance is stopping", KH_ERR_FAILED_PRECONDITION);
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
    if (!h->creating_)
      return fail(err, len, "subscribe is only allowed in on_create", KH_ERR_FAILED_PRECONDITION);
    if (s == nullptr || outId == nullptr || !KH_HAS_FIELD(s, kh_subscription_t, want_raw) ||
        s->version == nullptr || s->resource == nullptr ||
        (s->field_count > 0 && s->fields == nullptr))
      return fail(err, len,
                  "subscribe: the subscription is NULL, too small, or lacks version, resource or "
                  "fields",
                  KH_ERR_INVALID_ARGUMENT);
    SubscriptionRecord r{0,
                         str(s->group),
                         str(s->version),
                         str(s->resource),
                         s->scope,
                         "",
                         str(s->label_selector),
                         {},
                         s->want_raw != 0};
    switch (s->scope) {
    case KH_SCOPE_DOMAIN: r.namespaceName = h->domain_; break;
    case KH_SCOPE_NAMESPACE:
      if (s->namespace_name == nullptr || s->namespace_name[0] == '\0')
        return fail(err, len, "subscribe: KH_SCOPE_NAMESPACE needs namespace_name",
                    KH_ERR_INVALID_ARGUMENT);
      r.namespaceName = s->namespace_name;
      break;
    case KH_SCOPE_ALL: break;
    default:
      return fail(err, len, "subscribe: unknown scope " + std::to_string(s->scope),
                  KH_ERR_INVALID_ARGUMENT);
    }
    for (size_t i = 0; i < s->field_count; ++i) {
      if (s->fields[i] == nullptr)
        return fail(err, len, "subscribe: fields[" + std::to_string(i) + "] is NULL",
                    KH_ERR_INVALID_ARGUMENT);
      r.fields.emplace_back(s->fields[i]);
    }
    if (r.version.empty() || r.resource.empty())
      return fail(err, len, "subscribe: subscription needs a version and a resource",
                  KH_ERR_INVALID_ARGUMENT);
    if (badSegment({&r.group, &r.version, &r.resource, &r.namespaceName}) != nullptr)
      return fail(err, len, "subscribe: not a valid group, version, resource or namespace name",
                  KH_ERR_INVALID_ARGUMENT);
    if (!sdk::LabelSelector::parse(r.labelSelector))
      return fail(err, len, "subscribe: label selector '" + r.labelSelector + "' is invalid",
                  KH_ERR_INVALID_ARGUMENT);
    for (const auto& f : r.fields)
      if (!validPointer(f))
        return fail(err, len, "subscribe: JSON pointer '" + f + "' is invalid",
                    KH_ERR_INVALID_ARGUMENT);
    r.id = ++h->nextId_;
    h->subs_.push_back(r);
    *outId = r.id;
    return KH_OK;
  }
  static int32_t visitOne(const CachedObject& o, kh_object_visitor_t visitor, void* user) {
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
    auto* h = self(c);
    if (key == nullptr || visitor == nullptr) return KH_ERR_INVALID_ARGUMENT;
    if (!h->owns(sub)) return KH_ERR_NOT_FOUND;
    auto& objects = h->cache_[sub];
    auto it = objects.find(str(key));
    if (it == objects.end()) return KH_ERR_NOT_FOUND;
    visitOne(it->second, visitor, user);
    return KH_OK;
  }
  static kh_status_t cacheListFn(kh_host_ctx_t* c, uint64_t sub, const char* selector,
                                 kh_object_visitor_t visitor, void* user) {
    auto* h = self(c);
    if (visitor == nullptr) return KH_ERR_INVALID_ARGUMENT;
    if (!h->owns(sub)) return KH_ERR_NOT_FOUND;
    auto sel = sdk::LabelSelector::parse(str(selector));
    if (!sel) return KH_ERR_INVALID_ARGUMENT;
    if (!sel->empty() && !h->cachesLabels(sub)) return KH_ERR_FAILED_PRECONDITION;
    std::vector<CachedObject> matching; // the visitor may call back into the host
    for (const auto& entry : h->cache_[sub]) {
      const auto& labels = entry.second.labels;
      if (sel->matches([&labels](std::string_view key) -> std::optional<std::string_view> {
            auto it = labels.find(std::string(key));
            if (it == labels.end()) return std::nullopt;
            return std::string_view(it->second);
          }))
        matching.push_back(entry.second);
    }
    for (const auto& o : matching)
      if (visitOne(o, visitor, user) != 0) break;
    return KH_OK;
  }
  static kh_status_t cacheReleaseFn(kh_host_ctx_t* c, uint64_t sub, const char* key,
                                    const char* rv) {
    auto* h = self(c);
    if (key == nullptr || rv == nullptr) return KH_ERR_INVALID_ARGUMENT;
    if (!h->owns(sub)) return KH_ERR_NOT_FOUND;
    auto& objects = h->cache_[sub];
    auto it = objects.find(key);
    if (it == objects.end()) return KH_ERR_NOT_FOUND;
    if (it->second.resourceVersion != rv) return KH_ERR_STALE;
    objects.erase(it);
    h->releases_.push_back({sub, key, rv});
    return KH_OK;
  }
  static kh_status_t kubeRequestFn(kh_host_ctx_t* c, const kh_kube_request_t* q, uint64_t* outId,
                                   char* err, size_t len) {
    auto* h = self(c);
    if (h->stopped_)
      return fail(err, len, "kube_request: the instance is stopping", KH_ERR_FAILED_PRECONDITION);
    if (q == nullptr || outId == nullptr || !KH_HAS_FIELD(q, kh_kube_request_t, user_tag))
      return fail(err, len, "kube_request: the request is NULL or too small",
                  KH_ERR_INVALID_ARGUMENT);
    if (q->verb < KH_KUBE_PATCH || q->verb > KH_KUBE_DELETE)
      return fail(err, len, "kube_request: unknown verb " + std::to_string(q->verb),
                  KH_ERR_INVALID_ARGUMENT);
    if (q->verb == KH_KUBE_PATCH && q->patch_type != KH_PATCH_MERGE &&
        q->patch_type != KH_PATCH_JSON)
      return fail(err, len, "kube_request: unknown patch type " + std::to_string(q->patch_type),
                  KH_ERR_INVALID_ARGUMENT);
    RequestRecord r{0,
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
    if (auto problem = invalidWrite(r))
      return fail(err, len, "kube_request: " + *problem, KH_ERR_INVALID_ARGUMENT);
    r.id = ++h->nextId_;
    h->requests_.push_back(r);
    *outId = r.id;
    return KH_OK;
  }
  // What the host refuses before sending a write.
  static std::optional<std::string> invalidWrite(const RequestRecord& r) {
    if (r.version.empty() || r.resource.empty())
      return std::string("kube request needs a version and a resource");
    if (badSegment({&r.group, &r.version, &r.resource, &r.namespaceName, &r.name, &r.subresource}))
      return std::string("not a valid path segment");
    char kind = detail::JsonCheck::kind(r.body);
    switch (r.verb) {
    case KH_KUBE_CREATE:
      if (kind == 0) return std::string("create: the body is not valid JSON");
      return std::nullopt;
    case KH_KUBE_PATCH:
      if (r.name.empty()) return std::string("patch: the object's name is missing");
      if (kind == 0) return std::string("patch: the body is not valid JSON");
      if (r.patchType == KH_PATCH_MERGE && kind != 'o')
        return std::string("merge patch: the body must be a JSON object");
      if (r.patchType == KH_PATCH_JSON && kind != 'a')
        return std::string("JSON patch: the body must be a JSON array");
      return std::nullopt;
    default:
      if (r.name.empty()) return std::string("delete: the object's name is missing");
      if (!r.body.empty() && kind != 'o')
        return std::string("delete: the body must be DeleteOptions (an object)");
      return std::nullopt;
    }
  }
  static kh_status_t routeRegisterFn(kh_host_ctx_t* c, const char* prefix, char* err, size_t len) {
    auto* h = self(c);
    if (!h->creating_)
      return fail(err, len, "route_register is only allowed in on_create",
                  KH_ERR_FAILED_PRECONDITION);
    if (prefix == nullptr || prefix[0] != '/')
      return fail(err, len, "route_register: route prefix must be an absolute path",
                  KH_ERR_INVALID_ARGUMENT);
    for (const char* reserved : {"/livez", "/readyz", "/metrics"}) {
      std::string p(prefix);
      std::string r(reserved);
      if (p.rfind(r, 0) == 0 || r.rfind(p, 0) == 0)
        return fail(err, len, "route_register: route prefix overlaps the host's " + r,
                    KH_ERR_INVALID_ARGUMENT);
    }
    h->routes_.emplace_back(prefix);
    return KH_OK;
  }
  static void httpRespondFn(kh_http_response_t* h, int32_t status, const char* contentType,
                            const char* body, size_t len) {
    if (h == nullptr) return;
    auto* r = reinterpret_cast<detail::FakeResponse*>(h);
    if (r->deferred) return; // answered through the deferred handle
    r->answered = true;
    r->status = status;
    r->contentType = contentType != nullptr ? contentType : "application/json";
    r->body.assign(body != nullptr ? body : "", body != nullptr ? len : 0);
    if (!r->onHeap) return;
    std::unique_ptr<detail::FakeResponse> owned(r);
    {
      std::lock_guard lock(owned->later->mu);
      owned->later->answered = true;
      owned->later->status = owned->status;
      owned->later->contentType = owned->contentType;
      owned->later->body = owned->body;
    }
    owned->later->cv.notify_all();
  }
  static void* libraryStateFn(kh_host_ctx_t* c, void* (*make)(), void (*destroy)(void*)) {
    return self(c)->states_->get(make, destroy);
  }
  static kh_http_response_t* httpDeferFn(kh_http_response_t* h) {
    if (h == nullptr) return nullptr;
    auto* r = reinterpret_cast<detail::FakeResponse*>(h);
    if (r->deferred || r->onHeap) return nullptr;
    r->deferred = true;
    r->later = std::make_shared<detail::FakeDeferred>();
    auto heap = std::make_unique<detail::FakeResponse>();
    heap->onHeap = true;
    heap->later = r->later;
    return reinterpret_cast<kh_http_response_t*>(heap.release());
  }

  std::string domain_, mode_;
  kh_host_api_v1_t api_{};
  const kh_plugin_v1_t* plugin_ = nullptr;
  kh_instance_t* instance_ = nullptr;
  bool creating_ = false, running_ = false, stopped_ = false, ready_ = false, readySet_ = false;
  std::string error_, readyReason_;
  int callbackErrors_ = 0;
  int invalidMetricCalls_ = 0;
  // The clocks are read from any thread (the ABI's contract: a plugin's own threads ask the time).
  std::atomic<int64_t> wallNs_{1700000000LL * 1000000000LL}; // 2023-11-14T22:13:20Z
  std::atomic<int64_t> monoNs_{0};
  std::chrono::milliseconds deferredWait_{10000};
  uint64_t nextId_ = 0;
  std::map<uint64_t, Timer> timers_;
  std::vector<LogLine> logs_;
  std::vector<MetricRecord> metrics_;
  std::vector<SubscriptionRecord> subs_;
  std::vector<RequestRecord> requests_;
  std::vector<std::string> routes_;
  std::map<uint64_t, std::map<std::string, CachedObject>> cache_;
  std::vector<Release> releases_;
  // Last: destroyed after the instance (~FakeHost destroys it first).
  std::shared_ptr<FakeLibraryStates> states_ = std::make_shared<FakeLibraryStates>();
};

} // namespace kuscia_host::testing

#endif // KUSCIA_HOST_TESTING_FAKE_HOST_HPP
