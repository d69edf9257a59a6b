#include "kube/http_client.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include <atomic>
#include <charconv>
#include <optional>
#include <sys/socket.h>
#include <unistd.h>
#include <utility>

#include "common/version.h"

namespace kuscia_host::kube {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

struct BeastHttpClient::Connection {
  std::optional<beast::tcp_stream> tcp;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls;
  beast::flat_buffer buffer;
  // The current request's deadline (steady clock, ns; 0 = none), enforced by the watchdog.
  std::atomic<int64_t> deadline{0};
  std::atomic<bool> timedOut{false};
  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *tcp; }
};

struct BeastHttpClient::Queued {
  HttpRequest request;
  std::function<void(Result<HttpResponse>)> done;
  // Sent again on a new connection once already, after a kept-alive one failed before any answer.
  bool again = false;
};

namespace {

// A deadline `timeout` from now, as the watchdog reads it (steady clock, ns).
int64_t deadlineAfter(std::chrono::milliseconds timeout) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             (std::chrono::steady_clock::now() + timeout).time_since_epoch())
      .count();
}

// What a request's failure names: its method and URL.
std::string requestName(const ClusterAccess& a, const HttpRequest& request) {
  return request.method + " " + a.server + request.target;
}

bool isIpAddress(const std::string& host) {
  boost::system::error_code ec;
  net::ip::make_address(host, ec);
  return !ec;
}

// A transport failure, as an exception inside the coroutine only.
struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string describe(const boost::system::error_code& ec) {
  if (ec.category() == net::error::get_ssl_category()) return "TLS: " + ec.message();
  return ec.message();
}

} // namespace

Result<std::shared_ptr<BeastHttpClient>> BeastHttpClient::create(net::io_context& io,
                                                                 ClusterAccess access) {
  std::shared_ptr<BeastHttpClient> c(new BeastHttpClient(io, std::move(access)));
  if (c->access_.scheme == "https") {
    c->ssl_ = std::make_unique<net::ssl::context>(net::ssl::context::tls_client);
    auto& ctx = *c->ssl_;
    boost::system::error_code ec;
    ctx.set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                    net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                    net::ssl::context::no_tlsv1_1);
    if (c->access_.insecureSkipTlsVerify) {
      ctx.set_verify_mode(net::ssl::verify_none);
    } else {
      ctx.set_verify_mode(net::ssl::verify_peer);
      if (c->access_.caPem.empty())
        ctx.set_default_verify_paths(ec);
      else
        ctx.add_certificate_authority(net::buffer(c->access_.caPem), ec);
      if (ec)
        return makeError(c->access_.description +
                         ": certificate authority is unusable: " + describe(ec));
    }
    if (!c->access_.clientCertPem.empty()) {
      ctx.use_certificate_chain(net::buffer(c->access_.clientCertPem), ec);
      if (ec)
        return makeError(c->access_.description +
                         ": client certificate is unusable: " + describe(ec));
      ctx.use_private_key(net::buffer(c->access_.clientKeyPem), net::ssl::context::pem, ec);
      if (ec)
        return makeError(c->access_.description + ": client key is unusable: " + describe(ec));
    }
  }
  return c;
}

BeastHttpClient::BeastHttpClient(net::io_context& io, ClusterAccess access)
    : io_(io), access_(std::move(access)) {}

BeastHttpClient::~BeastHttpClient() = default;

std::size_t BeastHttpClient::connectionsOpened() const {
  std::lock_guard lock(mu_);
  return opened_;
}

void BeastHttpClient::track(const std::shared_ptr<Connection>& c,
                            std::chrono::milliseconds timeout) {
  c->deadline = deadlineAfter(timeout);
  std::lock_guard lock(mu_);
  inFlight_.insert(c);
  armWatchdog();
}

void BeastHttpClient::armWatchdog() {
  if (watchdogArmed_) return;
  watchdogArmed_ = true;
  auto timer = std::make_shared<net::steady_timer>(io_, std::chrono::milliseconds(250));
  timer->async_wait([weak = weak_from_this(), timer](const boost::system::error_code&) {
    if (auto self = weak.lock()) self->watchdog();
  });
}

