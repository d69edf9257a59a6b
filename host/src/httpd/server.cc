#include "httpd/server.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <array>
#include <atomic>
#include <future>

#include "runtime/listener.h"

namespace kuscia_host::httpd {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

// The Kubernetes identity of a client certificate: the subject's CN is the user, each O a group.
void subjectOf(X509* cert, std::string& user, std::vector<std::string>& groups) {
  X509_NAME* name = X509_get_subject_name(cert);
  auto text = [name](int index) {
    ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, index));
    unsigned char* utf8 = nullptr;
    int n = ASN1_STRING_to_UTF8(&utf8, data);
    std::string out = n > 0
                          ? std::string(reinterpret_cast<char*>(utf8), static_cast<std::size_t>(n))
                          : std::string();
    OPENSSL_free(utf8);
    return out;
  };
  if (int i = X509_NAME_get_index_by_NID(name, NID_commonName, -1); i >= 0) user = text(i);
  for (int i = X509_NAME_get_index_by_NID(name, NID_organizationName, -1); i >= 0;
       i = X509_NAME_get_index_by_NID(name, NID_organizationName, i))
    groups.push_back(text(i));
}

constexpr auto kLingerTimeout = std::chrono::seconds(2);
constexpr std::size_t kLingerLimit = std::size_t{4} * 1024 * 1024;
constexpr auto kHandshakeTimeout = std::chrono::seconds(30);

Response plainMalformed(int status, const std::string& message) {
  Response r;
  r.status = status;
  r.body = "bad request: " + message + "\n";
  return r;
}

} // namespace

std::optional<std::string> Request::param(const std::string& name) const {
  auto it = query.find(name);
  if (it == query.end()) return std::nullopt;
  return it->second;
}

// What stop() needs of a connection, whatever its stream type.
class Server::Connection {
public:
  virtual ~Connection() = default;
  virtual void shutdown() = 0; // posts the close to the connection's own executor
};

