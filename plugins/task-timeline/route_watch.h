// task-timeline's watch of the ClusterDomainRoutes (kuscia_model/route_outage.h): it observes
// when each route went down and came back (Kuscia re-stamps the Ready condition at every sync of
// an outage, so the route does not say), keeps the latest outages on the route (annotation
// kuscia-host/observed: one merge patch of its metadata, by the instance that counts the route's
// source), and gives a task that failed on a route its outage.
#pragma once

#include <kuscia_host/plugin.hpp>
#include <kuscia_model/route_outage.h>

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kuscia_host::plugins::timeline {

class RouteWatch {
public:
  // `writes(source)`: whether this instance keeps the outages of a route from that domain.
  using Writes = std::function<bool(const std::string& source)>;
  RouteWatch(sdk::Host host, Writes writes);

  uint64_t subscription() const { return sub_; }
  void onEvent(const sdk::Event& e);
  // Whether the result was one of its writes.
  bool onKubeResult(const sdk::KubeResult& r);
  // The document's "routeOutage" of a task whose status says `message` and ended at `ended`.
  nlohmann::json outageFor(std::string_view message, std::optional<int64_t> ended) const;
  static constexpr uint64_t kWriteTag = 3;

private:
  struct Held {
    model::route::Route route;
    std::vector<model::route::Outage> outages; // kept and observed
  };

  sdk::Host host_;
  Writes writes_;
  uint64_t sub_ = 0;
  std::map<std::string, Held, std::less<>> routes_;
  sdk::Metric writeResults_;
  bool loggedFailure_ = false;
};

} // namespace kuscia_host::plugins::timeline
