#include <kuscia_model/route_outage.h>

#include <kuscia_host/kube_text.hpp>
#include <kuscia_model/control_plane.h>
#include <kuscia_model/failure.h>
#include <kuscia_model/json_member.h>
#include <kuscia_model/kept_facts.h>
#include <kuscia_model/kuscia.h>
#include <kuscia_model/kuscia_model.h>

#include <array>

namespace kuscia_host::model::route {

using nlohmann::json;

namespace {

// routeSubscription()'s fields, in order.
constexpr std::array<const char*, 5> kRouteFields = {
    "/spec/source", "/spec/destination", "/status/conditions",
    "/status/tokenStatus/destinationTokens", "/metadata/annotations/kuscia-host~1observed"};
constexpr int64_t kSecond = 1000000000;

std::string timeText(int64_t ns) {
  return sdk::formatTime(ns, sdk::TimePrecision::kAsGiven);
}

} // namespace

sdk::Subscription routeSubscription() {
  sdk::Subscription s;
  s.group = kKusciaGroup;
  s.version = kKusciaVersion;
  s.resource = kClusterDomainRoutes;
  s.scope = KH_SCOPE_ALL;
  s.fields.assign(kRouteFields.begin(), kRouteFields.end());
  return s;
}

Route routeOfFields(std::string_view key, std::string_view fieldsJson) {
  const json f = parseFields(fieldsJson, kRouteFields.size());
  Route r;
  r.name = std::string(nameOf(key));
  r.source = fieldString(f, 0);
  r.destination = fieldString(f, 1);
  json status = {{"conditions", f[2]}};
  const auto conditions = control::conditionsOf(status);
  if (const control::Condition* ready = control::conditionOf(conditions, "Ready")) {
    r.hasReady = true;
    r.ready = ready->isTrue();
    r.reason = ready->reason;
  }
  if (f[3].is_array())
    for (const auto& token : f[3])
      if (auto beat = timeIn(token, "heartBeatTime");
          beat && (!r.lastHeartbeat || *beat > *r.lastHeartbeat))
        r.lastHeartbeat = beat;
  r.observed = fieldString(f, 4);
  return r;
}

Route routeOf(const json& object) {
  json fields = json::array();
  for (const char* f : kRouteFields) {
    const json::json_pointer p(f);
    fields.push_back(object.contains(p) ? object.at(p) : json());
  }
  return routeOfFields(textOf(objectOf(object, "metadata"), "name"), fields.dump());
}

std::vector<Outage> outagesOf(std::string_view annotation) {
  std::vector<Outage> out;
  if (annotation.empty()) return out;
  const json j = json::parse(annotation, nullptr, false);
  if (!j.is_object() || j.value("v", 0) != 1) return out;
  for (const auto& o : arrayOf(j, "outages")) {
    if (!o.is_object()) continue;
    Outage x;
    x.since = timeIn(o, "since");
    x.until = timeIn(o, "until");
    x.reason = boundedText(textOf(o, "reason"), 128);
    x.ended = x.until.has_value() || o.value("ended", false);
    out.push_back(std::move(x));
  }
  if (out.size() > kKeptOutages) out.erase(out.begin(), out.end() - kKeptOutages);
  return out;
}

std::string outagesText(const std::vector<Outage>& outages) {
  json list = json::array();
  for (const Outage& o : outages) {
    json j = json::object();
    if (o.since) j["since"] = timeText(*o.since);
    if (o.until) j["until"] = timeText(*o.until);
    if (o.ended && !o.until) j["ended"] = true;
    if (!o.reason.empty()) j["reason"] = boundedText(o.reason, 128);
    list.push_back(std::move(j));
  }
  return json{{"v", 1}, {"outages", std::move(list)}}.dump();
}

std::string outagesPatch(const std::vector<Outage>& outages) {
  return json{{"metadata", {{"annotations", {{kObservedAnnotation, outagesText(outages)}}}}}}
      .dump();
}

bool observe(std::vector<Outage>& outages, const Route& route, int64_t nowNanos, bool watched) {
  if (!route.hasReady) return false;
  // Whole seconds, as Kuscia writes the times the observation is compared with.
  nowNanos -= nowNanos % kSecond;
  const bool open = !outages.empty() && !outages.back().ended;
  if (!route.ready) {
    if (open) return false;
    Outage o;
    if (watched) o.since = nowNanos;
    o.reason = boundedText(route.reason, 128);
    outages.push_back(std::move(o));
    if (outages.size() > kKeptOutages) outages.erase(outages.begin());
    return true;
  }
  if (!open) return false;
  outages.back().ended = true;
  if (watched) outages.back().until = nowNanos;
  return true;
}

std::string routeNamed(std::string_view message) {
  // The pair RouteNotReady names, "<src>-<dst>": the route's own name.
  failure::Evidence e;
  e.message = std::string(message);
  return failure::namedIn(failure::Reason::kRouteNotReady, e).pair;
}

json outageAt(const Route& r, const std::vector<Outage>& outages,
              std::optional<int64_t> endedNanos) {
  // The host's observation lags the API server's write by the watch's delay: an outage seen to
  // begin a moment after the task failed on it still held then.
  constexpr int64_t kLag = 2 * kSecond;
  for (std::size_t i = outages.size(); i-- > 0;) { // the latest first
    const Outage& o = outages[i];
    if (endedNanos && o.since && *o.since > *endedNanos + kLag) continue;
    if (endedNanos && o.until && *o.until + kSecond < *endedNanos) break; // older ones ended too
    if (!endedNanos && o.ended) break;
    json j = {{"route", r.name}};
    if (!o.reason.empty()) j["reason"] = o.reason;
    if (o.since) j["since"] = timeText(*o.since);
    if (o.until) j["until"] = timeText(*o.until);
    if (o.since || o.until) {
      j["observed"] = true;
      j["precisionSeconds"] = kObservedPrecisionSeconds;
    }
    if (r.lastHeartbeat) j["lastHeartbeatTime"] = timeText(*r.lastHeartbeat);
    return j;
  }
  return nullptr;
}

std::string Routes::onEvent(const sdk::Event& e) {
  if (e.type == KH_EVENT_SYNCED) return {};
  std::string name(nameOf(e.key));
  if (e.type == KH_EVENT_DELETED) {
    routes_.erase(name);
    return name;
  }
  routes_[name] = routeOfFields(e.key, e.fieldsJson);
  return name;
}

const Route* Routes::route(const std::string& name) const {
  auto it = routes_.find(name);
  return it == routes_.end() ? nullptr : &it->second;
}

json Routes::outageFor(std::string_view message, std::optional<int64_t> ended) const {
  const std::string name = routeNamed(message);
  const Route* r = name.empty() ? nullptr : route(name);
  return r == nullptr ? json() : outageAt(*r, outagesOf(r->observed), ended);
}

} // namespace kuscia_host::model::route
