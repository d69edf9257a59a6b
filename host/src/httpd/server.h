// The HTTP/1.1 server both the admin endpoints and the embedded API server run on (Boost.Beast,
// plain TCP or TLS). It owns everything about connections: the listener, request parsing with
// size limits, keep-alive and idle timeouts, answers to malformed requests (400, 413, 431) that
// still reach the client (the server stops sending and drains input before it closes, so the
// kernel never resets the connection under the answer), chunked streaming bodies, and stop(),
// which closes every connection as a server going down does. What a request means is the
// handler's business.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <kuscia_host/query.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <spdlog/logger.h>
#include <string>
#include <vector>

#include "common/result.h"

namespace kuscia_host::httpd {

struct Request {
  std::string method;
  std::string target; // as received: path and query
  std::string path;
  std::map<std::string, std::string> query; // percent-decoded
  std::string contentType;
  std::string accept;
  std::string authorization;
  std::string userAgent;
  std::string body;
  bool clientCertVerified = false; // TLS: the client sent a certificate the server's CA signed
  std::string clientCertUser;      // its subject's common name (when verified)
  std::vector<std::string> clientCertGroups; // its subject's organizations
  std::string user; // who the admin server authenticated ("" when nobody or no auth)

  bool has(const std::string& param) const { return query.count(param) > 0; }
  // The query parameter, nullopt when absent.
  std::optional<std::string> param(const std::string& name) const;
};

struct Response {
  int status = 200;
  std::string contentType = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

// Splits "a=1&b" into {a:1, b:""}, percent-decoding both sides: the SDK's parser, which plugins
// serving admin routes use too.
using sdk::parseQuery;

// The session side of a streamed response; thread-safe.
class StreamControl {
public:
  virtual ~StreamControl() = default;
  // Data may be available: the session calls ChunkSource::next when it can write.
  virtual void wake() = 0;
  // The executor the session runs on: timers of the source belong there.
  virtual boost::asio::any_io_executor executor() const = 0;
};

// A response body produced as data becomes available (a Kubernetes watch). The session writes
// one chunk per call of next() and calls it again when the write completes or after wake().
class ChunkSource {
public:
  enum class Next {
    kData,   // `out` holds bytes to send as one chunk
    kIdle,   // nothing now: wait for wake()
    kFinish, // end the body (last chunk) and close the connection
    kAbort,  // close the connection without ending the body
  };
  virtual ~ChunkSource() = default;
  // The header was sent. The session owns the source: keep `control` as a weak_ptr (a strong one
  // is a cycle). On the session's executor.
  virtual void started(std::shared_ptr<StreamControl> control) = 0;
  virtual Next next(std::string& out) = 0;
  // Once, when the stream is over for any reason (finished, aborted, client gone, server
  // stopped). On the session's executor.
  virtual void closed() = 0;
};

// How one request is answered: exactly one of respond() or stream(), from any thread, now or
// later.
class Exchange {
public:
  virtual ~Exchange() = default;
  virtual void respond(Response response) = 0;
  virtual void stream(int status, const std::string& contentType,
                      std::shared_ptr<ChunkSource> source) = 0;
  virtual boost::asio::any_io_executor executor() const = 0;
};

using Handler = std::function<void(Request, std::shared_ptr<Exchange>)>;

struct ServerOptions {
  std::string name = "http"; // in log lines and listener errors
  std::size_t headerLimit = std::size_t{8} * 1024;
  std::size_t bodyLimit = std::size_t{64} * 1024;
  std::chrono::seconds idleTimeout{30};
  std::vector<std::pair<std::string, std::string>> headers; // added to every answer
  // The answer to a request that does not parse: 400, 413 (body too large) or 431 (header too
  // large), with a message. Plain text when unset.
  std::function<Response(int status, const std::string& message)> malformed;
};

class Server {
public:
  // `tls`: serve HTTPS with this context (nullptr: plain TCP).
  Server(boost::asio::io_context& io, std::shared_ptr<spdlog::logger> logger, ServerOptions options,
         Handler handler, std::shared_ptr<boost::asio::ssl::context> tls = nullptr);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds "host:port" (port 0: any free port) and accepts; returns the bound endpoint.
  Result<boost::asio::ip::tcp::endpoint> listen(const std::string& address);
  // Stops accepting and closes every open connection. listen() again restarts.
  void stop();
  bool listening() const;
  // Connections accepted since the server was made (tests: whether clients reuse theirs).
  uint64_t connectionsAccepted() const;
  // A server made with TLS presents `tls` to the connections it accepts from now on (a renewed
  // certificate); those open keep theirs. Ignored by a plain server.
  void setTls(std::shared_ptr<boost::asio::ssl::context> tls);
  std::shared_ptr<boost::asio::ssl::context> tls() const;

  class Connection; // implementation detail

private:
  template <class Stream> friend class Session;
  void accept(const std::shared_ptr<boost::asio::ip::tcp::acceptor>& acceptor);
  // False once stopped: a connection accepted in the race with stop() is closed at once.
  bool track(const std::shared_ptr<Connection>& connection);

  boost::asio::io_context& io_;
  std::shared_ptr<spdlog::logger> logger_;
  ServerOptions options_;
  Handler handler_;
  std::shared_ptr<boost::asio::ssl::context> tls_;
  mutable std::mutex mu_;
  std::shared_ptr<boost::asio::ip::tcp::acceptor> acceptor_;
  bool accepting_ = false;
  std::vector<std::weak_ptr<Connection>> connections_;
  uint64_t accepted_ = 0;
};

} // namespace kuscia_host::httpd
