// The admin HTTP server: /livez, /readyz, /metrics and whatever routes components add, on the
// shared HTTP server (httpd/). Loopback by default. GET and HEAD only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <functional>
#include <map>
#include <memory>
#include <spdlog/logger.h>
#include <string>
#include <vector>

#include "common/result.h"
#include "httpd/server.h"
#include "metrics/registry.h"
#include "runtime/health.h"

namespace kuscia_host {

using HttpRequest = httpd::Request;
using HttpResponse = httpd::Response;
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;
// A handler that answers later, from any thread, by calling `reply` once.
using AsyncHttpHandler =
    std::function<void(const HttpRequest&, std::function<void(HttpResponse)> reply)>;

// The standard endpoints.
HttpResponse livezResponse();
HttpResponse readyzResponse(const HealthRegistry& health, const HttpRequest& req);
HttpResponse metricsResponse(const MetricsRegistry& metrics);

// The warning to log when the admin server listens on `address`, "" for a loopback address. The
// admin server has no authentication: /metrics and the plugins' routes are open to
// whoever reaches the address.
std::string exposureWarning(const boost::asio::ip::address& address);

class AdminServer {
public:
  AdminServer(boost::asio::io_context& io, std::shared_ptr<spdlog::logger> logger);
  ~AdminServer();
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  // Routes; register before listen(). An exact path wins over a prefix.
  void route(const std::string& path, HttpHandler handler);
  void routePrefix(const std::string& prefix, HttpHandler handler);
  void routePrefix(const std::string& prefix, AsyncHttpHandler handler);

  // Binds and starts accepting on "host:port" (port 0: any free port); returns the bound endpoint.
  Result<boost::asio::ip::tcp::endpoint> listen(const std::string& address);
  void stop();

  // Dispatches one request to its route (GET/HEAD only); `reply` runs once. Used by the server
  // and tests.
  void dispatch(const HttpRequest& req, std::function<void(HttpResponse)> reply) const;
  // The same, for synchronous routes only (tests).
  HttpResponse dispatch(const HttpRequest& req) const;

private:
  std::map<std::string, AsyncHttpHandler> exact_;
  std::vector<std::pair<std::string, AsyncHttpHandler>> prefixes_;
  httpd::Server server_;
};

} // namespace kuscia_host
