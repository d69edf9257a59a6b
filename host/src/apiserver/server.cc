#include "apiserver/server.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "admin/admin_server.h"
#include "apiserver/certs.h"
#include "common/base64.h"
#include "runtime/listener.h"

namespace kuscia_host::apiserver {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using nlohmann::json;

namespace {

bool isWatch(const ApiRequest& req) {
  auto it = req.query.find("watch");
  return it != req.query.end() && (it->second == "true" || it->second == "1");
}

constexpr std::size_t kHeaderLimit = std::size_t{64} * 1024;
constexpr std::size_t kBodyLimit = std::size_t{16} * 1024 * 1024;
constexpr auto kIdleTimeout = std::chrono::minutes(5);

bool acceptsJson(const std::string& accept) {
  return accept.empty() || accept.find("json") != std::string::npos ||
         accept.find("*/*") != std::string::npos || accept.find("yaml") != std::string::npos;
}

ApiResponse statusResponse(int code, const std::string& reason, const std::string& message) {
  ApiResponse r;
  r.status = code;
  r.body = statusBody({code, reason, message, json::object()}).dump();
  return r;
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

template <class Stream>
class ApiServer::Session : public ApiServer::Connection,
                           public std::enable_shared_from_this<Session<Stream>> {
public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  Session(Stream stream, ApiServer& server)
      : stream_(std::move(stream)), server_(server), timer_(stream_.get_executor()),
        bookmarkTimer_(stream_.get_executor()) {}

  void run() {
    if (!server_.track(this->shared_from_this())) return closeNow();
    net::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      if constexpr (kTls) {
        beast::get_lowest_layer(self->stream_).expires_after(std::chrono::seconds(30));
        self->stream_.async_handshake(net::ssl::stream_base::server, [self](beast::error_code ec) {
          if (ec) return self->closeNow();
          // A client certificate, when sent, was verified against the client CA in the handshake.
          SSL* ssl = self->stream_.native_handle();
          if (X509* peer = SSL_get1_peer_certificate(ssl)) {
            self->clientCert_ = SSL_get_verify_result(ssl) == X509_V_OK;
            X509_free(peer);
          }
          self->read();
        });
      } else {
        self->read();
      }
    });
  }