void BeastHttpClient::untrack(const std::shared_ptr<Connection>& c) {
  c->deadline = 0;
  std::lock_guard lock(mu_);
  inFlight_.erase(c);
}

void BeastHttpClient::watchdog() {
  int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count();
  std::vector<std::shared_ptr<Connection>> expired;
  {
    std::lock_guard lock(mu_);
    watchdogArmed_ = false;
    for (const auto& c : inFlight_) {
      int64_t d = c->deadline;
      if (d != 0 && now > d) expired.push_back(c);
    }
    if (!inFlight_.empty()) armWatchdog();
  }
  for (const auto& c : expired) {
    c->timedOut = true;
    net::post(c->lowest().get_executor(), [c] {
      beast::error_code ignored;
      c->lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
      c->lowest().socket().close(ignored);
    });
  }
}

void BeastHttpClient::putIdle(std::shared_ptr<Connection> c) {
  std::vector<Queued> next;
  {
    std::lock_guard lock(mu_);
    if (waiting_.empty()) {
      idle_.push_back(std::move(c)); // at most kMaxConnections, as those open
      return;
    }
    next = std::move(waiting_.front());
    waiting_.pop_front();
  }
  run(std::move(c), std::move(next));
}

void BeastHttpClient::dropped() {
  std::vector<Queued> next;
  {
    std::lock_guard lock(mu_);
    --live_;
    if (waiting_.empty()) return;
    ++live_;
    next = std::move(waiting_.front());
    waiting_.pop_front();
  }
  run(nullptr, std::move(next));
}

