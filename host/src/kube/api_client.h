// Requests to the API server other than watches: client-side rate limited (token bucket, qps and
// burst from config; never applied to watches), retried on 429/5xx/connection errors (Retry-After
// honoured, up to `maxRetries` times as client-go), and measured (latency by verb and code,
// rate-limiter wait, retries).
#pragma once

#include <boost/asio/io_context.hpp>

#include <atomic>
#include <deque>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <spdlog/logger.h>
#include <string>

#include "kube/http_client.h"
#include "kube/rate_limiter.h"
#include "metrics/registry.h"

namespace kuscia_host::kube {

// The host's Kubernetes client metrics.
struct KubeMetrics {
  explicit KubeMetrics(MetricsRegistry& registry);
  MetricFamily* watchRestarts;
  MetricFamily* relists;
  MetricFamily* events;
  MetricFamily* decodeErrors;
  MetricFamily* objectsCached;
  MetricFamily* bytesCached;
  MetricFamily* packedCached;
  MetricFamily* forgottenCached;
  MetricFamily* requestDuration;
  MetricFamily* requestRetries;
  MetricFamily* rateLimiterWait;
};

struct ApiCall {
  std::string verb; // for metrics: list, get, create, patch, delete
  HttpRequest http;
  bool rateLimited = true;
  int maxRetries = 10; // -1: until the answer is final or `abandoned` says so
  // Whether the caller no longer wants the answer (checked before each retry); may be empty.
  std::function<bool()> abandoned;
};

class ApiClient : public std::enable_shared_from_this<ApiClient> {
public:
  // Rate-limited calls (writes) in flight at once, at most; more wait in the queue. As many as
  // the transport's connections carry pipelined (writes made together share a connection): a
  // burst of writes reuses those connections instead of opening one per write.
  static constexpr int kMaxInFlight =
      static_cast<int>(BeastHttpClient::kMaxConnections * BeastHttpClient::kPipelineDepth);

  ApiClient(boost::asio::io_context& io, std::shared_ptr<HttpTransport> transport, double qps,
            int burst, const Clock& clock, KubeMetrics& metrics,
            std::shared_ptr<spdlog::logger> logger);

  // `done` runs once on an io thread with the final response (any status) or the last
  // transport error.
  void call(ApiCall call, std::function<void(Result<HttpResponse>)> done);
  // A watch: neither rate limited nor retried (the reflector decides). onData and done run on
  // `strand`.
  std::shared_ptr<HttpTransport::Stream> watch(HttpRequest request, HttpTransport::Strand strand,
                                               std::function<void(std::string_view)> onData,
                                               std::function<void(Result<HttpResponse>)> done);
  // Stops retrying; calls still waiting fail with "shutting down".
  void stop() { stopped_ = true; }

private:
  // Retry policy: the delay before attempt `attempt` (1-based) after a response or failure;
  // negative = do not retry.
  static std::chrono::milliseconds retryDelay(const Result<HttpResponse>& r, int attempt,
                                              int maxRetries);

  void attempt(const std::shared_ptr<ApiCall>& call, int n,
               const std::shared_ptr<std::function<void(Result<HttpResponse>)>>& done);
  void send(const std::shared_ptr<ApiCall>& call, int n,
            const std::shared_ptr<std::function<void(Result<HttpResponse>)>>& done);

  struct Queued {
    std::shared_ptr<ApiCall> call;
    int attempt;
    std::shared_ptr<std::function<void(Result<HttpResponse>)>> done;
    int64_t since; // monotonic ns when it started waiting for a token
  };
  // Sends queued rate-limited calls while tokens and in-flight room are available; arms one
  // timer when tokens are out (a completing call pumps again).
  void pump();
  // A rate-limited call sent by pump() was answered (or not sent after all): its room is free.
  void releaseRoom();

  boost::asio::io_context& io_;
  std::shared_ptr<HttpTransport> transport_;
  const Clock& clock_;
  RateLimiter limiter_;
  KubeMetrics& metrics_;
  std::shared_ptr<spdlog::logger> logger_;
  std::atomic<bool> stopped_{false};
  std::mutex queueMu_;
  std::deque<Queued> queue_;
  bool timerArmed_ = false;
  int inFlight_ = 0; // rate-limited calls sent and not yet answered
};

} // namespace kuscia_host::kube
