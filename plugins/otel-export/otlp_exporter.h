// The OTLP/HTTP exporter: a bounded queue of spans and a worker thread of its own that batches
// them (batchMaxSpans per request, at most batchDelayMillis of waiting), encodes, gzips and POSTs
// them, so that export never blocks the plugin's event handling.
//
// As the OTLP specification says: 2xx is success, and a partial success in its body counts the
// rejected spans as failed without a retry; 429, 502, 503 and 504 (and no connection, or no
// answer within timeoutMillis) are retried with exponential backoff from retryInitialMillis up to
// retryMaxMillis, a Retry-After header (seconds or an HTTP date) taking precedence, until
// retryGiveUpSeconds; any other status, and a TLS handshake refused on the certificate, fail the
// batch at once. While a batch is retried, new
// spans queue; beyond queueMaxSpans the oldest are dropped and counted.
//
// The worker never calls the host: counters and the failure episode are read by the plugin on its
// own executor (snapshot()).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "otel_config.h"
#include "otlp_encode.h"

namespace kuscia_host::plugins::otel {

// One POST's outcome: the HTTP status (0 when there was no answer) and what was read.
struct PostResult {
  int status = 0;
  std::string body;
  std::string retryAfter; // the Retry-After header, as sent
  std::string error;      // why there was no answer
  bool permanent = false; // it cannot go better by retrying (the receiver's certificate refused)
};

// The wait a Retry-After value asks for (delta-seconds or an IMF-fixdate); nullopt when it is
// neither.
std::optional<std::chrono::milliseconds> retryAfterDelay(std::string_view value,
                                                         std::chrono::system_clock::time_point now);

// The resource (service.name, service.version, kuscia.domain, kuscia.deployment.mode) and scope
// of one domain's exporter.
inline constexpr const char* kOtelExportVersion = "0.1.0";
ResourceInfo resourceOf(const OtelConfig& config, std::string_view domain, std::string_view mode);

// gzip (RFC 1952) of `data`.
std::string gzip(std::string_view data);

class OtlpExporter {
public:
  struct Counters {
    uint64_t exported = 0, failed = 0, dropped = 0, requests = 0, retries = 0;
    std::size_t queueDepth = 0;
    // Failures in a row end an episode when a request succeeds: `episode` counts the episodes
    // begun, `failing` says whether one is going on, `lastError` why.
    uint64_t episode = 0;
    bool failing = false;
    std::string lastError;
    std::string lastPartial; // the last partial success's message
    uint64_t partials = 0;
  };

  OtlpExporter(OtelConfig config, ResourceInfo resource);
  ~OtlpExporter();
  OtlpExporter(const OtlpExporter&) = delete;
  OtlpExporter& operator=(const OtlpExporter&) = delete;

  void start();
  // Sends what is queued within one more request's timeout, then stops the worker.
  void stop();
  // Queues spans; never blocks on the network.
  void enqueue(std::vector<SpanData> spans);
  Counters snapshot() const;

  // One POST of an encoded body (exposed for tests); honours stop().
  PostResult post(const std::string& body);

private:
  void run();
  // Sends one batch to the end: success, failure or give-up. Returns false when stopping.
  void sendBatch(const std::vector<SpanData>& batch);
  // Waits `d` unless stopping; false when stopping.
  bool pause(std::chrono::milliseconds d);

  OtelConfig config_;
  ResourceInfo resource_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<SpanData> queue_;
  std::chrono::steady_clock::time_point oldest_{};
  bool stopping_ = false;
  bool draining_ = false;
  bool exited_ = false;
  Counters counters_;
  std::function<void()> cancel_; // interrupts the request in flight
  std::thread thread_;
};

} // namespace kuscia_host::plugins::otel
