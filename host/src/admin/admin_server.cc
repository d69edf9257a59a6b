#include "admin/admin_server.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <chrono>
#include <future>
#include <optional>

#include "runtime/listener.h"

namespace kuscia_host {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

namespace {

constexpr std::size_t kHeaderLimit = std::size_t{8} * 1024;
constexpr std::size_t kBodyLimit = std::size_t{64} * 1024;
constexpr auto kIdleTimeout = std::chrono::seconds(30);
constexpr auto kLingerTimeout = std::chrono::seconds(2);
constexpr std::size_t kLingerLimit = std::size_t{4} * 1024 * 1024;

std::string percentDecode(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() &&
               std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
               std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

HttpResponse textResponse(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

} // namespace

std::map<std::string, std::string> parseQuery(const std::string& query) {
  std::map<std::string, std::string> out;
  std::size_t start = 0;
  while (start <= query.size()) {
    std::size_t amp = query.find('&', start);
    std::string part =
        query.substr(start, amp == std::string::npos ? std::string::npos : amp - start);
    if (!part.empty()) {
      auto eq = part.find('=');
      if (eq == std::string::npos)
        out[percentDecode(part)] = "";
      else
        out[percentDecode(part.substr(0, eq))] = percentDecode(part.substr(eq + 1));
    }
    if (amp == std::string::npos) break;
    start = amp + 1;
  }
  return out;
}

HttpResponse livezResponse() {
  return textResponse(200, "ok\n");
}

HttpResponse readyzResponse(const HealthRegistry& health, const HttpRequest& req) {
  bool verbose = req.has("verbose");
  bool ready = true;
  std::string lines;
  for (const auto& [name, st] : health.evaluate()) {
    if (st.counted && !st.ok) ready = false;
    const char* mark = st.ok ? "[+]" : st.counted ? "[-]" : "[!]";
    if (verbose || (st.counted && !st.ok) || !st.counted)
      lines += std::string(mark) + name + " " + st.detail + "\n";
  }
  if (ready) {
    if (!verbose) return textResponse(200, "ok\n" + lines);
    return textResponse(200, lines + "readyz check passed\n");
  }
  return textResponse(503, lines + "readyz check failed\n");
}

HttpResponse metricsResponse(const MetricsRegistry& metrics) {
  HttpResponse r;
  r.contentType = "text/plain; version=0.0.4; charset=utf-8";
  r.body = metrics.render();
  return r;
}

class AdminServer::Session : public std::enable_shared_from_this<Session> {
public:
  Session(tcp::socket socket, const AdminServer& server)
      : stream_(std::move(socket)), server_(server) {}

  void run() {
    boost::asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read(); });
  }

private:
  void read() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(kBodyLimit);
    stream_.expires_after(kIdleTimeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->onRead(ec); });
  }

  void onRead(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == boost::asio::error::operation_aborted || ec == boost::asio::error::connection_reset) {
      return close();
    }
    if (ec) {
      int status = ec == http::error::header_limit ? 431
                   : ec == http::error::body_limit ? 413
                                                   : 400;
      HttpResponse r = textResponse(status, "bad request: " + ec.message() + "\n");
      return write(r, 11, false, false, true);
    }
    const auto& req = parser_->get();
    HttpRequest hr;
    hr.method = std::string(req.method_string());
    hr.target = std::string(req.target());
    auto q = hr.target.find('?');
    hr.path = hr.target.substr(0, q);
    if (q != std::string::npos) hr.query = parseQuery(hr.target.substr(q + 1));
    HttpResponse r;
    try {
      r = server_.dispatch(hr);
    } catch (const std::exception& e) {
      r = textResponse(500, std::string("internal error: ") + e.what() + "\n");
    }
    bool head = req.method() == http::verb::head;
    write(r, req.version(), req.keep_alive(), head);
  }

  void write(const HttpResponse& r, unsigned version, bool keepAlive, bool head = false,
             bool linger = false) {
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(r.status), version);
    res->set(http::field::server, "kuscia-host");
    res->set(http::field::content_type, r.contentType);
    for (const auto& [k, v] : r.headers)
      res->set(k, v);
    if (!head) res->body() = r.body;
    res->content_length(r.body.size());
    res->keep_alive(keepAlive);
    stream_.expires_after(kIdleTimeout);
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res, linger](beast::error_code ec, std::size_t) {
                        if (!ec && linger) return self->lingeringClose();
                        if (ec || !res->keep_alive()) return self->close();
                        self->read();
                      });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.close();
  }

  // After an error response the client may still be sending (e.g. a body over the limit).
  // Closing with unread input makes the kernel send RST, which can destroy the response before
  // the client reads it; so stop sending, drain what arrives for a bounded time, then close.
  void lingeringClose() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(kLingerTimeout);
    drain(0);
  }

  void drain(std::size_t drained) {
    stream_.async_read_some(
        boost::asio::buffer(discard_),
        [self = shared_from_this(), drained](beast::error_code ec, std::size_t n) {
          if (ec || drained + n > kLingerLimit) return self->stream_.close();
          self->drain(drained + n);
        });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::array<char, 4096> discard_{};
  const AdminServer& server_;
};

