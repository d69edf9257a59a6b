// The admin HTTP server (Boost.Beast): /livez, /readyz, /metrics and whatever routes components
// add. Loopback by default. Requests that do not parse get a 4xx and the connection is closed;
// nothing a client sends can stop the server.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <functional>
#include <map>
#include <memory>
#include <spdlog/logger.h>
#include <string>
#include <vector>

#include "admin/health.h"
#include "common/result.h"
#include "metrics/registry.h"

namespace kuscia_host {

struct HttpRequest {
  std::string method;
  std::string target; // as received: path and query
  std::string path;
  std::map<std::string, std::string> query;
  bool has(const std::string& param) const { return query.count(param) > 0; }
};

struct HttpResponse {
  int status = 200;
  std::string contentType = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// Splits "a=1&b" into {a:1, b:""}, percent-decoding both sides.
std::map<std::string, std::string> parseQuery(const std::string& query);

// The standard endpoints.
HttpResponse livezResponse();
HttpResponse readyzResponse(const HealthRegistry& health, const HttpRequest& req);
HttpResponse metricsResponse(const MetricsRegistry& metrics);

class AdminServer {
public:
  AdminServer(boost::asio::io_context& io, std::shared_ptr<spdlog::logger> logger);
  ~AdminServer();
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  // Routes; register before listen(). An exact path wins over a prefix.
  void route(const std::string& path, HttpHandler handler);
  void routePrefix(const std::string& prefix, HttpHandler handler);

  // Binds and starts accepting on "host:port" (port 0: any free port); returns the bound endpoint.
  Result<boost::asio::ip::tcp::endpoint> listen(const std::string& address);
  void stop();

  // Dispatches one request to its route (GET/HEAD only); used by sessions and tests.
  HttpResponse dispatch(const HttpRequest& req) const;

private:
  class Session;
  void accept(const std::shared_ptr<boost::asio::ip::tcp::acceptor>& acceptor);

  boost::asio::io_context& io_;
  std::shared_ptr<spdlog::logger> logger_;
  std::map<std::string, HttpHandler> exact_;
  std::vector<std::pair<std::string, HttpHandler>> prefixes_;
  std::shared_ptr<boost::asio::ip::tcp::acceptor> acceptor_;
};

} // namespace kuscia_host
