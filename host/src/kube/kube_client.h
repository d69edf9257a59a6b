// KubeClient: the host's single connection to the cluster. Plugin subscriptions are grouped
// into shared informers (one per resource; namespaced when every subscriber of the resource
// watches the same namespace, cluster-wide otherwise), the cache is read through them, and plugin
// writes go through the rate-limited, retrying ApiClient.
#pragma once

#include <boost/asio/io_context.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <spdlog/logger.h>
#include <string>
#include <vector>

#include "common/defaults.h"
#include "common/result.h"
#include "kube/api_client.h"
#include "kube/cluster_access.h"
#include "kube/informer.h"
#include "metrics/registry.h"
#include "runtime/clock.h"
#include "runtime/health.h"

namespace kuscia_host::kube {

// A plugin write (kh_kube_request_t, copied).
struct KubeRequest {
  enum class Verb { kPatch, kCreate, kDelete };
  enum class PatchType { kMerge, kJson };
  Verb verb = Verb::kPatch;
  std::string group, version, resource, namespaceName, name, subresource;
  PatchType patchType = PatchType::kMerge;
  std::string body;
  std::string resourceVersion; // precondition, optional
  // Transient failures (429, 5xx, no answer) are retried until the answer is final or this says
  // the requester is gone (may be empty: then until the client stops).
  std::function<bool()> abandoned;
};

struct KubeResult {
  int httpCode = 0; // 0: no HTTP answer (message says why)
  std::string body;
  std::string message; // Status.message on failure, "" on success
};

struct KubeClientOptions {
  double qps = defaults::kQps;
  int burst = defaults::kBurst;
  ReflectorOptions reflector;
};

class KubeClient {
public:
  // Builds the transport for `access` (fails on unusable TLS material).
  static Result<std::unique_ptr<KubeClient>>
  create(boost::asio::io_context& io, const ClusterAccess& access, KubeClientOptions options,
         const Clock& clock, MetricsRegistry& metrics, std::shared_ptr<spdlog::logger> logger);
  // With a given transport (tests).
  KubeClient(boost::asio::io_context& io, std::shared_ptr<HttpTransport> transport,
             KubeClientOptions options, const Clock& clock, MetricsRegistry& metrics,
             std::shared_ptr<spdlog::logger> logger);
  ~KubeClient();

  // Before start() only. Validates the spec (selector, pointers); returns the subscription id.
  Result<uint64_t> subscribe(SubscriptionSpec spec, Subscription::Sink sink);
  // Creates the informers, registers their readiness checks ("informer:<id>") and starts them.
  void start(HealthRegistry& health);
  void stop();

  // The subscription and the informer serving it (nullptr before start or if unknown).
  std::pair<std::shared_ptr<Informer>, std::shared_ptr<Subscription>> find(uint64_t id) const;
  const std::vector<std::shared_ptr<Informer>>& informers() const { return informers_; }

  // Checks and sends a request (a write); `done` runs once, on an io thread. Errors: invalid.
  Result<void> request(const KubeRequest& w, std::function<void(KubeResult)> done);
  // The request path and body a write becomes (exposed for tests).
  static Result<HttpRequest> toHttp(const KubeRequest& w);

  ApiClient& api() { return *api_; }
  KubeMetrics& metrics() { return metrics_; }

private:
  struct Pending {
    uint64_t id;
    SubscriptionSpec spec;
    Subscription::Sink sink;
  };
  boost::asio::io_context& io_;
  const Clock& clock_;
  KubeClientOptions options_;
  std::shared_ptr<spdlog::logger> logger_;
  KubeMetrics metrics_;
  std::shared_ptr<ApiClient> api_;
  mutable std::mutex mu_;
  bool started_ = false;
  uint64_t nextId_ = 0;
  std::vector<Pending> pending_;
  std::vector<std::shared_ptr<Informer>> informers_;
  std::map<uint64_t, std::pair<std::shared_ptr<Informer>, std::shared_ptr<Subscription>>> subs_;
};

} // namespace kuscia_host::kube