AdminServer::AdminServer(boost::asio::io_context& io, std::shared_ptr<spdlog::logger> logger)
    : io_(io), logger_(std::move(logger)) {}

AdminServer::~AdminServer() {
  stop();
}

void AdminServer::route(const std::string& path, HttpHandler handler) {
  exact_[path] = std::move(handler);
}

void AdminServer::routePrefix(const std::string& prefix, HttpHandler handler) {
  prefixes_.emplace_back(prefix, std::move(handler));
}

HttpResponse AdminServer::dispatch(const HttpRequest& req) const {
  const HttpHandler* handler = nullptr;
  if (auto it = exact_.find(req.path); it != exact_.end()) {
    handler = &it->second;
  } else {
    for (const auto& [prefix, h] : prefixes_)
      if (req.path.rfind(prefix, 0) == 0) handler = &h;
  }
  if (handler == nullptr) return textResponse(404, "not found: " + req.path + "\n");
  if (req.method != "GET" && req.method != "HEAD") {
    auto r = textResponse(405, "method " + req.method + " not allowed\n");
    r.headers.emplace_back("Allow", "GET, HEAD");
    return r;
  }
  return (*handler)(req);
}

Result<tcp::endpoint> AdminServer::listen(const std::string& address) {
  auto opened = openListener(io_, address, "admin");
  if (!opened) return makeError(opened.error());
  auto acceptor = opened.value();
  boost::system::error_code ec;
  auto bound = acceptor->local_endpoint(ec);
  acceptor_ = acceptor;
  accept(acceptor);
  return bound;
}

// Takes the acceptor by value: stop() may reset the member while a completion is running.
void AdminServer::accept(const std::shared_ptr<tcp::acceptor>& acceptor) {
  acceptor->async_accept(boost::asio::make_strand(io_),
                         [this, acceptor](beast::error_code ec, tcp::socket s) {
                           if (ec == boost::asio::error::operation_aborted || !acceptor->is_open())
                             return;
                           if (!ec)
                             std::make_shared<Session>(std::move(s), *this)->run();
                           else
                             logger_->warn("admin accept failed: {}", ec.message());
                           accept(acceptor);
                         });
}

void AdminServer::stop() {
  if (!acceptor_) return;
  auto acceptor = acceptor_;
  auto done = std::make_shared<std::promise<void>>();
  auto fut = done->get_future();
  boost::asio::dispatch(acceptor->get_executor(), [acceptor, done] {
    boost::system::error_code ignored;
    acceptor->close(ignored);
    done->set_value();
  });
  if (fut.wait_for(std::chrono::seconds(2)) != std::future_status::ready) {
    boost::system::error_code ignored; // the io_context is not running: close directly
    acceptor->close(ignored);
  }
  acceptor_.reset();
}

} // namespace kuscia_host
