// Admin routes served by plugin instances (ABI 1.1). Instances register path prefixes from
// on_create; the daemon mounts each prefix on the admin server. A request goes to every instance
// that registered its prefix, each on its own executor; one answer comes back: the single
// instance's, or, with several (one plugin in several domains, centralized mode), their 2xx JSON
// objects merged as RFC 7386 merge patches in registration order, 404 when all said 404. An
// instance that does not answer in time makes the request a 503; answers over the size limit a
// 500.
#pragma once

#include <kuscia_host/abi.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/result.h"

namespace kuscia_host {

struct RouteAnswer {
  int status = 500;
  std::string contentType = "application/json";
  std::string body;
};

// What an on_http_request answered through http_respond; plugins see it as the opaque
// kh_http_response_t. One lives on the stack for the callback; http_defer (ABI 1.4) moves `done`
// into one on the heap, which http_respond answers through and frees.
struct RouteResponse {
  int32_t status = 500;
  std::string contentType = "application/json";
  std::string body;
  bool answered = false;
  bool deferred = false; // this stack response handed its answer to a heap one
  bool onHeap = false;   // a deferred response: http_respond answers `done` and frees it
  std::function<void(RouteAnswer)> done;

  kh_http_response_t* handle() { return reinterpret_cast<kh_http_response_t*>(this); }
  static RouteResponse* from(kh_http_response_t* h) { return reinterpret_cast<RouteResponse*>(h); }
};

struct RouteRequest {
  std::string method;
  std::string path;
  std::string query;
};

// One instance's side of a route: answers on its executor, then calls `done` (any thread).
class RouteServer {
public:
  virtual ~RouteServer() = default;
  virtual std::string routeOwner() const = 0; // "<plugin>/<domain>", for messages
  virtual std::string routePlugin() const = 0;
  virtual void serveRoute(const RouteRequest& request,
                          std::function<void(RouteAnswer answer)> done) = 0;
};

struct RouteLimits {
  std::size_t maxBodyBytes = std::size_t{8} * 1024 * 1024;
  std::chrono::milliseconds timeout{5000};
};

class PluginRoutes {
public:
  explicit PluginRoutes(RouteLimits limits = {}) : limits_(limits) {}

  // From an instance's on_create. Errors: not absolute, or overlapping another plugin's prefix.
  Result<void> add(const std::string& prefix, RouteServer* server);
  // The registered prefixes (each mounted once on the admin server).
  std::vector<std::string> prefixes() const;
  // Serves one request for `prefix`; `reply` runs once, on some thread. `arm(delay, fn)` runs fn
  // after delay (the timeout); the daemon passes a timer on its io_context.
  using Arm = std::function<void(std::chrono::milliseconds, std::function<void()>)>;
  void serve(const std::string& prefix, const RouteRequest& request,
             std::function<void(RouteAnswer)> reply, const Arm& arm) const;

  // The merge of several instances' answers (exposed for tests).
  static RouteAnswer merge(const std::vector<RouteAnswer>& answers);

private:
  RouteLimits limits_;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<RouteServer*>> routes_;
};

} // namespace kuscia_host