namespace {

// Opens a connection (TCP, then TLS with verification when https).
net::awaitable<std::shared_ptr<BeastHttpClient::Connection>>
connect(const ClusterAccess& a, net::ssl::context* ssl, std::chrono::milliseconds timeout) {
  auto conn = std::make_shared<BeastHttpClient::Connection>();
  // Beast reads only as much as the buffer has room for: without room, every read of a large
  // LIST would be a few hundred bytes (thousands of syscalls per page).
  conn->buffer.reserve(std::size_t{64} * 1024);
  auto ex = co_await net::this_coro::executor;
  tcp::resolver resolver(ex);
  beast::error_code ec;
  auto endpoints =
      co_await resolver.async_resolve(a.host, a.port, net::redirect_error(net::use_awaitable, ec));
  if (ec) throw Failure("cannot resolve " + a.host + ": " + ec.message());
  if (ssl != nullptr) {
    conn->tls.emplace(ex, *ssl);
    std::string name = a.tlsServerName.empty() ? a.host : a.tlsServerName;
    if (!isIpAddress(name)) SSL_set_tlsext_host_name(conn->tls->native_handle(), name.c_str());
    if (!a.insecureSkipTlsVerify)
      conn->tls->set_verify_callback(net::ssl::host_name_verification(name));
  } else {
    conn->tcp.emplace(ex);
  }
  conn->lowest().expires_after(timeout);
  co_await conn->lowest().async_connect(endpoints, net::redirect_error(net::use_awaitable, ec));
  if (ec) throw Failure("cannot connect to " + a.host + ":" + a.port + ": " + ec.message());
  conn->lowest().socket().set_option(tcp::no_delay(true), ec);
  if (conn->tls) {
    co_await conn->tls->async_handshake(net::ssl::stream_base::client,
                                        net::redirect_error(net::use_awaitable, ec));
    if (ec)
      throw Failure("TLS handshake with " + a.host + ":" + a.port + " failed: " + describe(ec));
  }
  conn->lowest().expires_never(); // from here on, deadlines are per request (see track())
  co_return conn;
}

// The first point after now of the grid of `step` on the steady clock that every stream shares.
std::chrono::steady_clock::time_point nextGridPoint(std::chrono::milliseconds step) {
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  const auto d = std::chrono::duration_cast<std::chrono::steady_clock::duration>(step);
  return std::chrono::steady_clock::time_point((now / d + 1) * d);
}

// Whether a TLS stream holds input not yet returned by a read: a record decrypted in part, or
// records read from the socket and not yet decrypted (Asio's engine feeds OpenSSL through a BIO
// pair; a read decrypts one record).
bool tlsBuffered(SSL* ssl) {
  return SSL_has_pending(ssl) == 1 || BIO_ctrl_pending(SSL_get_rbio(ssl)) > 0;
}

// A watch's socket taken out of Asio's reactor between reads (see stream()): the descriptor is
// held here, read with recv() while it is out, and closed if it is never given back.
class HeldOut {
public:
  HeldOut() = default;
  HeldOut(const HeldOut&) = delete;
  HeldOut& operator=(const HeldOut&) = delete;
  ~HeldOut() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool held() const { return fd_ >= 0; }
  void take(tcp::socket& socket) {
    beast::error_code ec;
    const auto fd = socket.release(ec);
    if (!ec) fd_ = fd; // (a socket that cannot be released stays in, as if given back)
  }
  void giveBack(tcp::socket& socket, const tcp& protocol) {
    const int fd = std::exchange(fd_, -1);
    beast::error_code ec;
    socket.assign(protocol, fd, ec);
    if (ec) {
      ::close(fd);
      throw boost::system::system_error(ec);
    }
  }
  // What the socket holds now, without waiting: 0 when nothing (or an end or an error, which the
  // reactor's read that follows reports).
  std::size_t receive(net::mutable_buffer into) const {
    const ssize_t n = receiveRaw(into);
    return n > 0 ? static_cast<std::size_t>(n) : 0;
  }
  // The same, as recv() answers: bytes, 0 at the end, -1 with errno (EAGAIN: nothing yet).
  ssize_t receiveRaw(net::mutable_buffer into) const {
    return ::recv(fd_, into.data(), into.size(), MSG_DONTWAIT);
  }

private:
  int fd_ = -1;
};

bool hasLineBreak(std::string_view s) {
  for (char c : s)
    if (c == '\r' || c == '\n') return true;
  return false;
}

// Whether a request line's part holds a space or a line break. Neither check uses find_first_of
// with a set: it calls memchr for each byte, as much as the rest of the request's serialization.
bool breaksRequestLine(std::string_view s) {
  return hasLineBreak(s) || s.find(' ') != std::string_view::npos;
}

// Appends the request's bytes to `out` (one send carries them, with those pipelined beside it).
// Serialized by hand: Beast's serializer cost about a third of the client's instructions per write
// (buffer-sequence views over each header).
void appendRequest(std::string& out, const ClusterAccess& a, const HttpRequest& request) {
  auto token = a.bearerToken();
  if (!token) throw Failure(token.error());
  if (request.method.empty() || request.target.empty() || request.target[0] != '/' ||
      breaksRequestLine(request.target) || breaksRequestLine(request.method) ||
      hasLineBreak(request.contentType) || hasLineBreak(*token))
    throw Failure("refusing to send a malformed request line or header");
  const bool withBody = !request.body.empty() || request.method == "POST" ||
                        request.method == "PATCH" || request.method == "PUT";
  out.reserve(out.size() + 256 + request.target.size() + token->size() + request.body.size());
  out.append(request.method).append(" ").append(request.target).append(" HTTP/1.1\r\nHost: ");
  out.append(a.host).append(":").append(a.port).append("\r\nUser-Agent: kuscia-host/");
  out.append(kVersion).append("\r\nAccept: application/json\r\n");
  if (!token->empty()) out.append("Authorization: Bearer ").append(*token).append("\r\n");
  if (withBody) {
    char length[24];
    auto [end, ec] = std::to_chars(length, length + sizeof length, request.body.size());
    out.append("Content-Type: ")
        .append(request.contentType.empty() ? "application/json" : request.contentType)
        .append("\r\nContent-Length: ")
        .append(length, end)
        .append("\r\n");
  }
  out.append("\r\n").append(request.body);
}

// Reads an answer straight into an HttpResponse: each header under its lower-case name, the body
// into its string. (Beast's response_parser keeps every header in a node of its own first, to be
// copied again: about a fifth of a write's instructions on the client's side.)
class AnswerParser final : public http::basic_parser<false> {
public:
  explicit AnswerParser(HttpResponse& into) : res_(into) { body_limit(std::uint64_t{1} << 30); }

private:
  void on_request_impl(http::verb, beast::string_view, beast::string_view, int,
                       beast::error_code&) override {}
  void on_response_impl(int code, beast::string_view, int, beast::error_code&) override {
    res_.status = code;
  }
  void on_field_impl(http::field, beast::string_view name, beast::string_view value,
                     beast::error_code&) override {
    name_.assign(name.data(), name.size());
    for (auto& ch : name_)
      if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
    res_.headers[name_].assign(value.data(), value.size()); // a name given twice: the last
  }
  void on_header_impl(beast::error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>& length,
                         beast::error_code&) override {
    if (length) res_.body.reserve(static_cast<std::size_t>(*length));
  }
  std::size_t on_body_impl(beast::string_view body, beast::error_code&) override {
    res_.body.append(body.data(), body.size());
    return body.size();
  }
  void on_chunk_header_impl(std::uint64_t size, beast::string_view, beast::error_code&) override {
    res_.body.reserve(res_.body.size() + static_cast<std::size_t>(size));
  }
  std::size_t on_chunk_body_impl(std::uint64_t, beast::string_view body,
                                 beast::error_code&) override {
    res_.body.append(body.data(), body.size());
    return body.size();
  }
  void on_finish_impl(beast::error_code&) override {}