template <class Stream>
class Session final : public Server::Connection,
                      public Exchange,
                      public StreamControl,
                      public std::enable_shared_from_this<Session<Stream>> {
public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  // `tls`: the context the stream was made with, kept while the session lives (the server may
  // have moved on to a renewed one).
  Session(Stream stream, Server& server, std::shared_ptr<boost::asio::ssl::context> tls = nullptr)
      : tls_(std::move(tls)), stream_(std::move(stream)), server_(server),
        executor_(stream_.get_executor()) {}

  void run() {
    if (!server_.track(this->shared_from_this())) return closeNow();
    net::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      if constexpr (kTls) {
        beast::get_lowest_layer(self->stream_).expires_after(kHandshakeTimeout);
        self->stream_.async_handshake(net::ssl::stream_base::server, [self](beast::error_code ec) {
          if (ec) return self->closeNow();
          // A client certificate, when sent, was verified against the client CA in the handshake.
          SSL* ssl = self->stream_.native_handle();
          if (X509* peer = SSL_get1_peer_certificate(ssl)) {
            self->clientCert_ = SSL_get_verify_result(ssl) == X509_V_OK;
            if (self->clientCert_) subjectOf(peer, self->certUser_, self->certGroups_);
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

  // --- Exchange ---
  void respond(Response response) override {
    if (answered_.exchange(true)) return;
    net::dispatch(stream_.get_executor(),
                  [self = this->shared_from_this(), r = std::move(response)]() mutable {
                    self->write(std::move(r), self->keepAlive_, false);
                  });
  }

  void stream(int status, const std::string& contentType,
              std::shared_ptr<ChunkSource> source) override {
    if (answered_.exchange(true)) return;
    net::dispatch(stream_.get_executor(), [self = this->shared_from_this(), status, contentType,
                                           source = std::move(source)]() mutable {
      self->startStream(status, contentType, std::move(source));
    });
  }

  boost::asio::any_io_executor executor() const override { return executor_; }

  // --- StreamControl ---
  void wake() override {
    net::post(stream_.get_executor(), [weak = this->weak_from_this()] {
      if (auto self = weak.lock()) self->pump();
    });
  }

private:
  void read() {
    if (done_) return;
    parser_.emplace();
    parser_->header_limit(server_.options_.headerLimit);
    parser_->body_limit(server_.options_.bodyLimit);
    beast::get_lowest_layer(stream_).expires_after(server_.options_.idleTimeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, std::size_t) { self->onRead(ec); });
  }

  void onRead(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == net::error::operation_aborted || ec == net::error::connection_reset ||
        ec == net::ssl::error::stream_truncated || done_)
      return closeNow();
    if (ec) {
      int status = ec == http::error::header_limit ? 431
                   : ec == http::error::body_limit ? 413
                                                   : 400;
      const auto& malformed = server_.options_.malformed;
      Response r =
          malformed ? malformed(status, ec.message()) : plainMalformed(status, ec.message());
      version_ = 11;
      answered_ = true;
      return write(std::move(r), false, true);
    }
    const auto& msg = parser_->get();
    Request req;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    auto q = req.target.find('?');
    req.path = req.target.substr(0, q);
    if (q != std::string::npos) req.query = parseQuery(req.target.substr(q + 1));
    req.contentType = std::string(msg[http::field::content_type]);
    req.accept = std::string(msg[http::field::accept]);
    req.authorization = std::string(msg[http::field::authorization]);
    req.userAgent = std::string(msg[http::field::user_agent]);
    req.body = msg.body();
    req.clientCertVerified = clientCert_;
    req.clientCertUser = certUser_;
    req.clientCertGroups = certGroups_;
    version_ = msg.version();
    keepAlive_ = msg.keep_alive();
    head_ = msg.method() == http::verb::head;
    answered_ = false;
    try {
      server_.handler_(std::move(req), this->shared_from_this());
    } catch (const std::exception& e) {
      Response r;
      r.status = 500;
      r.body = std::string("internal error: ") + e.what() + "\n";
      respond(std::move(r));
    }
  }

  void write(Response r, bool keepAlive, bool linger) {
    if (done_) return;
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(r.status), version_);
    for (const auto& [k, v] : server_.options_.headers)
      res->set(k, v);
    res->set(http::field::content_type, r.contentType);
    for (const auto& [k, v] : r.headers)
      res->insert(k, v);
    res->content_length(r.body.size());
    if (!head_) res->body() = std::move(r.body);
    res->keep_alive(keepAlive);
    beast::get_lowest_layer(stream_).expires_after(server_.options_.idleTimeout);
    http::async_write(
        stream_, *res,
        [self = this->shared_from_this(), res, linger](beast::error_code ec, std::size_t) {
          if (!ec && linger) return self->lingeringClose();
          if (ec || !res->keep_alive()) return self->closeNow();
          self->read();
        });
  }

  // After an error answer the client may still be sending (e.g. a body over the limit). Closing
  // with unread input makes the kernel send RST, which can destroy the answer before the client
  // reads it; so stop sending, drain what arrives for a bounded time, then close.
  void lingeringClose() {
    beast::error_code ignored;
    beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_send, ignored);
    beast::get_lowest_layer(stream_).expires_after(kLingerTimeout);
    drain(0);
  }

  void drain(std::size_t drained) {
    beast::get_lowest_layer(stream_).async_read_some(
        net::buffer(discard_),
        [self = this->shared_from_this(), drained](beast::error_code ec, std::size_t n) {
          if (ec || drained + n > kLingerLimit) return self->closeNow();
          self->drain(drained + n);
        });
  }

  // --- streamed bodies ---
  void startStream(int status, const std::string& contentType,
                   std::shared_ptr<ChunkSource> source) {
    if (done_) {
      source->closed();
      return;
    }
    source_ = std::move(source);
    auto res = std::make_shared<http::response<http::empty_body>>(static_cast<http::status>(status),
                                                                  version_);
    for (const auto& [k, v] : server_.options_.headers)
      res->set(k, v);
    res->set(http::field::content_type, contentType);
    res->chunked(true);
    res->keep_alive(false);
    auto sr = std::make_shared<http::response_serializer<http::empty_body>>(*res);
    beast::get_lowest_layer(stream_).expires_never();
    writing_ = true;
    http::async_write_header(
        stream_, *sr,
        [self = this->shared_from_this(), res, sr](beast::error_code ec, std::size_t) {
          self->writing_ = false;
          // Stopped (or the client gone) while the header was written.
          if (ec || !self->source_) return self->abort();
          self->watchForDisconnect();
          self->source_->started(self);
          self->pump();
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
    if (done_ || writing_ || !source_) return;
    chunk_.clear();
    switch (source_->next(chunk_)) {
    case ChunkSource::Next::kIdle: return;
    case ChunkSource::Next::kFinish: return finish();
    case ChunkSource::Next::kAbort: return abort();
    case ChunkSource::Next::kData: break;
    }
    if (chunk_.empty()) return;
    writing_ = true;
    net::async_write(stream_, http::make_chunk(net::buffer(chunk_)),
                     [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                       self->writing_ = false;
                       if (ec) return self->abort();
                       self->pump();
                     });
  }

  // Ends the body cleanly (last chunk) and closes.
  void finish() {
    if (done_) return;
    done_ = true;
    releaseSource();
    net::async_write(
        stream_, http::make_chunk_last(),
        [self = this->shared_from_this()](beast::error_code, std::size_t) { self->closeNow(); });
  }

  // Cuts the connection: a stopping server, a client gone, or a source that says so.
  void abort() {
    if (done_ && !source_) return closeNow();
    done_ = true;
    releaseSource();
    closeNow();
  }

  void releaseSource() {
    if (auto s = std::move(source_)) s->closed();
  }

  void closeNow() {
    done_ = true;
    beast::error_code ignored;
    beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(stream_).close();
  }

  std::shared_ptr<boost::asio::ssl::context> tls_; // before stream_: destroyed after it
  Stream stream_;
  Server& server_;
  boost::asio::any_io_executor executor_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  unsigned version_ = 11;
  bool keepAlive_ = true;
  bool head_ = false;
  bool clientCert_ = false;
  std::string certUser_;                // its subject's common name
  std::vector<std::string> certGroups_; // its subject's organizations
  std::atomic<bool> answered_{false};
  std::shared_ptr<ChunkSource> source_;
  std::string chunk_;
  std::array<char, 4096> discard_{};
  bool writing_ = false;
  bool done_ = false;
};

Server::Server(net::io_context& io, std::shared_ptr<spdlog::logger> logger, ServerOptions options,
               Handler handler, std::shared_ptr<net::ssl::context> tls)
    : io_(io), logger_(std::move(logger)), options_(std::move(options)),
      handler_(std::move(handler)), tls_(std::move(tls)) {}

Server::~Server() {
  try {
    stop();
  } catch (...) { // NOLINT(bugprone-empty-catch): a destructor must not throw; nothing to add
  }
}

Result<tcp::endpoint> Server::listen(const std::string& address) {
  auto opened = openListener(io_, address, options_.name);
  if (!opened) return makeError(opened.error());
  auto acceptor = opened.value();
  boost::system::error_code ec;
  auto bound = acceptor->local_endpoint(ec);
  {
    std::lock_guard lock(mu_);
    acceptor_ = acceptor;
    accepting_ = true;
  }
  accept(acceptor);
  return bound;
}

// Takes the acceptor by value: stop() may reset the member while a completion is running.
void Server::accept(const std::shared_ptr<tcp::acceptor>& acceptor) {
  acceptor->async_accept(net::make_strand(io_), [this, acceptor](beast::error_code ec,
                                                                 tcp::socket s) {
    if (ec == net::error::operation_aborted || !acceptor->is_open()) return;
    if (!ec) {
      s.set_option(tcp::no_delay(true), ec);
      if (auto tls = this->tls())
        std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(
            beast::ssl_stream<beast::tcp_stream>(beast::tcp_stream(std::move(s)), *tls), *this, tls)
            ->run();
      else
        std::make_shared<Session<beast::tcp_stream>>(beast::tcp_stream(std::move(s)), *this)->run();
    } else {
      logger_->warn("{} accept failed: {}", options_.name, ec.message());
    }
    accept(acceptor);
  });
}

std::shared_ptr<net::ssl::context> Server::tls() const {
  std::lock_guard lock(mu_);
  return tls_;
}

void Server::setTls(std::shared_ptr<net::ssl::context> tls) {
  std::lock_guard lock(mu_);
  if (tls_ && tls) tls_ = std::move(tls);
}

bool Server::track(const std::shared_ptr<Connection>& connection) {
  std::lock_guard lock(mu_);
  if (!accepting_) return false;
  std::erase_if(connections_, [](const auto& c) { return c.expired(); });
  connections_.push_back(connection);
  ++accepted_;
  return true;
}

uint64_t Server::connectionsAccepted() const {
  std::lock_guard lock(mu_);
  return accepted_;
}

bool Server::listening() const {
  std::lock_guard lock(mu_);
  return accepting_;
}

void Server::stop() {
  std::shared_ptr<tcp::acceptor> acceptor;
  std::vector<std::weak_ptr<Connection>> open;
  {
    std::lock_guard lock(mu_);
    acceptor = std::move(acceptor_);
    accepting_ = false;
    open.swap(connections_);
  }
  if (acceptor) {
    auto done = std::make_shared<std::promise<void>>();
    auto fut = done->get_future();
    net::dispatch(acceptor->get_executor(), [acceptor, done] {
      boost::system::error_code ignored;
      acceptor->close(ignored);
      done->set_value();
    });
    if (fut.wait_for(std::chrono::seconds(2)) != std::future_status::ready) {
      boost::system::error_code ignored; // the io_context is not running: close directly
      acceptor->close(ignored);
    }
  }
  for (const auto& c : open)
    if (auto live = c.lock()) live->shutdown();
}

} // namespace kuscia_host::httpd
