#include "otlp_exporter.h"

#include <kuscia_model/backoff.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <zlib.h>

#include <algorithm>
#include <ctime>

namespace kuscia_host::plugins::otel {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using net::ip::tcp;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::optional<milliseconds> retryAfterDelay(std::string_view value,
                                            std::chrono::system_clock::time_point now) {
  while (!value.empty() && value.front() == ' ')
    value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ')
    value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  if (value.find_first_not_of("0123456789") == std::string_view::npos) {
    if (value.size() > 9) return milliseconds(std::chrono::hours(24));
    return milliseconds(std::stoll(std::string(value)) * 1000);
  }
  // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT".
  std::tm tm{};
  std::string text(value);
  const char* end = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  // Compared in whole seconds: a date in year 9999 (or one timegm cannot represent) must not
  // overflow the clock's nanoseconds. Any wait beyond a day is a day, as for delta-seconds.
  const std::time_t at = timegm(&tm);
  const std::time_t nowSeconds = std::chrono::system_clock::to_time_t(now);
  constexpr std::time_t kDay = std::time_t{24} * 3600;
  if (at == static_cast<std::time_t>(-1) || at <= nowSeconds) return milliseconds(0);
  if (at - nowSeconds >= kDay) return milliseconds(std::chrono::hours(24));
  return milliseconds(static_cast<std::int64_t>(at - nowSeconds) * 1000);
}

ResourceInfo resourceOf(const OtelConfig& config, std::string_view domain, std::string_view mode) {
  ResourceInfo r;
  r.attributes = {{"service.name", config.serviceName},
                  {"service.version", std::string(kOtelExportVersion)},
                  {"kuscia.domain", std::string(domain)},
                  {"kuscia.deployment.mode", std::string(mode)}};
  r.scopeName = "kuscia-host/otel-export";
  r.scopeVersion = kOtelExportVersion;
  return r;
}

std::string gzip(std::string_view data) {
  z_stream z{};
  // windowBits 15 + 16: a gzip header and trailer around the deflate stream.
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return {};
  std::string out(deflateBound(&z, static_cast<uLong>(data.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return rc == Z_STREAM_END ? out : std::string();
}

OtlpExporter::OtlpExporter(OtelConfig config, ResourceInfo resource)
    : config_(std::move(config)), resource_(std::move(resource)) {}

OtlpExporter::~OtlpExporter() {
  stop();
}

void OtlpExporter::start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  exited_ = false;
  thread_ = std::thread([this] {
    run();
    std::lock_guard done(mu_);
    exited_ = true;
    wake_.notify_all();
  });
}

void OtlpExporter::stop() {
  {
    std::lock_guard lock(mu_);
    if (!thread_.joinable()) return;
    stopping_ = true;
    draining_ = true; // what is queued goes out, within one request's timeout
  }
  wake_.notify_all();
  {
    std::unique_lock lock(mu_);
    if (!wake_.wait_for(lock, milliseconds(config_.timeoutMillis), [this] { return exited_; })) {
      draining_ = false;
      if (cancel_) cancel_();
    }
  }
  thread_.join();
}

void OtlpExporter::enqueue(std::vector<SpanData> spans) {
  if (spans.empty()) return;
  {
    std::lock_guard lock(mu_);
    if (queue_.empty()) oldest_ = Clock::now();
    for (auto& s : spans)
      queue_.push_back(std::move(s));
    auto max = static_cast<std::size_t>(config_.queueMaxSpans);
    if (queue_.size() > max) {
      counters_.dropped += queue_.size() - max;
      queue_.erase(queue_.begin(),
                   queue_.begin() + static_cast<std::ptrdiff_t>(queue_.size() - max));
    }
    counters_.queueDepth = queue_.size();
  }
  wake_.notify_all();
}

OtlpExporter::Counters OtlpExporter::snapshot() const {
  std::lock_guard lock(mu_);
  return counters_;
}

bool OtlpExporter::pause(milliseconds d) {
  std::unique_lock lock(mu_);
  return !wake_.wait_for(lock, d, [this] { return stopping_; });
}

void OtlpExporter::run() {
  const auto batchMax = static_cast<std::size_t>(config_.batchMaxSpans);
  const milliseconds delay(config_.batchDelayMillis);
  for (;;) {
    std::vector<SpanData> batch;
    {
      std::unique_lock lock(mu_);
      // Until the batch is full, its oldest span is due, or the exporter stops.
      while (!stopping_ && queue_.size() < batchMax) {
        if (queue_.empty()) {
          wake_.wait(lock);
          continue;
        }
        auto due = oldest_ + delay;
        if (Clock::now() >= due) break;
        wake_.wait_until(lock, due);
      }
      if (queue_.empty()) {
        if (stopping_) return;
        continue;
      }
      std::size_t n = std::min(batchMax, queue_.size());
      batch.assign(std::make_move_iterator(queue_.begin()),
                   std::make_move_iterator(queue_.begin() + static_cast<std::ptrdiff_t>(n)));
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
      oldest_ = Clock::now();
      counters_.queueDepth = queue_.size();
    }
    sendBatch(batch);
    std::lock_guard lock(mu_);
    if (stopping_ && (queue_.empty() || !draining_)) return;
  }
}

void OtlpExporter::sendBatch(const std::vector<SpanData>& batch) {
  std::string body = config_.json ? encodeJson(resource_, batch) : encodeProtobuf(resource_, batch);
  if (config_.gzip) body = gzip(body);
  const auto n = static_cast<uint64_t>(batch.size());
  const auto started = Clock::now();
  const auto giveUp = started + std::chrono::seconds(config_.retryGiveUpSeconds);
  model::Backoff backoff(config_.retryInitialMillis, config_.retryMaxMillis);
  // Under mu_: a failure episode begins, or the one going on has a newer reason.
  auto markFailing = [&](const std::string& why) {
    if (!counters_.failing) ++counters_.episode;
    counters_.failing = true;
    counters_.lastError = why;
  };
  auto fail = [&](const std::string& why) {
    std::lock_guard lock(mu_);
    counters_.failed += n;
    markFailing(why);
  };
  for (;;) {
    PostResult r = post(body);
    {
      std::lock_guard lock(mu_);
      ++counters_.requests;
    }
    if (r.status >= 200 && r.status < 300) {
      ExportAnswer a = parseAnswer(r.body, config_.json);
      auto rejected = static_cast<uint64_t>(std::clamp<int64_t>(a.rejectedSpans, 0, int64_t(n)));
      std::lock_guard lock(mu_);
      counters_.exported += n - rejected;
      counters_.failed += rejected;
      counters_.failing = false;
      if (rejected > 0 || !a.errorMessage.empty()) {
        ++counters_.partials;
        counters_.lastPartial = std::to_string(rejected) + " span(s) rejected" +
                                (a.errorMessage.empty() ? "" : ": " + a.errorMessage);
      }
      return;
    }
    const bool retryable = (r.status == 0 && !r.permanent) || r.status == 429 || r.status == 502 ||
                           r.status == 503 || r.status == 504;
    std::string why = r.status == 0 ? r.error
                                    : "HTTP " + std::to_string(r.status) +
                                          (r.body.empty() ? "" : ": " + r.body.substr(0, 200));
    if (!retryable) return fail(why + " (not retried)");
    milliseconds wait(backoff.next());
    if (auto ra = retryAfterDelay(r.retryAfter, std::chrono::system_clock::now())) wait = *ra;
    wait = std::min(wait, milliseconds(config_.retryMaxMillis) * 4);
    {
      std::lock_guard lock(mu_);
      markFailing(why);
    }
    if (Clock::now() + wait > giveUp) return fail(why + " (gave up after retrying)");
    if (!pause(wait)) { // stopping
      std::lock_guard lock(mu_);
      counters_.failed += n;
      return;
    }
    std::lock_guard lock(mu_);
    ++counters_.retries;
  }
}

namespace {

// One request's asynchronous steps, each run on its own io_context to its end or the deadline.
struct Steps {
  net::io_context& ioc;
  Clock::time_point deadline;
  int64_t timeoutMillis;
  PostResult& result;
  boost::system::error_code ec;
  bool done = false;

  // A completion handler that records the step's outcome.
  auto handler() {
    return [this](boost::system::error_code e, auto&&...) {
      ec = e;
      done = true;
    };
  }
  // Runs the step started last; false (with result.error) on a timeout, cancellation or error.
  bool run(const std::string& what) {
    ioc.restart();
    while (!done && !ioc.stopped() && Clock::now() < deadline)
      ioc.run_one_until(deadline);
    if (!done) {
      result.error = what + ": no answer within " + std::to_string(timeoutMillis) + " ms";
      return false;
    }
    if (ec) {
      result.error = what + ": " + ec.message();
      return false;
    }
    done = false;
    return true;
  }
};

// The request and the answer over one stream (plain or TLS).
template <typename Stream>
bool exchange(Steps& steps, Stream& stream, http::request<http::string_body>& req,
              http::response<http::string_body>& res) {
  beast::flat_buffer buffer;
  http::async_write(stream, req, steps.handler());
  if (!steps.run("sending")) return false;
  http::async_read(stream, buffer, res, steps.handler());
  return steps.run("reading the answer");
}

// The TLS context that verifies the collector (config.caFile, else the system's CAs).
std::optional<net::ssl::context> tlsContextFor(const OtelConfig& config, std::string& error) {
  boost::system::error_code ec;
  std::optional<net::ssl::context> tls(net::ssl::context::tls_client);
  tls->set_verify_mode(net::ssl::verify_peer);
  if (!config.caFile.empty())
    tls->load_verify_file(config.caFile, ec);
  else
    tls->set_default_verify_paths(ec);
  if (!ec) return tls;
  error = "TLS: the CA: " + ec.message();
  return std::nullopt;
}

// The POST of an export request's `body`.
http::request<http::string_body> requestFor(const OtelConfig& config, const std::string& body) {
  const Endpoint& ep = config.endpoint;
  http::request<http::string_body> req{http::verb::post, ep.target, 11};
  bool defaultPort = ep.port == (ep.tls ? 443 : 80);
  req.set(http::field::host, ep.host + (defaultPort ? "" : ":" + std::to_string(ep.port)));
  req.set(http::field::content_type, config.json ? "application/json" : "application/x-protobuf");
  req.set(http::field::user_agent, std::string("kuscia-host-otel-export/") + kOtelExportVersion);
  if (config.gzip) req.set(http::field::content_encoding, "gzip");
  for (const auto& [name, value] : config.headers)
    req.set(name, value);
  req.body() = body;
  req.prepare_payload();
  return req;
}

} // namespace

PostResult OtlpExporter::post(const std::string& body) {
  PostResult result;
  net::io_context ioc;
  {
    std::lock_guard lock(mu_);
    if (stopping_ && !draining_) {
      result.error = "stopping";
      return result;
    }
    cancel_ = [&ioc] { ioc.stop(); };
  }
  struct Reset {
    OtlpExporter* self;
    ~Reset() {
      std::lock_guard lock(self->mu_);
      self->cancel_ = nullptr;
    }
  } reset{this};
  Steps steps{ioc, Clock::now() + milliseconds(config_.timeoutMillis), config_.timeoutMillis,
              result};
  const Endpoint& ep = config_.endpoint;
  tcp::resolver resolver(ioc);
  tcp::resolver::results_type addresses;
  resolver.async_resolve(ep.host, std::to_string(ep.port),
                         [&](boost::system::error_code e, tcp::resolver::results_type r) {
                           addresses = std::move(r);
                           steps.handler()(e);
                         });
  if (!steps.run("resolving " + ep.host)) return result;
  std::optional<net::ssl::context> tls;
  if (ep.tls && !(tls = tlsContextFor(config_, result.error))) return result;
  beast::tcp_stream tcpStream(ioc);
  tcpStream.async_connect(addresses, steps.handler());
  if (!steps.run("connecting")) return result;
  std::optional<beast::ssl_stream<beast::tcp_stream&>> tlsStream;
  if (ep.tls) {
    tlsStream.emplace(tcpStream, *tls);
    SSL_set_tlsext_host_name(tlsStream->native_handle(), ep.host.c_str());
    tlsStream->set_verify_callback(net::ssl::host_name_verification(ep.host));
    tlsStream->async_handshake(net::ssl::stream_base::client, steps.handler());
    if (!steps.run("TLS handshake")) {
      // The certificate or the protocol refused, not the network: the same every time.
      result.permanent = steps.ec.category() == net::error::get_ssl_category();
      return result;
    }
  }
  auto req = requestFor(config_, body);
  http::response<http::string_body> res;
  if (!(tlsStream ? exchange(steps, *tlsStream, req, res) : exchange(steps, tcpStream, req, res)))
    return result;
  result.status = static_cast<int>(res.result_int());
  result.body = std::move(res.body());
  if (auto it = res.find(http::field::retry_after); it != res.end())
    result.retryAfter = std::string(it->value());
  tcpStream.socket().shutdown(tcp::socket::shutdown_both, steps.ec);
  return result;
}

} // namespace kuscia_host::plugins::otel