  HttpResponse& res_;
  std::string name_;
};

// Reads one answer over plain TCP at the points of `grid` (HttpRequest::readGrid): the socket is
// taken out of the reactor for the wait, so that the answer's coming wakes nothing, and read
// with what came meanwhile when the grid's point comes (with the watches' events, read at the
// same points). What the buffer already holds is parsed first: pipelined answers that came
// together are read together.
net::awaitable<void> readOnGrid(BeastHttpClient::Connection& conn, AnswerParser& parser,
                                HeldOut& out, net::steady_timer& timer,
                                std::chrono::milliseconds grid) {
  parser.eager(true);
  beast::error_code ec;
  while (true) {
    if (conn.buffer.size() > 0) {
      const std::size_t used = parser.put(conn.buffer.data(), ec);
      conn.buffer.consume(used);
      if (ec == http::error::need_more) ec = {};
      if (ec) throw boost::system::system_error(ec);
      if (parser.is_done()) co_return;
      if (used > 0 && conn.buffer.size() > 0) continue;
    }
    if (!out.held()) out.take(conn.tcp->socket());
    timer.expires_at(nextGridPoint(grid));
    co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
    if (conn.timedOut) throw boost::system::system_error(ec); // (reported as timed out)
    const ssize_t n = out.receiveRaw(conn.buffer.prepare(std::size_t{64} * 1024));
    if (n > 0) {
      conn.buffer.commit(static_cast<std::size_t>(n));
    } else if (n == 0) { // the server closed: an answer that ends with it, or an end mid-answer
      if (!parser.got_some()) throw boost::system::system_error(http::error::end_of_stream);
      parser.put_eof(ec);
      if (ec) throw boost::system::system_error(ec);
      if (!parser.is_done()) throw boost::system::system_error(http::error::end_of_stream);
      co_return;
    } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
      throw boost::system::system_error(errno, boost::system::system_category());
    }
  }
}

template <class Fields> void copyHeaders(const Fields& fields, HttpResponse& res) {
  std::string name; // one buffer for every name
  for (const auto& f : fields) {
    const auto given = f.name_string();
    name.assign(given.data(), given.size());
    for (auto& ch : name)
      if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
    const auto value = f.value();
    auto it = res.headers.try_emplace(name).first;
    it->second.assign(value.data(), value.size());
  }
}

