#include "route_watch.h"

#include <kuscia_model/kuscia.h>
#include <kuscia_model/kuscia_model.h>

#include <utility>

namespace kuscia_host::plugins::timeline {

using nlohmann::json;
namespace route = model::route;

RouteWatch::RouteWatch(sdk::Host host, Writes writes)
    : host_(host), writes_(std::move(writes)),
      writeResults_(host.counter("kuscia_timeline_route_observation_writes_total",
                                 "Writes of a ClusterDomainRoute's observed outages onto the "
                                 "route (ok, failed)",
                                 {"outcome"})) {
  sub_ = host_.subscribe(route::routeSubscription());
}

void RouteWatch::onEvent(const sdk::Event& e) {
  if (e.type == KH_EVENT_SYNCED) return;
  const std::string name(model::nameOf(e.key));
  if (e.type == KH_EVENT_DELETED) {
    routes_.erase(name);
    return;
  }
  route::Route r = route::routeOfFields(e.key, e.fieldsJson);
  auto [it, fresh] = routes_.try_emplace(name);
  Held& h = it->second;
  if (fresh || r.observed != h.route.observed) {
    // What a previous run (or another instance) kept, where this run has not observed more.
    std::vector<route::Outage> kept = route::outagesOf(r.observed);
    if (kept.size() >= h.outages.size()) h.outages = std::move(kept);
  }
  // Dated only when this run saw the route before (ready, or not yet checked by its controller):
  // a route first seen down went down at a time this run did not see.
  const bool watched = !fresh;
  const bool changed = route::observe(h.outages, r, host_.wallTimeNanos(), watched);
  h.route = std::move(r);
  if (!changed || !writes_(h.route.source) || route::outagesText(h.outages) == h.route.observed)
    return;
  sdk::KubeRequest req = model::kusciaMergePatch(route::kClusterDomainRoutes, "", name, "",
                                                 route::outagesPatch(h.outages));
  req.userTag = kWriteTag;
  try {
    host_.kubeRequest(req);
  } catch (const sdk::HostError& err) {
    writeResults_.add(1, {"failed"});
    host_.debug("route " + name + ": outages not written: " + err.what());
  }
}

bool RouteWatch::onKubeResult(const sdk::KubeResult& r) {
  if (r.userTag != kWriteTag) return false;
  const bool ok = r.httpCode >= 200 && r.httpCode < 300;
  writeResults_.add(1, {ok ? "ok" : "failed"});
  if (!ok && r.httpCode != 404 && !loggedFailure_) {
    loggedFailure_ = true; // once: the next change tries again
    host_.warn("writing a route's observed outages failed (" + std::to_string(r.httpCode) +
               "): " + std::string(r.message));
  }
  return true;
}

json RouteWatch::outageFor(std::string_view message, std::optional<int64_t> ended) const {
  const std::string name = route::routeNamed(message);
  auto it = name.empty() ? routes_.end() : routes_.find(name);
  return it == routes_.end() ? json()
                             : route::outageAt(it->second.route, it->second.outages, ended);
}

} // namespace kuscia_host::plugins::timeline
