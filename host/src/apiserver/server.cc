#include "apiserver/server.h"

#include <boost/asio/steady_timer.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "apimachinery/values.h"
#include "common/base64.h"
#include "common/listen_address.h"
#include "httpd/tls.h"

namespace kuscia_host::apiserver {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using nlohmann::json;

namespace {

constexpr std::size_t kHeaderLimit = std::size_t{64} * 1024;
constexpr std::size_t kBodyLimit = std::size_t{16} * 1024 * 1024;
constexpr auto kIdleTimeout = std::chrono::minutes(5);
constexpr auto kTooLargeRetry = std::chrono::milliseconds(50);

bool acceptsJson(const std::string& accept) {
  return accept.empty() || accept.find("json") != std::string::npos ||
         accept.find("*/*") != std::string::npos || accept.find("yaml") != std::string::npos;
}

ApiResponse statusResponse(int code, const std::string& reason, const std::string& message) {
  return errorResponse({code, reason, message, json::object()});
}

ApiResponse successResponse(const std::string& message) {
  return jsonResponse(200, apimachinery::successJson(message));
}

httpd::Response toHttp(ApiResponse r) {
  httpd::Response out;
  out.status = r.status;
  out.contentType = std::move(r.contentType);
  out.body = std::move(r.body);
  out.headers = std::move(r.headers);
  return out;
}

httpd::ServerOptions httpOptions() {
  httpd::ServerOptions o;
  o.name = "apiserver";
  o.headerLimit = kHeaderLimit;
  o.bodyLimit = kBodyLimit;
  o.idleTimeout = std::chrono::duration_cast<std::chrono::seconds>(kIdleTimeout);
  o.headers = {{"Cache-Control", "no-cache, private"}};
  o.malformed = [](int status, const std::string& message) {
    const char* reason = status == 413   ? "RequestEntityTooLarge"
                         : status == 431 ? "RequestHeaderFieldsTooLarge"
                                         : "BadRequest";
    return toHttp(statusResponse(status, reason, "malformed request: " + message));
  };
  return o;
}

} // namespace

void Faults::respond(Rule rule) {
  std::lock_guard lock(mu_);
  rules_.push_back(std::move(rule));
}

void Faults::reset() {
  std::lock_guard lock(mu_);
  rules_.clear();
  latencyMs_ = 0;
}

std::optional<Faults::Rule> Faults::take(const std::string& method, const std::string& path,
                                         bool watch) {
  std::lock_guard lock(mu_);
  for (auto it = rules_.begin(); it != rules_.end(); ++it) {
    if (path.rfind(it->pathPrefix, 0) != 0) continue;
    if (!it->method.empty() && it->method != method) continue;
    if (it->watchOnly && !watch) continue;
    Rule r = *it;
    if (--it->remaining <= 0) rules_.erase(it);
    return r;
  }
  return std::nullopt;
}

ApiServer::ApiServer(net::io_context& io, const Clock& clock,
                     std::shared_ptr<spdlog::logger> logger, ServerOptions options)
    : io_(io), clock_(clock), logger_(std::move(logger)), options_(std::move(options)),
      registry_(ResourceRegistry::withDefaults()), store_(options_.historyLimit),
      handler_(registry_, store_, clock_, options_.api) {}

ApiServer::~ApiServer() {
  stop();
}

Result<void> ApiServer::setUpTls(const std::string& address) {
  auto certs = httpd::generateCertificates("kuscia-host-apiserver", {address, "localhost"});
  if (!certs) return makeError("apiserver: " + certs.error());
  caPem_ = certs->caCertPem;
  auto ssl = httpd::serverTlsContext(certs->certPem, certs->keyPem, options_.clientCaPem);
  if (!ssl) return makeError("apiserver: TLS setup failed: " + ssl.error());
  token_ = options_.token.empty() ? httpd::randomHex(40) : options_.token;
  ssl_ = std::move(ssl.value());
  return {};
}

Result<tcp::endpoint> ApiServer::start() {
  handler_.bootstrap();
  if (!http_) {
    std::string listen = options_.listen;
    if (options_.tls) {
      // The certificate names the address clients use: the listen address's host.
      std::string host;
      unsigned short port = 0;
      if (!parseListenAddress(listen, host, port))
        return makeError("apiserver: bad listen address '" + listen + "' (expected host:port)");
      if (auto r = setUpTls(host == "localhost" ? "127.0.0.1" : host); !r)
        return makeError(r.error());
    }
    http_ = std::make_unique<httpd::Server>(
        io_, logger_, httpOptions(),
        [this](ApiRequest req, const std::shared_ptr<httpd::Exchange>& ex) {
          onRequest(std::move(req), ex);
        },
        ssl_);
    auto ep = http_->listen(listen);
    if (!ep) return makeError(ep.error());
    endpoint_ = *ep;
    return endpoint_;
  }
  // Started again after stop(): the same address, certificates and token (a restart).
  auto ep = http_->listen(endpoint_.address().to_string() + ":" + std::to_string(endpoint_.port()));
  if (!ep) return makeError(ep.error());
  return endpoint_;
}

void ApiServer::stop() {
  if (http_) http_->stop();
  store_.dropWatchers();
}

void ApiServer::onRequest(ApiRequest req, const std::shared_ptr<httpd::Exchange>& exchange) {
  if (!authorized(req))
    return exchange->respond(toHttp(statusResponse(401, "Unauthorized", "Unauthorized")));
  if (auto r = faultEndpoint(req)) return exchange->respond(toHttp(std::move(*r)));
  const bool faults = options_.faultInjection; // off: no fault bookkeeping at all
  if (faults) {
    bool watch = apimachinery::goBoolOr(req.param("watch"), false);
    if (auto rule = faults_.take(req.method, req.path, watch)) {
      ApiResponse r =
          statusResponse(rule->status, rule->status == 429 ? "TooManyRequests" : "InternalError",
                         "injected fault: " + std::to_string(rule->status));
      if (rule->retryAfterSeconds >= 0)
        r.headers.emplace_back("Retry-After", std::to_string(rule->retryAfterSeconds));
      return exchange->respond(toHttp(std::move(r)));
    }
  }
  if (!acceptsJson(req.accept) && !acceptsOpenapiV2Protobuf(req))
    return exchange->respond(toHttp(statusResponse(
        406, "NotAcceptable", "only application/json is served; Accept: " + req.accept)));
  auto deadline = std::chrono::steady_clock::now() + options_.api.tooLargeWait;
  auto latency = faults ? faults_.latency() : std::chrono::milliseconds(0);
  if (latency.count() > 0) {
    auto timer = std::make_shared<net::steady_timer>(exchange->executor(), latency);
    timer->async_wait(
        [this, timer, req = std::move(req), exchange, deadline](const boost::system::error_code&) {
          serve(req, exchange, deadline + faults_.latency());
        });
    return;
  }
  serve(req, exchange, deadline);
}

void ApiServer::serve(const ApiRequest& req, const std::shared_ptr<httpd::Exchange>& exchange,
                      std::chrono::steady_clock::time_point deadline) {
  ApiResponse r;
  try {
    r = handler_.handle(req);
  } catch (const std::exception& e) {
    r = statusResponse(500, "InternalError", std::string("internal error: ") + e.what());
  }
  if (r.waitsForRv != 0 && std::chrono::steady_clock::now() < deadline) {
    // Upstream waits for its watch cache to catch up before answering "too large".
    auto timer = std::make_shared<net::steady_timer>(exchange->executor(), kTooLargeRetry);
    timer->async_wait([this, timer, req, exchange, deadline](const boost::system::error_code&) {
      serve(req, exchange, deadline);
    });
    return;
  }
  if (r.watch) return exchange->stream(200, r.contentType, std::move(r.watch));
  exchange->respond(toHttp(std::move(r)));
}

bool ApiServer::authorized(const ApiRequest& req) const {
  if (!ssl_) return true; // plain HTTP on loopback: anonymous, like kubectl over http
  if (req.clientCertVerified || req.authorization == "Bearer " + token_) return true;
  // The identities of --token-auth-file authenticate too, as with kube-apiserver.
  constexpr std::string_view kBearer = "Bearer ";
  return req.authorization.rfind(kBearer, 0) == 0 &&
         options_.api.tokens.count(req.authorization.substr(kBearer.size())) > 0;
}

std::string ApiServer::url() const {
  std::string host = endpoint_.address().to_string();
  if (endpoint_.address().is_v6()) host = "[" + host + "]";
  return std::string(ssl_ ? "https://" : "http://") + host + ":" + std::to_string(endpoint_.port());
}

std::string ApiServer::kubeconfig() const {
  std::string cluster = "    server: " + url() + "\n";
  if (ssl_) cluster += "    certificate-authority-data: " + base64Encode(caPem_) + "\n";
  std::string user = ssl_ ? "  user:\n    token: " + token_ + "\n" : "  user: {}\n";
  return "apiVersion: v1\nkind: Config\nclusters:\n- name: kuscia-host\n  cluster:\n" + cluster +
         "users:\n- name: kuscia-host\n" + user +
         "contexts:\n- name: kuscia-host\n  context:\n    cluster: kuscia-host\n    user: "
         "kuscia-host\n"
         "current-context: kuscia-host\npreferences: {}\n";
}

Result<void> ApiServer::writeKubeconfig(const std::string& path) const {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return makeError("cannot write kubeconfig " + path + ": " + std::strerror(errno));
    out << kubeconfig();
  }
  std::filesystem::permissions(tmp, std::filesystem::perms::owner_read |
                                        std::filesystem::perms::owner_write);
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return makeError("cannot write kubeconfig " + path + ": " + ec.message());
  return {};
}

