#include "kube/api_client.h"

#include <boost/asio/steady_timer.hpp>

#include <charconv>
#include <nlohmann/json.hpp>

namespace kuscia_host::kube {

KubeMetrics::KubeMetrics(MetricsRegistry& r)
    : watchRestarts(r.hostFamily(MetricKind::kCounter, "kuscia_host_kube_watch_restarts_total",
                                 "Watches started again after the first (normal end, error, 410)",
                                 {"informer"})),
      relists(r.hostFamily(MetricKind::kCounter, "kuscia_host_kube_relists_total",
                           "Full LISTs after the initial one (410 Expired, errors)", {"informer"})),
      events(r.hostFamily(MetricKind::kCounter, "kuscia_host_kube_events_total",
                          "Watch events received, by type", {"informer", "type"})),
      decodeErrors(r.hostFamily(MetricKind::kCounter, "kuscia_host_kube_decode_errors_total",
                                "Objects, events or frames skipped as malformed", {"informer"})),
      objectsCached(r.hostFamily(MetricKind::kGauge, "kuscia_host_kube_objects_cached",
                                 "Objects in the informer's cache", {"informer"})),
      bytesCached(r.hostFamily(MetricKind::kGauge, "kuscia_host_kube_cache_bytes",
                               "Bytes held by the informer's cached records", {"informer"})),
      packedCached(r.hostFamily(MetricKind::kGauge, "kuscia_host_kube_objects_packed",
                                "Cached objects held packed (cold, compressed)", {"informer"})),
      forgottenCached(r.hostFamily(MetricKind::kGauge, "kuscia_host_kube_objects_forgotten",
                                   "Objects every subscriber released: only a digest is kept",
                                   {"informer"})),
      requestDuration(r.hostFamily(MetricKind::kHistogram,
                                   "kuscia_host_kube_request_duration_seconds",
                                   "API requests (not watches) by verb and HTTP code "
                                   "(\"error\": no response)",
                                   {"verb", "code"})),
      requestRetries(r.hostFamily(MetricKind::kCounter, "kuscia_host_kube_request_retries_total",
                                  "API requests retried, by verb and the code that caused it",
                                  {"verb", "code"})),
      rateLimiterWait(r.hostFamily(MetricKind::kCounter,
                                   "kuscia_host_kube_rate_limiter_wait_seconds_total",
                                   "Time requests waited in the client's queue: for the rate "
                                   "limiter, or for room beyond the writes in flight",
                                   {})) {}

ApiClient::ApiClient(boost::asio::io_context& io, std::shared_ptr<HttpTransport> transport,
                     double qps, int burst, const Clock& clock, KubeMetrics& metrics,
                     std::shared_ptr<spdlog::logger> logger)
    : io_(io), transport_(std::move(transport)), clock_(clock), limiter_(qps, burst, clock),
      metrics_(metrics), logger_(std::move(logger)) {}

std::chrono::milliseconds ApiClient::retryDelay(const Result<HttpResponse>& r, int attempt,
                                                int maxRetries) {
  using std::chrono::milliseconds;
  if (maxRetries >= 0 && attempt > maxRetries) return milliseconds(-1);
  // Exponential from 200 ms, capped at 10 s, when the server gives no Retry-After.
  auto backoff = milliseconds(std::min<int64_t>(10000, int64_t{200} << std::min(attempt - 1, 10)));
  if (!r) return backoff; // connection refused, reset, timed out
  int status = r->status;
  if (status != 429 && status < 500) return milliseconds(-1);
  if (auto it = r->headers.find("retry-after"); it != r->headers.end()) {
    int seconds = 0;
    const auto& v = it->second;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), seconds);
    if (ec == std::errc() && p == v.data() + v.size() && seconds >= 0)
      return milliseconds(int64_t{std::min(seconds, 300)} * 1000);
  }
  return backoff;
}

void ApiClient::call(ApiCall c, std::function<void(Result<HttpResponse>)> done) {
  attempt(std::make_shared<ApiCall>(std::move(c)), 1,
          std::make_shared<std::function<void(Result<HttpResponse>)>>(std::move(done)));
}