void finish(const std::function<void(Result<HttpResponse>)>& done, const std::string& where,
            const std::exception_ptr& e, HttpResponse r) {
  if (!e) return done(std::move(r));
  try {
    std::rethrow_exception(e);
  } catch (const boost::system::system_error& ex) {
    done(makeError(
        where + ": " +
        (ex.code() == beast::error::timeout ? std::string("timed out") : describe(ex.code()))));
  } catch (const std::exception& ex) {
    done(makeError(where + ": " + ex.what()));
  }
}

} // namespace

void BeastHttpClient::send(HttpRequest request, std::function<void(Result<HttpResponse>)> done) {
  const bool pipelined = request.pipelined;
  Queued q{std::move(request), std::move(done)};
  if (!pipelined) {
    std::vector<Queued> alone;
    alone.push_back(std::move(q));
    return start(std::move(alone), false);
  }
  // Sent once the turn's handlers have run: the writes they made meanwhile go in the same send.
  {
    std::lock_guard lock(mu_);
    queued_.push_back(std::move(q));
    if (flushPosted_) return;
    flushPosted_ = true;
  }
  net::post(io_, [self = shared_from_this()] { self->flush(); });
}

void BeastHttpClient::flush() {
  std::vector<Queued> all;
  {
    std::lock_guard lock(mu_);
    all.swap(queued_);
    flushPosted_ = false;
  }
  // As few connections as the depth allows, their batches as even as can be.
  const std::size_t batches = (all.size() + kPipelineDepth - 1) / kPipelineDepth;
  std::size_t at = 0;
  for (std::size_t i = 0; i < batches; ++i) {
    const std::size_t n = (all.size() - at) / (batches - i);
    std::vector<Queued> batch;
    batch.reserve(n);
    for (std::size_t k = 0; k < n; ++k)
      batch.push_back(std::move(all[at + k]));
    at += n;
    start(std::move(batch), false);
  }
}

void BeastHttpClient::start(std::vector<Queued> batch, bool fresh) {
  std::shared_ptr<Connection> conn;
  {
    std::lock_guard lock(mu_);
    if (!fresh && !idle_.empty()) {
      conn = std::move(idle_.back());
      idle_.pop_back();
    } else if (live_ < kMaxConnections) {
      ++live_;
    } else {
      waiting_.push_back(std::move(batch));
      return;
    }
  }
  run(std::move(conn), std::move(batch));
}

void BeastHttpClient::run(std::shared_ptr<Connection> conn, std::vector<Queued> batch) {
  // On a kept-alive connection, the exchange runs on that connection's own strand, so socket
  // completions need no hop between strands.
  net::any_io_executor ex =
      conn ? conn->lowest().get_executor() : net::any_io_executor(net::make_strand(io_));
  net::co_spawn(ex, exchange(std::move(conn), std::move(batch)), [](const std::exception_ptr& e) {
    if (e) std::rethrow_exception(e); // from a caller's completion: as it would be without us
  });
}

