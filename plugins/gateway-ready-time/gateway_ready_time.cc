#include "gateway_ready_time.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include <kuscia_model/kuscia.h>
#include <kuscia_model/kuscia_time.h>

namespace kuscia_host::plugins::gateway {

using nlohmann::json;

namespace {

enum ServiceField { kCreate, kReadyTime, kType, kExternalName, kFieldCount };

const std::vector<double>& durationBuckets() {
  static const std::vector<double> b = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};
  return b;
}

} // namespace

GatewayReadyTime::GatewayReadyTime(sdk::Host host, std::string_view /*domain*/,
                                   std::string_view configJson)
    : Plugin(host), config_(parseGatewayConfig(configJson)),
      programmedSeconds_(host.histogram(
          "kuscia_gateway_service_create_to_programmed_seconds",
          "Service creation to the moment the gateway saw it programmed (the ready-time written)",
          {}, durationBuckets())),
      writes_(host.counter("kuscia_gateway_ready_time_writes_total",
                           "ready-time annotation writes, by result (ok, conflict: the service "
                           "changed meanwhile, gone, failed, unsent)",
                           {"result"})) {
  sdk::Subscription services;
  services.version = "v1";
  services.resource = "services";
  services.scope = KH_SCOPE_DOMAIN;
  services.fields = {"/metadata/creationTimestamp", model::kReadyTimePointer, "/spec/type",
                     "/spec/externalName"};
  serviceSub_ = host.subscribe(services);
  if (config_.source == GatewayConfig::Source::kEndpoints) {
    sdk::Subscription endpoints = services;
    endpoints.resource = "endpoints";
    endpoints.fields = {"/subsets"};
    endpointsSub_ = host.subscribe(endpoints);
  } else {
    poller_ = std::make_unique<EnvoyAdminPoller>(*parseHttpUrl(config_.envoyAdminUrl),
                                                 config_.pollMillis, config_.retryMaxMillis);
  }
}

GatewayReadyTime::~GatewayReadyTime() {
  if (poller_) poller_->stop();
}

void GatewayReadyTime::onStart() {
  if (!poller_) return;
  poller_->start();
  pollTimer_ = host().startTimer(static_cast<uint64_t>(config_.pollMillis),
                                 static_cast<uint64_t>(config_.pollMillis));
}

void GatewayReadyTime::onStop() {
  if (poller_) poller_->stop();
}

bool GatewayReadyTime::programmed(const std::string& key, const Service& s) const {
  if (s.externalName) return true;
  if (config_.source == GatewayConfig::Source::kEnvoyAdmin)
    return clusters_ && clusters_->count("service-" + s.name) > 0;
  // The Endpoints as the host caches them: nothing of them is held here.
  return model::cachedEndpointsHaveAddress(host(), endpointsSub_, key);
}

void GatewayReadyTime::onEvent(const sdk::Event& e) {
  if (e.type == KH_EVENT_SYNCED) return;
  std::string key(e.key);
  if (e.subscriptionId == endpointsSub_) return consider(key);
  if (e.subscriptionId != serviceSub_) return;
  if (e.type == KH_EVENT_DELETED) {
    services_.erase(key);
    return;
  }
  model::EventFields f(e.fieldsJson, kFieldCount);
  Service& s = services_[key];
  if (s.uid != e.uid) {
    s = Service{std::string(e.uid), "", std::string(model::nameOf(key))};
    s.backoff = model::Backoff(200, config_.retryMaxMillis);
  }
  s.resourceVersion = std::string(e.resourceVersion);
  std::string decoded;
  auto create = f.view(kCreate, decoded);
  s.create = create ? model::parseTime(*create) : std::nullopt;
  s.annotated = !f.isNull(kReadyTime);
  s.externalName =
      f.string(kType) == "ExternalName" && model::isDnsSubdomain(f.string(kExternalName));
  consider(key);
  settle(services_.find(key));
}

