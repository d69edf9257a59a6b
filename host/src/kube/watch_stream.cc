// The client's second job: a watch's stream (BeastHttpClient::stream), read as it comes, its
// socket out of the reactor between the points of the watches' grid.
#include "kube/http_client.h"
#include "kube/http_connection.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <mutex>
#include <vector>

namespace kuscia_host::kube {

// The client's own internals (http_connection.h).
using wire::appendRequest;
using wire::connect;
using wire::copyHeaders;
using wire::Failure;
using wire::finish;
using wire::HeldOut;
using wire::nextGridPoint;
using wire::requestName;
using wire::tlsBuffered;
namespace http = beast::http;

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

namespace {

// Reads a watch's answer on one stream (plain or TLS): the header, then the body as it comes,
// each read's events delivered together, at most once per point of the request's grid.
template <class Stream> class StreamReader {
public:
  StreamReader(Stream& s, BeastHttpClient::Connection& conn, const HttpRequest& request,
               const std::function<void(std::string_view)>& onData,
               const std::atomic<bool>& cancelled)
      : s_(s), conn_(conn), request_(request), onData_(onData), cancelled_(cancelled),
        step_(std::chrono::duration_cast<std::chrono::steady_clock::duration>(request.readGrid)) {
    parser_.body_limit(boost::none);
  }

  net::awaitable<HttpResponse> run(const std::string& req) {
    conn_.lowest().expires_after(request_.timeout);
    co_await net::async_write(s_, net::buffer(req), net::redirect_error(net::use_awaitable, ec_));
    if (ec_) throw boost::system::system_error(ec_);
    co_await http::async_read_header(s_, conn_.buffer, parser_,
                                     net::redirect_error(net::use_awaitable, ec_));
    if (ec_) throw boost::system::system_error(ec_);
    res_.status = static_cast<int>(parser_.get().result_int());
    copyHeaders(parser_.get(), res_);
    if (request_.readGrid.count() > 0) grid_.emplace(co_await net::this_coro::executor);
    protocol_ = conn_.lowest().socket().local_endpoint(ec_).protocol();
    if (ec_) throw boost::system::system_error(ec_);
    lastRead_ = std::chrono::steady_clock::now();
    // The socket is read here, and what a read brought is parsed to its end and delivered at
    // once: one wake-up, one delivery, however many events (chunks) it held.
    while (!parser_.is_done()) {
      parseBuffered();
      if (parser_.is_done()) break;
      // What a burst brought is delivered once it is all read (over TLS a read returns one
      // record: one event, as servers write them).
      if (!backlog_) deliver();
      const bool waited = co_await waitForGrid();
      co_await readSome(waited);
    }
    if (out_.held()) out_.giveBack(conn_.lowest().socket(), protocol_);
    deliver();
    co_return std::move(res_);
  }

private:
  static constexpr std::size_t kRead = std::size_t{64} * 1024;

  // Everything buffered that makes body.
  void parseBuffered() {
    while (conn_.buffer.size() > 0 && !parser_.is_done()) {
      parser_.get().body().data = buf_.data() + filled_;
      parser_.get().body().size = buf_.size() - filled_;
      std::size_t used = parser_.put(conn_.buffer.data(), ec_);
      conn_.buffer.consume(used);
      filled_ = buf_.size() - parser_.get().body().size;
      if (ec_ == http::error::need_buffer) {
        ec_ = {};
        deliver(); // the body buffer is full
        continue;
      }
      if (ec_ == http::error::need_more) {
        ec_ = {};
        break;
      }
      if (ec_) throw boost::system::system_error(ec_);
      if (used == 0) break;
    }
  }

  // The body parsed since the last delivery: to the watch (200), else kept as the error's body.
  void deliver() {
    if (filled_ == 0) return;
    if (res_.status == 200)
      onData_(std::string_view(buf_.data(), filled_));
    else if (res_.body.size() < (std::size_t{1} << 20))
      res_.body.append(buf_.data(), filled_);
    filled_ = 0;
  }

  // The next read waits for the grid's next point: what comes meanwhile waits in the socket and
  // is read with it. (Not while more is waiting after a read: a stream must not fall behind its
  // server; nor after a quiet spell, when a wait would be a wake-up more for an event that comes
  // alone.) Meanwhile the socket is out of the reactor: Asio watches sockets edge-triggered for
  // reading whether a read waits or not, so every event that came would wake the host for
  // nothing (L1 at 1,000 tasks: 31 to 33 wake-ups a task with the socket in, 2 to 4 with it out,
  // 38 without a grid). A cancel() meanwhile finds no socket to shut down and is seen after the
  // wait. (Its shutdown runs on the stream's strand, so only while the stream waits: for the
  // grid, or in the reactor with the socket given back. Between the two nothing here may wait.)
  // Whether it waited.
  net::awaitable<bool> waitForGrid() {
    if (!grid_ || backlog_ || quiet_) co_return false;
    if (!out_.held()) out_.take(conn_.lowest().socket());
    grid_->expires_at(nextGridPoint(request_.readGrid));
    co_await grid_->async_wait(net::redirect_error(net::use_awaitable, ec_));
    if (cancelled_) throw Failure("cancelled");
    co_return true;
  }

  // One read of the socket into the connection's buffer.
  net::awaitable<void> readSome(bool waited) {
    std::size_t n = 0;
    ec_ = {};
    // Plain TCP reads the socket while it is out, and it stays out while reads find something:
    // taking it out and back costs two epoll_ctl and an ioctl (Asio sets a socket it is given
    // non-blocking again), each a system call that costs the host more than the read itself in a
    // virtual machine. Only a read that finds nothing gives it back, for the reactor to wait for
    // what comes next. TLS reads through its stream.
    if (out_.held() && !conn_.tls && (waited || backlog_))
      n = out_.receive(conn_.buffer.prepare(kRead));
    if (n == 0) {
      if (out_.held()) out_.giveBack(conn_.lowest().socket(), protocol_);
      conn_.lowest().expires_after(request_.timeout);
      n = co_await s_.async_read_some(conn_.buffer.prepare(kRead),
                                      net::redirect_error(net::use_awaitable, ec_));
    }
    conn_.buffer.commit(n);
    const auto readAt = std::chrono::steady_clock::now();
    quiet_ = readAt - lastRead_ > 2 * step_;
    lastRead_ = readAt;
    // More already in the socket (a burst, or over TCP a read that filled the buffer: a shorter
    // one took all there was), or behind this TLS record (a TLS read returns one record: the rest
    // waits in the TLS state, read from the socket already): read on.
    backlog_ = n == kRead;
    if (conn_.tls) {
      beast::error_code unknown;
      backlog_ = backlog_ || conn_.lowest().socket().available(unknown) > 0 ||
                 tlsBuffered(conn_.tls->native_handle());
    }
    if (ec_ == net::error::eof) {
      ec_ = {};
      if (n == 0) {
        parser_.put_eof(ec_);
        if (ec_) throw boost::system::system_error(ec_);
        if (!parser_.is_done()) throw Failure("the stream ended mid-message");
      }
    } else if (ec_) {
      throw boost::system::system_error(ec_);
    }
  }

  Stream& s_;
  BeastHttpClient::Connection& conn_;
  const HttpRequest& request_;
  const std::function<void(std::string_view)>& onData_;
  const std::atomic<bool>& cancelled_;
  const std::chrono::steady_clock::duration step_;
  http::response_parser<http::buffer_body> parser_;
  beast::error_code ec_;
  HttpResponse res_;
  std::vector<char> buf_ = std::vector<char>(kRead);
  std::size_t filled_ = 0; // body parsed and not yet delivered
  std::optional<net::steady_timer> grid_;
  bool backlog_ = false; // more was waiting after the last read
  bool quiet_ = true;    // the last read came more than two steps after the one before
  std::chrono::steady_clock::time_point lastRead_;
  tcp protocol_ = tcp::v4();
  HeldOut out_; // the socket while it is out of the reactor
};

} // namespace

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
        // (Not a conditional expression: GCC 12 destroys a co_await temporary in ?: twice.)
        HttpResponse res;
        if (conn->tls) {
          StreamReader reader(*conn->tls, *conn, request, onData, state->cancelled);
          res = co_await reader.run(req);
        } else {
          StreamReader reader(*conn->tcp, *conn, request, onData, state->cancelled);
          res = co_await reader.run(req);
        }
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
