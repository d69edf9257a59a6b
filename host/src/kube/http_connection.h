// A connection to the API server, and what the client's two jobs (pipelined requests in
// http_client.cc, watch streams in watch_stream.cc) do with one: open it, write a request, read
// on the watches' grid, name a failure. Internal to kube/.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <sys/socket.h>
#include <unistd.h>
#include <utility>

#include "common/result.h"
#include "kube/cluster_access.h"
#include "kube/http_client.h"

namespace kuscia_host::kube {

namespace beast = boost::beast;
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

namespace wire {

// A transport failure, as an exception inside the coroutine only.
struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A deadline `timeout` from now, as the watchdog reads it (steady clock, ns).
int64_t deadlineAfter(std::chrono::milliseconds timeout);
// What a request's failure names: its method and URL.
std::string requestName(const ClusterAccess& a, const HttpRequest& request);
// An error as a failure says it ("TLS: ..." for the TLS layer's).
std::string describe(const boost::system::error_code& ec);
// Opens a connection (TCP, then TLS with verification when https).
net::awaitable<std::shared_ptr<BeastHttpClient::Connection>>
connect(const ClusterAccess& a, net::ssl::context* ssl, std::chrono::milliseconds timeout);
// The first point after now of the grid of `step` on the steady clock that every stream shares.
std::chrono::steady_clock::time_point nextGridPoint(std::chrono::milliseconds step);
// Whether a TLS stream holds input not yet returned by a read: a record decrypted in part, or
// records read from the socket and not yet decrypted (Asio's engine feeds OpenSSL through a BIO
// pair; a read decrypts one record).
bool tlsBuffered(SSL* ssl);
// Appends the request's bytes to `out` (one send carries them, with those pipelined beside it).
// Serialized by hand: Beast's serializer cost about a third of the client's instructions per write
// (buffer-sequence views over each header). Throws Failure for a request it will not send.
void appendRequest(std::string& out, const ClusterAccess& a, const HttpRequest& request);
// Hands a coroutine's answer, or its failure named after `where`, to `done`.
void finish(const std::function<void(Result<HttpResponse>)>& done, const std::string& where,
            const std::exception_ptr& e, HttpResponse r);

// A watch's socket taken out of Asio's reactor between reads (see watch_stream.cc): the descriptor
// is held here, read with recv() while it is out, and closed if it is never given back.
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

// Each header under its lower-case name.
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

} // namespace wire
} // namespace kuscia_host::kube
