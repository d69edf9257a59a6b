#include "kube/http_connection.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <charconv>
#include <string>
#include <unistd.h>

#include "common/version.h"

namespace kuscia_host::kube::wire {

namespace {

bool isIpAddress(const std::string& host) {
  boost::system::error_code ec;
  net::ip::make_address(host, ec);
  return !ec;
}

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

} // namespace

int64_t deadlineAfter(std::chrono::milliseconds timeout) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             (std::chrono::steady_clock::now() + timeout).time_since_epoch())
      .count();
}

std::string requestName(const ClusterAccess& a, const HttpRequest& request) {
  return request.method + " " + a.server + request.target;
}

std::string describe(const boost::system::error_code& ec) {
  if (ec.category() == net::error::get_ssl_category()) return "TLS: " + ec.message();
  return ec.message();
}

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

std::chrono::steady_clock::time_point nextGridPoint(std::chrono::milliseconds step) {
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  const auto d = std::chrono::duration_cast<std::chrono::steady_clock::duration>(step);
  return std::chrono::steady_clock::time_point((now / d + 1) * d);
}

bool tlsBuffered(SSL* ssl) {
  return SSL_has_pending(ssl) == 1 || BIO_ctrl_pending(SSL_get_rbio(ssl)) > 0;
}

// "kuscia-host/<version> (pid <pid>)": which process asked, in the API server's audit log (two
// replicas of a domain, or two hosts on one machine).
const std::string& userAgent() {
  static const std::string ua =
      std::string("kuscia-host/") + kVersion + " (pid " + std::to_string(::getpid()) + ")";
  return ua;
}

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
  out.append(a.host).append(":").append(a.port).append("\r\nUser-Agent: ").append(userAgent());
  out.append("\r\nAccept: application/json\r\n");
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

} // namespace kuscia_host::kube::wire