  void shutdown() override {
    net::post(stream_.get_executor(), [self = this->shared_from_this()] { self->abort(); });
  }

private:
  void read() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(kBodyLimit);
    beast::get_lowest_layer(stream_).expires_after(kIdleTimeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, std::size_t) { self->onRead(ec); });
  }

  void onRead(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == net::error::operation_aborted || ec == net::error::connection_reset ||
        ec == net::ssl::error::stream_truncated)
      return closeNow();
    if (ec) {
      int status = ec == http::error::header_limit ? 431
                   : ec == http::error::body_limit ? 413
                                                   : 400;
      return write(statusResponse(status, status == 400 ? "BadRequest" : "RequestEntityTooLarge",
                                  "malformed request: " + ec.message()),
                   11, false);
    }
    const auto& msg = parser_->get();
    ApiRequest req;
    req.method = std::string(msg.method_string());
    std::string target(msg.target());
    auto q = target.find('?');
    req.path = target.substr(0, q);
    if (q != std::string::npos) req.query = parseQuery(target.substr(q + 1));
    req.contentType = std::string(msg[http::field::content_type]);
    req.accept = std::string(msg[http::field::accept]);
    req.body = msg.body();
    version_ = msg.version();
    keepAlive_ = msg.keep_alive();

    if (!server_.authorized(std::string(msg[http::field::authorization]), clientCert_))
      return write(statusResponse(401, "Unauthorized", "Unauthorized"), version_, keepAlive_);
    if (auto r = server_.faultEndpoint(req)) return write(*r, version_, keepAlive_);
    const bool faults = server_.options_.faultInjection; // off: no fault bookkeeping at all
    if (auto rule =
            faults ? server_.faults_.take(req.method, req.path, isWatch(req)) : std::nullopt) {
      ApiResponse r =
          statusResponse(rule->status, rule->status == 429 ? "TooManyRequests" : "InternalError",
                         "injected fault: " + std::to_string(rule->status));
      if (rule->retryAfterSeconds >= 0)
        r.headers.emplace_back("Retry-After", std::to_string(rule->retryAfterSeconds));
      return write(r, version_, keepAlive_);
    }
    if (!acceptsJson(req.accept))
      return write(statusResponse(406, "NotAcceptable",
                                  "only application/json is served; Accept: " + req.accept),
                   version_, keepAlive_);
    auto latency = faults ? server_.faults_.latency() : std::chrono::milliseconds(0);
    if (latency.count() > 0) {
      timer_.expires_after(latency);
      timer_.async_wait([self = this->shared_from_this(),
                         req = std::move(req)](beast::error_code) mutable { self->process(req); });
      return;
    }
    process(req);
  }

  void process(const ApiRequest& req) {
    std::weak_ptr<Session> weak = this->shared_from_this();
    auto ex = stream_.get_executor();
    auto wake = [weak, ex] {
      net::post(ex, [weak] {
        if (auto s = weak.lock()) s->pump();
      });
    };
    ApiResponse r;
    try {
      r = server_.handler_.handle(req, wake);
    } catch (const std::exception& e) {
      r = statusResponse(500, "InternalError", std::string("internal error: ") + e.what());
    }
    if (r.watcher) return startWatch(std::move(r));
    write(r, version_, keepAlive_);
  }

  void write(const ApiResponse& r, unsigned version, bool keepAlive) {
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(r.status), version);
    res->set(http::field::content_type, r.contentType);
    res->set(http::field::cache_control, "no-cache, private");
    for (const auto& [k, v] : r.headers)
      res->insert(k, v);
    res->body() = r.body;
    res->prepare_payload();
    res->keep_alive(keepAlive);
    beast::get_lowest_layer(stream_).expires_after(kIdleTimeout);
    http::async_write(stream_, *res,
                      [self = this->shared_from_this(), res](beast::error_code ec, std::size_t) {
                        if (ec || !res->keep_alive()) return self->closeNow();
                        self->read();
                      });
  }

  // --- watch streaming ---
  void startWatch(ApiResponse r) {
    watcher_ = std::move(r.watcher);
    auto res = std::make_shared<http::response<http::empty_body>>(http::status::ok, version_);
    res->set(http::field::content_type, "application/json");
    res->set(http::field::cache_control, "no-cache, private");
    res->chunked(true);
    res->keep_alive(false);
    auto sr = std::make_shared<http::response_serializer<http::empty_body>>(*res);
    beast::get_lowest_layer(stream_).expires_never();
    writing_ = true;
    http::async_write_header(
        stream_, *sr,
        [self = this->shared_from_this(), res, sr](beast::error_code ec, std::size_t) {
          self->writing_ = false;
          if (ec) return self->abort();
          self->watchForDisconnect();
          self->pump();
        });
    if (r.timeoutSeconds > 0) {
      timer_.expires_after(std::chrono::seconds(r.timeoutSeconds));
      timer_.async_wait([self = this->shared_from_this()](beast::error_code ec) {
        if (!ec) self->finish();
      });
    }
    if (r.bookmarks) scheduleBookmark();
  }

  void scheduleBookmark() {
    bookmarkTimer_.expires_after(server_.options_.bookmarkInterval);
    bookmarkTimer_.async_wait([self = this->shared_from_this()](beast::error_code ec) {
      if (ec || self->done_) return;
      self->server_.store_.bookmark(self->watcher_);
      self->scheduleBookmark();
    });
  }

  void watchForDisconnect() {
    stream_.async_read_some(net::buffer(discard_),
                            [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                              if (ec) return self->abort();
                              self->watchForDisconnect();
                            });
  }

  void pump() {
    if (done_ || writing_ || !watcher_) return;
    std::vector<std::shared_ptr<const std::string>> lines;
    bool open = watcher_->drain(lines);
    if (!open) {
      // Overflowed (too slow): end the stream as upstream does; dropped: cut the connection.
      return watcher_->overflowed() ? finish() : abort();
    }
    if (lines.empty()) {
      if (watcher_->ending()) finish();
      return;
    }
    chunk_.clear();
    for (const auto& l : lines)
      chunk_ += *l;
    writing_ = true;
    net::async_write(stream_, http::make_chunk(net::buffer(chunk_)),
                     [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                       self->writing_ = false;
                       if (ec) return self->abort();
                       self->pump();
                     });
  }

  // Ends the stream cleanly (last chunk) and closes.
  void finish() {
    if (done_) return;
    if (writing_) {
      // Retry after the write in flight completes.
      net::post(stream_.get_executor(), [self = this->shared_from_this()] { self->finish(); });
      return;
    }
    done_ = true;
    stopWatch();
    net::async_write(
        stream_, http::make_chunk_last(),
        [self = this->shared_from_this()](beast::error_code, std::size_t) { self->closeNow(); });
  }

  // Cuts the connection without ending the stream.
  void abort() {
    if (done_) return;
    done_ = true;
    stopWatch();
    closeNow();
  }

  void stopWatch() {
    timer_.cancel();
    bookmarkTimer_.cancel();
    if (watcher_) server_.store_.unwatch(watcher_);
  }

  void closeNow() {
    beast::error_code ignored;
    beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(stream_).close();
  }

  Stream stream_;
  ApiServer& server_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  net::steady_timer timer_;
  net::steady_timer bookmarkTimer_;
  unsigned version_ = 11;
  bool keepAlive_ = true;
  bool clientCert_ = false; // TLS: a client certificate verified against the client CA
  std::shared_ptr<Watcher> watcher_;
  std::string chunk_;
  std::array<char, 512> discard_{};
  bool writing_ = false;
  bool done_ = false;
};

