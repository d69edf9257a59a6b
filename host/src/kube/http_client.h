// HTTP/1.1 client for the Kubernetes API on Boost.Beast: plain TCP or TLS (server verification on
// by default against the configured CA, tls-server-name, client certificate), bearer tokens
// (tokenFile re-read, never sent over plain http), keep-alive connections reused between
// requests, short requests made together pipelined on one connection, no gzip. Completions run on
// the io_context's threads.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/strand.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "kube/cluster_access.h"

namespace kuscia_host::kube {

struct HttpRequest {
  std::string method = "GET";
  std::string target; // path and query, e.g. /api/v1/pods?limit=500
  std::string body;
  std::string contentType;
  std::chrono::milliseconds timeout{30000};
  // A streamed body (stream()): after a read that left nothing buffered, the next waits for the
  // next multiple of this on the steady clock, a grid every stream shares, so that what comes
  // meanwhile is read, parsed and delivered together and the streams' waits end in one wake-up.
  // A read after a quiet spell still completes as soon as data comes. A request's answer (send())
  // over plain TCP is read at the grid's next point, its socket out of the reactor meanwhile, so
  // that it wakes nothing on its own (over TLS it is read as it comes). 0: read as it comes.
  std::chrono::milliseconds readGrid{0};
  // Whether the request may share a connection with others sent in the same turn of the event
  // loop: written with them in one send and answered in order (HTTP/1.1 pipelining). For short
  // requests such as writes; one that may take long (a LIST) would hold up those behind it.
  bool pipelined = false;
};

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers; // lowercase names
  std::string body;
};

// What kube clients depend on; tests may substitute it.
class HttpTransport {
public:
  virtual ~HttpTransport() = default;
  // Sends one request; `done` runs exactly once, on an io thread. Transport failures (refused,
  // TLS verification, timeout) arrive as errors naming the server and the reason.
  virtual void send(HttpRequest request, std::function<void(Result<HttpResponse>)> done) = 0;

  // A long-running request whose 200 body is handed over as it arrives (watches). onData runs
  // with the body's bytes in order, chunk boundaries arbitrary; `done` runs once at the end:
  // the response (its body only when the status is not 200) or the transport error. Both run on
  // `strand`, the caller's, so the caller's state needs no other guard. A request stream has its
  // own connection; `timeout` bounds each read. cancel() ends it early (done then reports an
  // error).
  class Stream {
  public:
    virtual ~Stream() = default;
    virtual void cancel() = 0;
  };
  using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;
  virtual std::shared_ptr<Stream> stream(HttpRequest request, Strand strand,
                                         std::function<void(std::string_view)> onData,
                                         std::function<void(Result<HttpResponse>)> done) = 0;
};

class BeastHttpClient final : public HttpTransport,
                              public std::enable_shared_from_this<BeastHttpClient> {
public:
  // Fails when the TLS material in `access` is unusable (bad CA, certificate or key).
  static Result<std::shared_ptr<BeastHttpClient>> create(boost::asio::io_context& io,
                                                         ClusterAccess access);
  // Pipelined requests (HttpRequest::pipelined) sent together share a connection this many at
  // a time at most; more are spread over as many connections as that takes.
  static constexpr std::size_t kPipelineDepth = 16;
  // Connections for requests (not streams) open at once, at most: a batch that finds none idle
  // and this many open waits for one to be free. Each holds a 64 KiB read buffer.
  static constexpr std::size_t kMaxConnections = 32;
  ~BeastHttpClient() override;

  void send(HttpRequest request, std::function<void(Result<HttpResponse>)> done) override;
  std::shared_ptr<Stream> stream(HttpRequest request, Strand strand,
                                 std::function<void(std::string_view)> onData,
                                 std::function<void(Result<HttpResponse>)> done) override;

  const ClusterAccess& access() const { return access_; }
  // Connections opened so far (keep-alive reuse keeps this low).
  std::size_t connectionsOpened() const;

  struct Connection; // implementation details, opaque
  struct StreamState;
  struct Queued;

private:
  BeastHttpClient(boost::asio::io_context& io, ClusterAccess access);
  // Sends what the turn's pipelined requests queued, in batches of kPipelineDepth at most.
  void flush();
  // Sends a batch on one connection: an idle one unless `fresh`, or a new one, or when
  // kMaxConnections are open the first to be free.
  void start(std::vector<Queued> batch, bool fresh);
  // Runs a batch's exchange on `conn`, or on a new connection when null.
  void run(std::shared_ptr<Connection> conn, std::vector<Queued> batch);
  // Writes a batch's requests in one send and reads their answers in order, handing each over as
  // it comes. What a closed or failed connection left unanswered is sent again or failed (see the
  // definition).
  boost::asio::awaitable<void> exchange(std::shared_ptr<Connection> conn,
                                        std::vector<Queued> batch);
  struct Exchange; // one batch's exchange, shared by its steps
  // The batch's requests as one send's bytes; those that cannot be written are failed alone, the
  // others moved to `sent`.
  std::string serialize(std::vector<Queued>& batch, std::vector<Queued>& sent);
  // Connects when the exchange has no connection yet, and writes the bytes.
  boost::asio::awaitable<void> write(Exchange& x, const std::string& bytes);
  // Reads the answers in order (on the grid over plain TCP), handing each over as it comes.
  boost::asio::awaitable<void> readAnswers(Exchange& x);
  // What a closed or failed connection left unanswered: sent again, or failed.
  void settle(Exchange& x);
  void failRequest(Queued& q, const std::string& why);
  // A connection whose exchange ended with it kept alive: the next waiting batch's, or idle.
  void putIdle(std::shared_ptr<Connection> c);
  // A connection (or one being opened) was closed or failed: its room goes to a waiting batch.
  void dropped();
  // Request deadlines: a watchdog ticking every 250 ms while requests are in flight closes the
  // connection of any request past its deadline.
  void track(const std::shared_ptr<Connection>& c, std::chrono::milliseconds timeout);
  void untrack(const std::shared_ptr<Connection>& c);
  void watchdog();
  void armWatchdog(); // with mu_ held; at most one watchdog timer is pending

  boost::asio::io_context& io_;
  ClusterAccess access_;
  std::unique_ptr<boost::asio::ssl::context> ssl_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Connection>> idle_;
  std::set<std::shared_ptr<Connection>> inFlight_;
  std::vector<Queued> queued_; // pipelined requests not yet sent; flush() is posted when not empty
  bool flushPosted_ = false;
  std::size_t live_ = 0;                    // request connections open or being opened
  std::deque<std::vector<Queued>> waiting_; // batches waiting for a connection
  bool watchdogArmed_ = false;
  std::size_t opened_ = 0;
};

} // namespace kuscia_host::kube
