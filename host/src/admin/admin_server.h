// The admin HTTP server: /livez, /readyz, /metrics and whatever routes components add, on the
// shared HTTP server (httpd/), plain or TLS. Loopback by default. GET and HEAD only. With
// authentication (admin_auth.h) every path but /livez and /readyz needs an identity allowed to
// get it; /readyz says more than ok or not (?verbose) only to one.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <functional>
#include <map>
#include <memory>
#include <spdlog/logger.h>
#include <string>
#include <vector>

#include "admin/admin_auth.h"
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
// `detailed`: the failing checks (and with ?verbose every check); otherwise only ok or not ok.
HttpResponse readyzResponse(const HealthRegistry& health, const HttpRequest& req,
                            bool detailed = true);
// In the format the request's Accept asks for (metricsFormatFor).
HttpResponse metricsResponse(const MetricsRegistry& metrics, const HttpRequest& req);

// The warning to log when the admin server listens on `address` without authentication, "" for
// a loopback address: /metrics and the plugins' routes are open to whoever reaches it.
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

  // Who may read it (before listen()); none by default.
  void setAuth(std::shared_ptr<AdminAuth> auth) { auth_ = std::move(auth); }
  bool authEnabled() const { return auth_ && auth_->enabled(); }

  // Binds and starts accepting on "host:port" (port 0: any free port), HTTPS with `tls`; returns
  // the bound endpoint.
  Result<boost::asio::ip::tcp::endpoint>
  listen(const std::string& address, std::shared_ptr<boost::asio::ssl::context> tls = nullptr);
  // A renewed certificate for the connections accepted from now on (httpd::Server::setTls).
  void setTls(std::shared_ptr<boost::asio::ssl::context> tls);
  void stop();

  // Dispatches one request to its route (GET/HEAD only); `reply` runs once. Used by the server
  // and tests.
  void dispatch(const HttpRequest& req, std::function<void(HttpResponse)> reply) const;
  // The same, for synchronous routes only (tests).
  HttpResponse dispatch(const HttpRequest& req) const;

private:
  void route(const HttpRequest& req, std::function<void(HttpResponse)> reply) const;

  boost::asio::io_context& io_;
  std::shared_ptr<spdlog::logger> logger_;
  std::map<std::string, AsyncHttpHandler> exact_;
  std::vector<std::pair<std::string, AsyncHttpHandler>> prefixes_;
  std::shared_ptr<AdminAuth> auth_;
  std::unique_ptr<httpd::Server> server_;
};

} // namespace kuscia_host