std::optional<ApiResponse> ApiServer::faultEndpoint(const ApiRequest& req) {
  static const std::string kPrefix = "/debug/faults/";
  if (!options_.faultInjection || req.path.rfind(kPrefix, 0) != 0) return std::nullopt;
  std::string what = req.path.substr(kPrefix.size());
  auto q = [&](const std::string& k, const std::string& d = "") {
    auto it = req.query.find(k);
    return it == req.query.end() ? d : it->second;
  };
  try {
    if (what == "drop-watches") {
      std::size_t n = store_.watcherCount();
      store_.dropWatchers();
      return successResponse("dropped " + std::to_string(n) + " watch(es)");
    }
    if (what == "inject") {
      std::size_t n = store_.watcherCount();
      store_.injectLine(req.body);
      return statusResponse(200, "",
                            "wrote " + std::to_string(req.body.size()) + " byte(s) into " +
                                std::to_string(n) + " watch(es)");
    }
    if (what == "compact") {
      store_.compact();
      return statusResponse(
          200, "", "history compacted at resourceVersion " + std::to_string(store_.currentRv()));
    }
    if (what == "respond") {
      Faults::Rule r{q("path", "/"),
                     std::stoi(q("status", "500")),
                     std::stoi(q("count", "1")),
                     std::stoi(q("retryAfter", "-1")),
                     q("method"),
                     q("watch") == "1"};
      faults_.respond(r);
      return statusResponse(200, "",
                            "next " + std::to_string(r.remaining) + " " +
                                (r.method.empty() ? std::string() : r.method + " ") +
                                (r.watchOnly ? "watch " : "") + "request(s) under " + r.pathPrefix +
                                " answer " + std::to_string(r.status));
    }
    if (what == "latency") {
      faults_.setLatency(std::chrono::milliseconds(std::stoi(q("ms", "0"))));
      return successResponse("latency set");
    }
    if (what == "reset") {
      faults_.reset();
      return successResponse("faults cleared");
    }
  } catch (const std::exception& e) {
    return statusResponse(400, "BadRequest", std::string("bad fault parameters: ") + e.what());
  }
  return statusResponse(404, "NotFound", "unknown fault: " + what);
}

} // namespace kuscia_host::apiserver