net::awaitable<void> BeastHttpClient::exchange(std::shared_ptr<Connection> conn,
                                               std::vector<Queued> batch) {
  auto self = shared_from_this(); // the client outlives its exchanges
  const bool reused = conn != nullptr;
  auto fail = [this](Queued& q, const std::string& why) {
    auto done = std::move(q.done);
    done(makeError(requestName(access_, q.request) + ": " + why));
  };
  // What the batch sends, in one write; a request that cannot be written is failed alone.
  std::string bytes;
  std::vector<Queued> sent;
  sent.reserve(batch.size());
  for (auto& q : batch) {
    const std::size_t before = bytes.size();
    try {
      appendRequest(bytes, access_, q.request);
      sent.push_back(std::move(q));
    } catch (const Failure& e) {
      bytes.resize(before);
      fail(q, e.what());
    }
  }
  if (sent.empty()) {
    if (conn)
      putIdle(std::move(conn));
    else
      dropped();
    co_return;
  }
  std::size_t answered = 0;
  bool kept = false;      // the connection went back for another batch
  bool closed = false;    // the server closed the connection after its last answer
  bool transport = false; // the failure below is the connection's (not a deadline or a refusal)
  std::string failure;    // what ended the exchange early, for those not answered
  auto failed = [&](const boost::system::system_error& e) {
    transport = !conn || !conn->timedOut;
    failure = !transport || e.code() == beast::error::timeout ? std::string("timed out")
                                                              : describe(e.code());
  };
  beast::error_code ec;
  try {
    if (!conn) {
      conn = co_await connect(access_, ssl_.get(), sent.front().request.timeout);
      std::lock_guard lock(mu_);
      ++opened_;
    }
    // A deadline for the write and the first answer, then for each answer after the one before,
    // checked by the watchdog: cheaper than arming a timer for every read and write.
    track(conn, sent.front().request.timeout);
    if (conn->tls)
      co_await net::async_write(*conn->tls, net::buffer(bytes),
                                net::redirect_error(net::use_awaitable, ec));
    else
      co_await net::async_write(*conn->tcp, net::buffer(bytes),
                                net::redirect_error(net::use_awaitable, ec));
    if (ec) throw boost::system::system_error(ec);
  } catch (const boost::system::system_error& e) {
    failed(e);
  } catch (const Failure& e) {
    failure = e.what();
  }
  // Over plain TCP with a grid, the answers are read at its points (see HttpRequest::readGrid),
  // the socket out of the reactor meanwhile.
  const auto grid = sent.front().request.readGrid;
  const bool onGrid = failure.empty() && !conn->tls && grid.count() > 0;
  std::optional<net::steady_timer> gridTimer;
  HeldOut out;
  tcp protocol = tcp::v4();
  if (onGrid) {
    gridTimer.emplace(co_await net::this_coro::executor);
    protocol = conn->tcp->socket().local_endpoint(ec).protocol();
  }
  while (failure.empty() && answered < sent.size()) {
    Queued& q = sent[answered];
    HttpResponse res;
    try {
      if (answered > 0) conn->deadline = deadlineAfter(q.request.timeout);
      AnswerParser parser(res);
      if (q.request.method == "HEAD") parser.skip(true);
      if (onGrid) {
        co_await readOnGrid(*conn, parser, out, *gridTimer, grid);
        if (out.held() && (answered + 1 == sent.size() || !parser.keep_alive()))
          out.giveBack(conn->tcp->socket(), protocol);
      } else if (conn->tls)
        co_await http::async_read(*conn->tls, conn->buffer, parser,
                                  net::redirect_error(net::use_awaitable, ec));
      else
        co_await http::async_read(*conn->tcp, conn->buffer, parser,
                                  net::redirect_error(net::use_awaitable, ec));
      if (ec || conn->timedOut) throw boost::system::system_error(ec);
      closed = !parser.keep_alive();
    } catch (const boost::system::system_error& e) {
      failed(e);
      break;
    }
    ++answered;
    if (answered == sent.size() && !closed) {
      untrack(conn);
      putIdle(conn); // before the last answer is handed over, which may send again
      kept = true;
    }
    auto done = std::move(q.done);
    done(std::move(res));
    if (closed) break;
  }
  if (!kept) {
    if (conn) untrack(conn);
    dropped();
  }
  if (answered == sent.size()) co_return;
  std::vector<Queued> rest(std::make_move_iterator(sent.begin() + static_cast<long>(answered)),
                           std::make_move_iterator(sent.end()));
  if (closed) {
    // The server closed the connection after an answer: what it had not answered it did not
    // take up; sent again (each round has one answered at least).
    start(std::move(rest), false);
    co_return;
  }
  if (transport && reused && answered == 0 && !rest.front().again) {
    // A kept-alive connection the server closed meanwhile fails before its first answer: once
    // more on a new connection.
    for (auto& q : rest)
      q.again = true;
    start(std::move(rest), true);
    co_return;
  }
  for (auto& q : rest)
    fail(q, failure);
}