void GatewayReadyTime::settle(std::map<std::string, Service>::iterator it) {
  // An annotated service with nothing in flight owes nothing: it is not held. A later event of
  // it brings it back from its fields (and its annotation keeps it from being written again).
  const Service& s = it->second;
  if (s.annotated && s.request == 0 && s.retryTimer == 0) services_.erase(it);
}

void GatewayReadyTime::consider(const std::string& key) {
  auto it = services_.find(key);
  if (it == services_.end()) return;
  Service& s = it->second;
  if (s.annotated || s.request != 0 || s.retryTimer != 0 || !programmed(key, s)) return;
  int64_t now = host().wallTimeNanos();
  std::string value = formatTime(now, config_.millis ? model::TimePrecision::kMillis
                                                     : model::TimePrecision::kSeconds);
  sdk::KubeRequest r;
  r.verb = KH_KUBE_PATCH;
  r.version = "v1";
  r.resource = "services";
  r.namespaceName = std::string(model::namespaceOf(key));
  r.name = s.name;
  r.patchType = KH_PATCH_MERGE;
  // As json{...}.dump() writes it (a time and the annotation's name need no escaping), without
  // building the DOM; the host splices the precondition into this text.
  r.body = std::string(R"({"metadata":{"annotations":{")") + model::kReadyTimeAnnotation +
           R"(":")" + value + R"("}}})";
  r.resourceVersion = s.resourceVersion; // only if nobody wrote since we looked
  try {
    s.request = host().kubeRequest(r);
  } catch (const sdk::HostError& e) {
    host().debug("ready-time of " + key + " not written: " + e.what());
    return;
  }
  requests_[s.request] = key;
  if (s.create && !s.observed) {
    s.observed = true;
    programmedSeconds_.observe(model::secondsBetween(*s.create, now));
  }
}

void GatewayReadyTime::retry(const std::string& key, Service& s) {
  try {
    s.retryTimer = host().startTimer(static_cast<uint64_t>(s.backoff.next()));
    timers_[s.retryTimer] = key;
  } catch (const sdk::HostError&) { // stopping
  }
}

void GatewayReadyTime::onTimer(uint64_t timerId, uint64_t /*userTag*/) {
  if (timerId == pollTimer_) {
    clusters_ = poller_->clusters();
    for (const auto& [key, s] : services_)
      consider(key);
    return;
  }
  auto it = timers_.find(timerId);
  if (it == timers_.end()) return;
  std::string key = std::move(it->second);
  timers_.erase(it);
  if (auto s = services_.find(key); s != services_.end()) {
    s->second.retryTimer = 0;
    consider(key);
  }
}

void GatewayReadyTime::onKubeResult(const sdk::KubeResult& r) {
  auto it = requests_.find(r.requestId);
  if (it == requests_.end()) return;
  std::string key = std::move(it->second);
  requests_.erase(it);
  auto s = services_.find(key);
  if (s == services_.end()) return; // deleted meanwhile
  s->second.request = 0;
  if (r.httpCode >= 200 && r.httpCode < 300) {
    writes_.add(1, {"ok"});
    s->second.annotated = true;
    return settle(s);
  }
  if (r.httpCode == 404) {
    writes_.add(1, {"gone"});
    return;
  }
  if (r.httpCode == 409) {
    // The service changed since we looked (perhaps someone wrote the annotation): decide again
    // from its next state, never over it.
    writes_.add(1, {"conflict"});
    host().debug("ready-time of " + key + ": the service changed (409); deciding again");
    return retry(key, s->second);
  }
  if (r.httpCode == 400 || r.httpCode == 403 || r.httpCode == 422) {
    writes_.add(1, {"failed"});
    host().error("ready-time of " + key + " refused (" + std::to_string(r.httpCode) +
                 "): " + std::string(r.message));
    return;
  }
  // 429, 5xx or no answer: the host retried until the instance stopped; nothing more to do.
  writes_.add(1, {"unsent"});
}

} // namespace kuscia_host::plugins::gateway