void ApiClient::attempt(const std::shared_ptr<ApiCall>& c, int n,
                        const std::shared_ptr<std::function<void(Result<HttpResponse>)>>& done) {
  if (stopped_)
    return (*done)(makeError(c->http.method + " " + c->http.target + ": shutting down"));
  if (!c->rateLimited) return send(c, n, done);
  {
    std::lock_guard lock(queueMu_);
    queue_.push_back(Queued{c, n, done, clock_.monotonicNanos()});
  }
  pump();
}

void ApiClient::pump() {
  while (true) {
    Queued next;
    {
      std::lock_guard lock(queueMu_);
      if (queue_.empty() || timerArmed_ || inFlight_ >= kMaxInFlight) return;
      auto wait = limiter_.tryTake();
      if (wait.count() > 0) {
        timerArmed_ = true;
        auto timer = std::make_shared<boost::asio::steady_timer>(io_, wait);
        timer->async_wait([self = shared_from_this(), timer](const boost::system::error_code&) {
          {
            std::lock_guard relock(self->queueMu_);
            self->timerArmed_ = false;
          }
          self->pump();
        });
        return;
      }
      next = std::move(queue_.front());
      queue_.pop_front();
      ++inFlight_;
    }
    double waited = static_cast<double>(clock_.monotonicNanos() - next.since) / 1e9;
    if (waited > 0.0005) metrics_.rateLimiterWait->series({})->add(waited);
    if (stopped_) {
      releaseRoom();
      (*next.done)(
          makeError(next.call->http.method + " " + next.call->http.target + ": shutting down"));
      continue;
    }
    send(next.call, next.attempt, next.done);
  }
}

void ApiClient::releaseRoom() {
  std::lock_guard lock(queueMu_);
  --inFlight_;
}

void ApiClient::send(const std::shared_ptr<ApiCall>& c, int n,
                     const std::shared_ptr<std::function<void(Result<HttpResponse>)>>& done) {
  int64_t t0 = clock_.monotonicNanos();
  transport_->send(c->http, [self = shared_from_this(), c, n, done, t0](Result<HttpResponse> r) {
    if (c->rateLimited) {
      // Its room goes to the next queued call (this one, if retried, queues again).
      self->releaseRoom();
      self->pump();
    }
    double secs = static_cast<double>(self->clock_.monotonicNanos() - t0) / 1e9;
    std::string code = r ? std::to_string(r->status) : std::string("error");
    auto* hist = self->metrics_.requestDuration;
    hist->series({c->verb, code})->observe(hist->buckets(), secs);
    // Method, target and sizes only: headers carry the credentials and never reach a log.
    self->logger_->trace("{} {} ({} bytes) -> {} in {:.1f} ms ({} bytes)", c->http.method,
                         c->http.target, c->http.body.size(), r ? code : r.error(), secs * 1e3,
                         r ? r->body.size() : 0);
    auto delay = retryDelay(r, n, c->maxRetries);
    if (delay.count() < 0 || self->stopped_ || (c->abandoned && c->abandoned()))
      return (*done)(std::move(r));
    self->metrics_.requestRetries->series({c->verb, code})->add(1);
    self->logger_->debug("{} {}: {}; retry {}{} in {} ms", c->http.method, c->http.target,
                         r ? "HTTP " + code : r.error(), n,
                         c->maxRetries < 0 ? "" : " of " + std::to_string(c->maxRetries),
                         delay.count());
    auto timer = std::make_shared<boost::asio::steady_timer>(self->io_, delay);
    timer->async_wait([self, timer, c, n, done](const boost::system::error_code&) {
      self->attempt(c, n + 1, done);
    });
  });
}

std::shared_ptr<HttpTransport::Stream>
ApiClient::watch(HttpRequest request, HttpTransport::Strand strand,
                 std::function<void(std::string_view)> onData,
                 std::function<void(Result<HttpResponse>)> done) {
  logger_->trace("WATCH {}", request.target);
  return transport_->stream(std::move(request), std::move(strand), std::move(onData),
                            std::move(done));
}

} // namespace kuscia_host::kube