struct BeastHttpClient::StreamState final : HttpTransport::Stream {
  explicit StreamState(net::strand<net::io_context::executor_type> s) : strand(std::move(s)) {}
  void cancel() override {
    cancelled = true;
    std::lock_guard lock(mu);
    if (auto c = conn.lock())
      net::post(strand, [c] {
        beast::error_code ec;
        c->lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
        c->lowest().cancel();
      });
  }
  net::strand<net::io_context::executor_type> strand;
  std::atomic<bool> cancelled{false};
  std::mutex mu;
  std::weak_ptr<Connection> conn;
};

std::shared_ptr<HttpTransport::Stream>
BeastHttpClient::stream(HttpRequest request, Strand strand,
                        std::function<void(std::string_view)> onData,
                        std::function<void(Result<HttpResponse>)> done) {
  auto self = shared_from_this();
  auto state = std::make_shared<StreamState>(std::move(strand));
  std::string where = requestName(access_, request);
  net::co_spawn(
      state->strand,
      [self, state, request, onData = std::move(onData)]() -> net::awaitable<HttpResponse> {
        auto conn = co_await connect(self->access_, self->ssl_.get(), request.timeout);
        {
          std::lock_guard lock(self->mu_);
          ++self->opened_;
        }
        {
          std::lock_guard lock(state->mu);
          state->conn = conn;
        }
        if (state->cancelled) throw Failure("cancelled");
        std::string req;
        appendRequest(req, self->access_, request);
        http::response_parser<http::buffer_body> parser;
        parser.body_limit(boost::none);
        beast::error_code ec;
        auto rw = [&](auto& s) -> net::awaitable<HttpResponse> {
          conn->lowest().expires_after(request.timeout);
          co_await net::async_write(s, net::buffer(req),
                                    net::redirect_error(net::use_awaitable, ec));
          if (ec) throw boost::system::system_error(ec);
          co_await http::async_read_header(s, conn->buffer, parser,
                                           net::redirect_error(net::use_awaitable, ec));
          if (ec) throw boost::system::system_error(ec);
          HttpResponse res;
          res.status = static_cast<int>(parser.get().result_int());
          copyHeaders(parser.get(), res);
          std::vector<char> buf(std::size_t{64} * 1024);
          std::size_t filled = 0; // body parsed and not yet delivered
          auto deliver = [&] {
            if (filled == 0) return;
            if (res.status == 200)
              onData(std::string_view(buf.data(), filled));
            else if (res.body.size() < (std::size_t{1} << 20))
              res.body.append(buf.data(), filled);
            filled = 0;
          };
          std::optional<net::steady_timer> grid;
          if (request.readGrid.count() > 0) grid.emplace(co_await net::this_coro::executor);
          bool backlog = false; // more was waiting after the last read
          bool quiet = true;    // the last read came more than two steps after the one before
          const auto step =
              std::chrono::duration_cast<std::chrono::steady_clock::duration>(request.readGrid);
          auto lastRead = std::chrono::steady_clock::now();
          const auto protocol = conn->lowest().socket().local_endpoint(ec).protocol();
          if (ec) throw boost::system::system_error(ec);
          HeldOut out; // the socket while it is out of the reactor
          // The socket is read here, and what a read brought is parsed to its end and delivered
          // at once: one wake-up, one delivery, however many events (chunks) it held.
          while (!parser.is_done()) {
            // Everything buffered that makes body.
            while (conn->buffer.size() > 0 && !parser.is_done()) {
              parser.get().body().data = buf.data() + filled;
              parser.get().body().size = buf.size() - filled;
              std::size_t used = parser.put(conn->buffer.data(), ec);
              conn->buffer.consume(used);
              filled = buf.size() - parser.get().body().size;
              if (ec == http::error::need_buffer) {
                ec = {};
                deliver(); // the body buffer is full
                continue;
              }
              if (ec == http::error::need_more) {
                ec = {};
                break;
              }
              if (ec) throw boost::system::system_error(ec);
              if (used == 0) break;
            }
            if (parser.is_done()) break;
            // What a burst brought is delivered once it is all read (over TLS a read returns one
            // record: one event, as servers write them).
            if (!backlog) deliver();
            bool waited = false;
            if (grid && !backlog && !quiet) {
              // The next read waits for the grid's next point: what comes meanwhile waits in
              // the socket and is read with it. (Not while more is waiting after a read: a
              // stream must not fall behind its server; nor after a quiet spell, when a wait
              // would be a wake-up more for an event that comes alone.)
              // Meanwhile the socket is out of the reactor: Asio watches sockets edge-triggered
              // for reading whether a read waits or not, so every event that came would wake the
              // host for nothing (L1 at 1,000 tasks: 31 to 33 wake-ups a task with the socket in,
              // 2 to 4 with it out, 38 without a grid). A cancel() meanwhile finds no socket to
              // shut down and is seen after the wait. (Its shutdown runs on the stream's strand,
              // so only while the stream waits: for the grid, or in the reactor with the socket
              // given back. Between the two nothing here may wait.)
              if (!out.held()) out.take(conn->lowest().socket());
              grid->expires_at(nextGridPoint(request.readGrid));
              co_await grid->async_wait(net::redirect_error(net::use_awaitable, ec));
              waited = true;
              if (state->cancelled) throw Failure("cancelled");
            }
            constexpr std::size_t kRead = std::size_t{64} * 1024;
            std::size_t n = 0;
            ec = {};
            // Plain TCP reads the socket while it is out, and it stays out while reads find
            // something: taking it out and back costs two epoll_ctl and an ioctl (Asio sets a
            // socket it is given non-blocking again), each a system call that costs the host more
            // than the read itself in a virtual machine. Only a read that finds nothing gives it
            // back, for the reactor to wait for what comes next. TLS reads through its stream.
            if (out.held() && !conn->tls && (waited || backlog))
              n = out.receive(conn->buffer.prepare(kRead));
            if (n == 0) {
              if (out.held()) out.giveBack(conn->lowest().socket(), protocol);
              conn->lowest().expires_after(request.timeout);
              n = co_await s.async_read_some(conn->buffer.prepare(kRead),
                                             net::redirect_error(net::use_awaitable, ec));
            }
            conn->buffer.commit(n);
            const auto readAt = std::chrono::steady_clock::now();
            quiet = readAt - lastRead > 2 * step;
            lastRead = readAt;
            // More already in the socket (a burst, or over TCP a read that filled the buffer: a
            // shorter one took all there was), or behind this TLS record (a TLS read returns one
            // record: the rest waits in the TLS state, read from the socket already): read on.
            backlog = n == kRead;
            if (conn->tls) {
              beast::error_code unknown;
              backlog = backlog || conn->lowest().socket().available(unknown) > 0 ||
                        tlsBuffered(conn->tls->native_handle());
            }
            if (ec == net::error::eof) {
              ec = {};
              if (n == 0) {
                parser.put_eof(ec);
                if (ec) throw boost::system::system_error(ec);
                if (!parser.is_done()) throw Failure("the stream ended mid-message");
              }
            } else if (ec) {
              throw boost::system::system_error(ec);
            }
          }
          if (out.held()) out.giveBack(conn->lowest().socket(), protocol);
          deliver();
          co_return res;
        };
        // (Not a conditional expression: GCC 12 destroys a co_await temporary in ?: twice.)
        HttpResponse res;
        if (conn->tls)
          res = co_await rw(*conn->tls);
        else
          res = co_await rw(*conn->tcp);
        beast::error_code ignored;
        conn->lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
        co_return res;
      },
      [state, done = std::move(done), where](const std::exception_ptr& e, HttpResponse r) {
        if (e && state->cancelled) return done(makeError(where + ": cancelled"));
        finish(done, where, e, std::move(r));
      });
  return state;
}

} // namespace kuscia_host::kube