ApiServer::ApiServer(net::io_context& io, const Clock& clock,
                     std::shared_ptr<spdlog::logger> logger, ServerOptions options)
    : io_(io), clock_(clock), logger_(std::move(logger)), options_(std::move(options)),
      registry_(ResourceRegistry::withDefaults()), store_(options_.historyLimit),
      handler_(registry_, store_, clock_, options_.api) {}

ApiServer::~ApiServer() {
  stop();
}

Result<tcp::endpoint> ApiServer::start() {
  // Started again after stop(): the same address, certificates and token (a restart).
  std::string listen = options_.listen;
  if (endpoint_.port() != 0)
    listen = endpoint_.address().to_string() + ":" + std::to_string(endpoint_.port());
  auto opened = openListener(io_, listen, "apiserver");
  if (!opened) return makeError(opened.error());
  auto acceptor = opened.value();
  endpoint_ = acceptor->local_endpoint();
  boost::system::error_code ec;
  if (options_.tls && !ssl_) {
    auto certs = generateCertificates("kuscia-host-apiserver",
                                      {endpoint_.address().to_string(), "localhost"});
    if (!certs) return makeError("apiserver: " + certs.error());
    caPem_ = certs->caCertPem;
    ssl_ = std::make_unique<net::ssl::context>(net::ssl::context::tls_server);
    ssl_->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                      net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                      net::ssl::context::no_tlsv1_1);
    ssl_->use_certificate_chain(net::buffer(certs->certPem), ec);
    if (!ec) ssl_->use_private_key(net::buffer(certs->keyPem), net::ssl::context::pem, ec);
    if (ec) return makeError("apiserver: TLS setup failed: " + ec.message());
    if (!options_.clientCaPem.empty()) {
      ssl_->add_certificate_authority(net::buffer(options_.clientCaPem), ec);
      if (ec) return makeError("apiserver: the client CA is unusable: " + ec.message());
      ssl_->set_verify_mode(net::ssl::verify_peer); // optional: tokens work without one
    }
    // ALPN: offer http/1.1 only (clients asking for h2 fall back).
    SSL_CTX_set_alpn_select_cb(
        ssl_->native_handle(),
        [](SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
           unsigned int inlen, void*) -> int {
          static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
          unsigned char* sel = nullptr;
          if (SSL_select_next_proto(&sel, outlen, kHttp11, sizeof kHttp11, in, inlen) ==
              OPENSSL_NPN_NEGOTIATED) {
            *out = sel;
            return SSL_TLSEXT_ERR_OK;
          }
          return SSL_TLSEXT_ERR_NOACK;
        },
        nullptr);
    token_ = options_.token.empty() ? randomHex(40) : options_.token;
  }
  acceptor_ = acceptor;
  {
    std::lock_guard lock(connectionsMu_);
    accepting_ = true;
  }
  // The namespaces every cluster starts with.
  const ResourceInfo* ns = registry_.find("", "v1", "namespaces");
  for (const char* name : {"default", "kube-system"}) {
    ApiRequest req;
    req.method = "POST";
    req.path = "/api/v1/namespaces";
    req.body = json({{"metadata", {{"name", name}}}}).dump();
    if (!store_.get(*ns, "", name).ok()) handler_.handle(req, {});
  }
  accept(acceptor);
  return endpoint_;
}

