#include "plugin_host/host_api.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "plugin_host/instance.h"
#include "plugin_host/routes.h"

namespace kuscia_host {

void copyError(char* err, std::size_t len, const std::string& msg) {
  if (err == nullptr || len == 0) return;
  std::size_t n = std::min(len - 1, msg.size());
  std::memcpy(err, msg.data(), n);
  err[n] = '\0';
}

namespace {

PluginInstance* self(kh_host_ctx_t* c) {
  return PluginInstance::fromCtx(c);
}

// Runs fn(std::string& err) and copies the message into the caller's buffer on failure.
template <class Fn> kh_status_t withError(char* err, size_t len, Fn&& fn) {
  std::string e;
  kh_status_t s = fn(e);
  if (s != KH_OK) copyError(err, len, e);
  return s;
}

void log(kh_host_ctx_t* c, kh_log_level_t level, const char* msg, size_t len) {
  if (msg != nullptr) self(c)->log(level, msg, len);
}
int32_t logEnabled(kh_host_ctx_t* c, kh_log_level_t level) {
  return self(c)->logEnabled(level) ? 1 : 0;
}
int64_t wall(kh_host_ctx_t* c) {
  return self(c)->wallTimeNanos();
}
int64_t mono(kh_host_ctx_t* c) {
  return self(c)->monotonicNanos();
}
const char* domain(kh_host_ctx_t* c) {
  return self(c)->domainCStr();
}
const char* mode(kh_host_ctx_t* c) {
  return self(c)->modeCStr();
}
kh_status_t metricRegister(kh_host_ctx_t* c, const kh_metric_desc_t* d, kh_metric_t** out,
                           char* err, size_t len) {
  return withError(err, len,
                   [&](std::string& e) { return self(c)->metrics().registerMetric(d, out, e); });
}
void metricAdd(kh_metric_t* m, const char* const* values, size_t n, double v) {
  PluginMetrics::update(m, PluginMetrics::Op::kAdd, values, n, v);
}
void metricSet(kh_metric_t* m, const char* const* values, size_t n, double v) {
  PluginMetrics::update(m, PluginMetrics::Op::kSet, values, n, v);
}
void metricObserve(kh_metric_t* m, const char* const* values, size_t n, double v) {
  PluginMetrics::update(m, PluginMetrics::Op::kObserve, values, n, v);
}
void metricObserveExemplar(kh_metric_t* m, const char* const* values, size_t n, double v,
                           const char* const* names, const char* const* exemplarValues,
                           size_t count) {
  PluginMetrics::observeWithExemplar(m, values, n, v, names, exemplarValues, count);
}
kh_status_t timerStart(kh_host_ctx_t* c, uint64_t delay, uint64_t period, uint64_t tag,
                       uint64_t* outId, char* err, size_t len) {
  return withError(err, len, [&](std::string& e) {
    return self(c)->timers().start(delay, period, tag, outId, e);
  });
}
kh_status_t timerCancel(kh_host_ctx_t* c, uint64_t id) {
  return self(c)->timers().cancel(id);
}
void setReady(kh_host_ctx_t* c, int32_t ready, const char* reason) {
  self(c)->setReady(ready != 0, reason);
}
kh_status_t subscribe(kh_host_ctx_t* c, const kh_subscription_t* sub, uint64_t* outId, char* err,
                      size_t len) {
  return withError(err, len,
                   [&](std::string& e) { return self(c)->kube().subscribe(sub, outId, e); });
}
kh_status_t cacheGet(kh_host_ctx_t* c, uint64_t sub, const char* key, kh_object_visitor_t visitor,
                     void* user) {
  return self(c)->kube().cacheGet(sub, key, visitor, user);
}
kh_status_t cacheList(kh_host_ctx_t* c, uint64_t sub, const char* selector,
                      kh_object_visitor_t visitor, void* user) {
  return self(c)->kube().cacheList(sub, selector, visitor, user);
}
kh_status_t cacheRelease(kh_host_ctx_t* c, uint64_t sub, const char* key, const char* rv) {
  return self(c)->kube().cacheRelease(sub, key, rv);
}
kh_status_t kubeRequest(kh_host_ctx_t* c, const kh_kube_request_t* req, uint64_t* outId, char* err,
                        size_t len) {
  return withError(err, len,
                   [&](std::string& e) { return self(c)->kube().request(req, outId, e); });
}

kh_status_t routeRegister(kh_host_ctx_t* c, const char* prefix, char* err, size_t len) {
  return withError(err, len, [&](std::string& e) { return self(c)->registerRoute(prefix, e); });
}
void httpRespond(kh_http_response_t* h, int32_t status, const char* contentType, const char* body,
                 size_t len) {
  if (h == nullptr) return;
  RouteResponse* r = RouteResponse::from(h);
  if (r->deferred) return; // its answer is the deferred handle's
  r->answered = true;
  r->status = status;
  r->contentType = contentType != nullptr ? contentType : "application/json";
  r->body.assign(body != nullptr ? body : "", body != nullptr ? len : 0);
  if (!r->onHeap) return;
  std::unique_ptr<RouteResponse> owned(r);
  // Called across the C ABI, from any thread: nothing may escape. An answer that cannot be
  // passed on (no memory) leaves the request to the route timeout's 503.
  try {
    if (owned->done)
      owned->done({owned->status, std::move(owned->contentType), std::move(owned->body)});
  } catch (...) { // NOLINT(bugprone-empty-catch): the timeout answers instead
  }
}
kh_http_response_t* httpDefer(kh_http_response_t* h) {
  if (h == nullptr) return nullptr;
  RouteResponse* r = RouteResponse::from(h);
  if (r->onHeap || r->deferred || !r->done) return nullptr;
  auto later = std::make_unique<RouteResponse>();
  later->onHeap = true;
  later->done = std::move(r->done);
  r->deferred = true;
  return later.release()->handle();
}

void* libraryState(kh_host_ctx_t* c, void* (*make)(), void (*destroy)(void*)) {
  return self(c)->libraryState(make, destroy);
}

kh_host_api_v1_t makeTable(bool withKube) {
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
  t.route_register = &routeRegister;
  t.http_respond = &httpRespond;
  t.http_defer = &httpDefer;
  t.library_state = &libraryState;
  t.metric_observe_exemplar = &metricObserveExemplar;
  if (withKube) {
    t.subscribe = &subscribe;
    t.cache_get = &cacheGet;
    t.cache_list = &cacheList;
    t.kube_request = &kubeRequest;
    t.cache_release = &cacheRelease;
  }
  return t;
}

} // namespace

const kh_host_api_v1_t* hostApiTable(bool withKube) {
  static const kh_host_api_v1_t full = makeTable(true);
  static const kh_host_api_v1_t noKube = makeTable(false);
  return withKube ? &full : &noKube;
}

} // namespace kuscia_host
