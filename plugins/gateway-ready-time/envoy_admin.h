// Reading Envoy's admin API (GET /clusters?format=json) for gateway-ready-time's envoy-admin
// source. Callbacks must not block, so a poller thread of the plugin's own does the blocking
// HTTP/1.1 GETs (plain sockets, timeouts, backoff on failure) and publishes the set of cluster
// names; the plugin reads the latest set on its executor.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

namespace kuscia_host::plugins::gateway {

struct HttpUrl {
  std::string host;
  uint16_t port = 80;
  std::string basePath; // without a trailing '/'
};
// http://host[:port][/path]; nullopt for anything else (https is not spoken here).
std::optional<HttpUrl> parseHttpUrl(const std::string& url);

// The cluster names in a /clusters?format=json answer ({"cluster_statuses":[{"name":...}]});
// nullopt when the body is not that shape.
std::optional<std::set<std::string>> parseClusterNames(const std::string& body);

// One blocking GET with a timeout; the body of a 200, nullopt otherwise (`error` says why).
std::optional<std::string> httpGet(const HttpUrl& url, const std::string& path, int timeoutMillis,
                                   std::string& error);

class EnvoyAdminPoller {
public:
  EnvoyAdminPoller(HttpUrl url, int64_t intervalMillis, int64_t maxBackoffMillis);
  ~EnvoyAdminPoller();
  EnvoyAdminPoller(const EnvoyAdminPoller&) = delete;
  EnvoyAdminPoller& operator=(const EnvoyAdminPoller&) = delete;

  void start();
  void stop(); // joins the thread

  // The clusters of the last successful read (nullopt before the first), and the last error.
  std::optional<std::set<std::string>> clusters() const;
  std::string lastError() const;

private:
  void run();

  HttpUrl url_;
  int64_t intervalMillis_;
  int64_t maxBackoffMillis_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::optional<std::set<std::string>> clusters_;
  std::string lastError_;
  std::thread thread_;
};

} // namespace kuscia_host::plugins::gateway