// Takes the acceptor by value: stop() may reset the member while a completion is running.
void ApiServer::accept(const std::shared_ptr<tcp::acceptor>& acceptor) {
  acceptor->async_accept(net::make_strand(io_), [this, acceptor](beast::error_code ec,
                                                                 tcp::socket s) {
    if (ec == net::error::operation_aborted || !acceptor->is_open()) return;
    if (!ec) {
      s.set_option(tcp::no_delay(true), ec);
      if (ssl_)
        std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(
            beast::ssl_stream<beast::tcp_stream>(beast::tcp_stream(std::move(s)), *ssl_), *this)
            ->run();
      else
        std::make_shared<Session<beast::tcp_stream>>(beast::tcp_stream(std::move(s)), *this)->run();
    } else {
      logger_->warn("apiserver accept failed: {}", ec.message());
    }
    accept(acceptor);
  });
}

bool ApiServer::track(const std::shared_ptr<Connection>& connection) {
  std::lock_guard lock(connectionsMu_);
  if (!accepting_) return false;
  std::erase_if(connections_, [](const auto& c) { return c.expired(); });
  connections_.push_back(connection);
  return true;
}

void ApiServer::stop() {
  if (!acceptor_) return;
  auto acceptor = acceptor_;
  acceptor_.reset();
  net::post(acceptor->get_executor(), [acceptor] {
    boost::system::error_code ignored;
    acceptor->close(ignored);
  });
  std::vector<std::weak_ptr<Connection>> open;
  {
    std::lock_guard lock(connectionsMu_);
    accepting_ = false;
    open.swap(connections_);
  }
  for (const auto& c : open)
    if (auto live = c.lock()) live->shutdown();
  store_.dropWatchers();
}

bool ApiServer::authorized(const std::string& header, bool clientCert) const {
  if (!ssl_) return true; // plain HTTP on loopback: anonymous, like kubectl over http
  return clientCert || header == "Bearer " + token_;
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
      return statusResponse(200, "", "dropped " + std::to_string(n) + " watch(es)");
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
      return statusResponse(200, "", "latency set");
    }
    if (what == "reset") {
      faults_.reset();
      return statusResponse(200, "", "faults cleared");
    }
  } catch (const std::exception& e) {
    return statusResponse(400, "BadRequest", std::string("bad fault parameters: ") + e.what());
  }
  return statusResponse(404, "NotFound", "unknown fault: " + what);
}

} // namespace kuscia_host::apiserver
