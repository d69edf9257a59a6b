// The embedded Kubernetes-compatible API server: HTTP/1.1 (plain on loopback, or TLS with a
// generated CA and a bearer token), Kubernetes paths and verbs (api.h), watch streams, a
// kubeconfig for clients, and fault injection for tests. State is in memory only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <spdlog/logger.h>
#include <string>
#include <vector>

#include "apiserver/api.h"
#include "apiserver/resources.h"
#include "apiserver/store.h"
#include "common/result.h"
#include "httpd/server.h"
#include "runtime/clock.h"

namespace kuscia_host::apiserver {

struct ServerOptions {
  std::string listen = "127.0.0.1:0";
  bool tls = false;            // HTTPS with a CA and server certificate generated at start
  std::string token;           // with tls: the bearer token clients must send ("" = generate one)
  std::string clientCaPem;     // with tls: client certificates signed by this CA also authenticate
  bool faultInjection = false; // serve /debug/faults/* and apply faults() (tests only)
  std::size_t historyLimit = 10000;
  ApiOptions api;
};

// Test-only fault injection. Every knob is off until set.
class Faults {
public:
  struct Rule {
    std::string pathPrefix;
    int status = 500;
    int remaining = 1;
    int retryAfterSeconds = -1; // >= 0: sent as Retry-After
    std::string method;         // "" = any method
    bool watchOnly = false;     // only watch requests (?watch=true)
  };
  void respond(Rule rule);
  void setLatency(std::chrono::milliseconds latency) { latencyMs_ = latency.count(); }
  std::chrono::milliseconds latency() const { return std::chrono::milliseconds(latencyMs_.load()); }
  void reset();
  // The rule matching `path`, consuming one of its uses.
  std::optional<Rule> take(const std::string& method, const std::string& path, bool watch);

private:
  std::mutex mu_;
  std::vector<Rule> rules_;
  std::atomic<int64_t> latencyMs_{0};
};

class ApiServer {
public:
  ApiServer(boost::asio::io_context& io, const Clock& clock, std::shared_ptr<spdlog::logger> logger,
            ServerOptions options);
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Binds and starts accepting; the namespaces `default` and `kube-system` exist from the start.
  Result<boost::asio::ip::tcp::endpoint> start();
  // Stops accepting and closes every connection, kept-alive and watching ones included, as a
  // server going down does. The store survives: start() again is a restart.
  void stop();

  // Whether it accepts connections (between start() and stop()).
  bool serving() const { return http_ && http_->listening(); }
  // Connections accepted (tests: whether clients reuse theirs).
  uint64_t connectionsAccepted() const { return http_ ? http_->connectionsAccepted() : 0; }
  // "http://127.0.0.1:PORT" or "https://..."
  std::string url() const;
  // A kubeconfig (YAML) that kubectl, client libraries and kuscia-host can use.
  std::string kubeconfig() const;
  Result<void> writeKubeconfig(const std::string& path) const;
  const std::string& token() const { return token_; }
  const std::string& caPem() const { return caPem_; }

  Store& store() { return store_; }
  Faults& faults() { return faults_; }
  const ResourceRegistry& registry() const { return registry_; }

private:
  // Generates the CA and a server certificate for `address`, and the token.
  Result<void> setUpTls(const std::string& address);
  void onRequest(ApiRequest req, const std::shared_ptr<httpd::Exchange>& exchange);
  // Answers through the API handler; a request waiting for a newer resourceVersion is handled
  // again until the store reaches it or `deadline` (steady clock) passes.
  void serve(const ApiRequest& req, const std::shared_ptr<httpd::Exchange>& exchange,
             std::chrono::steady_clock::time_point deadline);
  // Handles /debug/faults/* when enabled; nullopt for any other path.
  std::optional<ApiResponse> faultEndpoint(const ApiRequest& req);
  bool authorized(const ApiRequest& req) const;

  boost::asio::io_context& io_;
  const Clock& clock_;
  std::shared_ptr<spdlog::logger> logger_;
  ServerOptions options_;
  ResourceRegistry registry_;
  Store store_;
  ApiHandler handler_;
  Faults faults_;
  std::shared_ptr<boost::asio::ssl::context> ssl_;
  std::unique_ptr<httpd::Server> http_;
  boost::asio::ip::tcp::endpoint endpoint_;
  std::string token_;
  std::string caPem_;
};

} // namespace kuscia_host::apiserver
