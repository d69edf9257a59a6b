// The client's first job: requests, pipelined on kept-alive connections, their answers read in
// order (on the watches' grid over plain TCP); the connections and their deadlines. The second,
// watch streams, is watch_stream.cc.
#include "kube/http_client.h"
#include "kube/http_connection.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include <atomic>
#include <optional>
#include <utility>

namespace kuscia_host::kube {

// The client's own internals (http_connection.h).
using wire::appendRequest;
using wire::connect;
using wire::deadlineAfter;
using wire::describe;
using wire::Failure;
using wire::HeldOut;
using wire::nextGridPoint;
using wire::requestName;
namespace http = beast::http;

struct BeastHttpClient::Queued {
  HttpRequest request;
  std::function<void(Result<HttpResponse>)> done;
  // Sent again on a new connection once already, after a kept-alive one failed before any answer.
  bool again = false;
};

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

// One batch's exchange: what exchange() and its steps share.
struct BeastHttpClient::Exchange {
  std::shared_ptr<Connection> conn; // null until connected, when the batch opens its own
  bool reused = false;              // a kept-alive connection
  std::vector<Queued> sent;         // the requests written, in order
  std::size_t answered = 0;
  bool kept = false;      // the connection went back for another batch
  bool closed = false;    // the server closed the connection after its last answer
  bool transport = false; // the failure below is the connection's (not a deadline or a refusal)
  std::string failure;    // what ended the exchange early, for those not answered

  void failed(const boost::system::system_error& e) {
    transport = !conn || !conn->timedOut;
    failure = !transport || e.code() == beast::error::timeout ? std::string("timed out")
                                                              : describe(e.code());
  }
};

void BeastHttpClient::failRequest(Queued& q, const std::string& why) {
  auto done = std::move(q.done);
  done(makeError(requestName(access_, q.request) + ": " + why));
}

std::string BeastHttpClient::serialize(std::vector<Queued>& batch, std::vector<Queued>& sent) {
  std::string bytes;
  sent.reserve(batch.size());
  for (auto& q : batch) {
    const std::size_t before = bytes.size();
    try {
      appendRequest(bytes, access_, q.request);
      sent.push_back(std::move(q));
    } catch (const Failure& e) {
      bytes.resize(before);
      failRequest(q, e.what());
    }
  }
  return bytes;
}

net::awaitable<void> BeastHttpClient::exchange(std::shared_ptr<Connection> conn,
                                               std::vector<Queued> batch) {
  auto self = shared_from_this(); // the client outlives its exchanges
  Exchange x;
  x.reused = conn != nullptr;
  x.conn = std::move(conn);
  // What the batch sends, in one write; a request that cannot be written is failed alone.
  const std::string bytes = serialize(batch, x.sent);
  if (x.sent.empty()) {
    if (x.conn)
      putIdle(std::move(x.conn));
    else
      dropped();
    co_return;
  }
  co_await write(x, bytes);
  co_await readAnswers(x);
  if (!x.kept) {
    if (x.conn) untrack(x.conn);
    dropped();
  }
  settle(x);
}

net::awaitable<void> BeastHttpClient::write(Exchange& x, const std::string& bytes) {
  beast::error_code ec;
  try {
    if (!x.conn) {
      x.conn = co_await connect(access_, ssl_.get(), x.sent.front().request.timeout);
      std::lock_guard lock(mu_);
      ++opened_;
    }
    // A deadline for the write and the first answer, then for each answer after the one before,
    // checked by the watchdog: cheaper than arming a timer for every read and write.
    track(x.conn, x.sent.front().request.timeout);
    if (x.conn->tls)
      co_await net::async_write(*x.conn->tls, net::buffer(bytes),
                                net::redirect_error(net::use_awaitable, ec));
    else
      co_await net::async_write(*x.conn->tcp, net::buffer(bytes),
                                net::redirect_error(net::use_awaitable, ec));
    if (ec) throw boost::system::system_error(ec);
  } catch (const boost::system::system_error& e) {
    x.failed(e);
  } catch (const Failure& e) {
    x.failure = e.what();
  }
}

net::awaitable<void> BeastHttpClient::readAnswers(Exchange& x) {
  if (!x.failure.empty()) co_return; // the write failed (the connection may not be there)
  Connection& conn = *x.conn;
  // Over plain TCP with a grid, the answers are read at its points (see HttpRequest::readGrid),
  // the socket out of the reactor meanwhile.
  const auto grid = x.sent.front().request.readGrid;
  const bool onGrid = !conn.tls && grid.count() > 0;
  beast::error_code ec;
  std::optional<net::steady_timer> gridTimer;
  HeldOut out;
  tcp protocol = tcp::v4();
  if (onGrid) {
    gridTimer.emplace(co_await net::this_coro::executor);
    protocol = conn.tcp->socket().local_endpoint(ec).protocol();
  }
  while (x.answered < x.sent.size()) {
    Queued& q = x.sent[x.answered];
    HttpResponse res;
    try {
      if (x.answered > 0) conn.deadline = deadlineAfter(q.request.timeout);
      AnswerParser parser(res);
      if (q.request.method == "HEAD") parser.skip(true);
      if (onGrid) {
        co_await readOnGrid(conn, parser, out, *gridTimer, grid);
        if (out.held() && (x.answered + 1 == x.sent.size() || !parser.keep_alive()))
          out.giveBack(conn.tcp->socket(), protocol);
      } else if (conn.tls)
        co_await http::async_read(*conn.tls, conn.buffer, parser,
                                  net::redirect_error(net::use_awaitable, ec));
      else
        co_await http::async_read(*conn.tcp, conn.buffer, parser,
                                  net::redirect_error(net::use_awaitable, ec));
      if (ec || conn.timedOut) throw boost::system::system_error(ec);
      x.closed = !parser.keep_alive();
    } catch (const boost::system::system_error& e) {
      x.failed(e);
      break;
    }
    ++x.answered;
    if (x.answered == x.sent.size() && !x.closed) {
      untrack(x.conn);
      putIdle(x.conn); // before the last answer is handed over, which may send again
      x.kept = true;
    }
    auto done = std::move(q.done);
    done(std::move(res));
    if (x.closed) break;
  }
}

void BeastHttpClient::settle(Exchange& x) {
  if (x.answered == x.sent.size()) return;
  std::vector<Queued> rest(std::make_move_iterator(x.sent.begin() + static_cast<long>(x.answered)),
                           std::make_move_iterator(x.sent.end()));
  if (x.closed) {
    // The server closed the connection after an answer: what it had not answered it did not
    // take up; sent again (each round has one answered at least).
    start(std::move(rest), false);
    return;
  }
  if (x.transport && x.reused && x.answered == 0 && !rest.front().again) {
    // A kept-alive connection the server closed meanwhile fails before its first answer: once
    // more on a new connection.
    for (auto& q : rest)
      q.again = true;
    start(std::move(rest), true);
    return;
  }
  for (auto& q : rest)
    failRequest(q, x.failure);
}

} // namespace kuscia_host::kube
