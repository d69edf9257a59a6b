// When a ClusterDomainRoute was down, for a task its route pre-check failed (RouteNotReady;
// docs/design/control-plane.md, "Times Kuscia does not write").
//
// During an outage Kuscia re-stamps the route's Ready condition at every sync, so its
// lastTransitionTime says when the route was last found not ready, not when it went down. The
// host observes it: task-timeline's watch sees the Ready condition turn False (the host's clock,
// to the second: "observed", with its precision) and True again, and keeps the route's last
// outages on the route (annotation kuscia-host/observed) so that a restarted host, task-history,
// otel-export and the CLI read the same. A route found down when the host started, with no
// outage kept, has an outage with no start: never guessed. Beside it, what the route itself
// says: its destination tokens' last heartbeat (HeartBeatTimeout: the partner's gateway stopped
// heartbeating after it).
//
// A document of a task that failed on a route carries "routeOutage": {"route": "<src>-<dst>",
// "reason", "since", "until" (each when known; "observed": true, "precisionSeconds"),
// "lastHeartbeatTime"}: the route's outage that held at the task's end.
#pragma once

#include <kuscia_host/plugin.hpp>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kuscia_host::model::route {

inline constexpr const char* kClusterDomainRoutes = "clusterdomainroutes";
inline constexpr const char* kObservedAnnotation = "kuscia-host/observed";
// The outages kept on a route: the latest ones.
inline constexpr std::size_t kKeptOutages = 8;
inline constexpr double kObservedPrecisionSeconds = 1;

struct Outage {
  std::optional<int64_t> since, until; // observed (wall-clock nanoseconds, whole seconds)
  std::string reason;                  // the Ready condition's reason when it went down
  bool ended = false;                  // the route was seen ready again (`until` when dated)
  bool operator==(const Outage&) const = default;
};

// A ClusterDomainRoute as the subscription's fields give it.
struct Route {
  std::string name, source, destination;
  bool hasReady = false, ready = false; // its Ready condition, and whether it is True
  std::string reason;                   // the Ready condition's reason
  std::optional<int64_t> lastHeartbeat; // the latest heartBeatTime of its destination tokens
  std::string observed;                 // the annotation's value ("" none)
};

// The subscription to every ClusterDomainRoute (cluster-scoped), and a route from its event's or
// cached object's key and fields.
sdk::Subscription routeSubscription();
Route routeOfFields(std::string_view key, std::string_view fieldsJson);
// A route from its whole object (the CLI reads it from the cluster).
Route routeOf(const nlohmann::json& object);

// The outages of an annotation's value ({"v": 1, "outages": [{"since", "until", "reason"}]},
// oldest first); none when absent or not one this version reads.
std::vector<Outage> outagesOf(std::string_view annotation);
std::string outagesText(const std::vector<Outage>& outages);
// The merge patch of the route's metadata that keeps them.
std::string outagesPatch(const std::vector<Outage>& outages);

// Takes in the route as seen at `nowNanos`: a Ready that turned False opens an outage, a True
// one ends the open one; each dated when `watched` (this run saw the route before, in the other
// state). Whether `outages` changed.
bool observe(std::vector<Outage>& outages, const Route& route, int64_t nowNanos, bool watched);

// The route a pre-check failure's message names ("cdr-check <src> to <dst> failed with ..."):
// "<src>-<dst>", as Kuscia names ClusterDomainRoutes; "" when it names none.
std::string routeNamed(std::string_view message);

// The document's "routeOutage" for a task that ended at `endedNanos` (or now, when not ended)
// on the route `r` with these outages: the outage that held then (the latest that began before,
// and had not ended a second before); null when none did.
nlohmann::json outageAt(const Route& r, const std::vector<Outage>& outages,
                        std::optional<int64_t> endedNanos);

// The routes of a subscription's events, with their outages (as kept on them, under what the
// owner observed): what a document's "routeOutage" comes from.
class Routes {
public:
  // The route the event changed ("" none).
  std::string onEvent(const sdk::Event& e);
  const Route* route(const std::string& name) const;
  // The document's "routeOutage" for a task whose status says `message` and ended at `ended`
  // (null when its message names no route, or no outage of it held).
  nlohmann::json outageFor(std::string_view message, std::optional<int64_t> ended) const;

private:
  std::map<std::string, Route, std::less<>> routes_;
};

} // namespace kuscia_host::model::route
