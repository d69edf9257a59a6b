#include "admin/admin_server.h"

namespace kuscia_host {

namespace {

HttpResponse textResponse(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

httpd::ServerOptions adminOptions() {
  httpd::ServerOptions o;
  o.name = "admin";
  o.headers = {{"Server", "kuscia-host"}};
  return o;
}

} // namespace

HttpResponse livezResponse() {
  return textResponse(200, "ok\n");
}

HttpResponse readyzResponse(const HealthRegistry& health, const HttpRequest& req, bool detailed) {
  bool verbose = req.has("verbose");
  bool ready = true;
  std::string lines;
  for (const auto& [name, st] : health.evaluate()) {
    if (st.counted && !st.ok) ready = false;
    if (!detailed) continue;
    const char* mark = st.ok ? "[+]" : st.counted ? "[-]" : "[!]";
    if (verbose || (st.counted && !st.ok) || !st.counted)
      lines += std::string(mark) + name + " " + st.detail + "\n";
  }
  if (!detailed) return ready ? textResponse(200, "ok\n") : textResponse(503, "not ok\n");
  if (ready) {
    if (!verbose) return textResponse(200, "ok\n" + lines);
    return textResponse(200, lines + "readyz check passed\n");
  }
  return textResponse(503, lines + "readyz check failed\n");
}

std::string exposureWarning(const boost::asio::ip::address& address) {
  if (address.is_loopback()) return {};
  if (address.is_v6() && address.to_v6().is_v4_mapped() &&
      boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, address.to_v6()).is_loopback())
    return {};
  return "the admin server listens on " + address.to_string() +
         ", not a loopback address, without authentication (admin.allowUnauthenticated): "
         "/metrics and the plugins' routes are open to every client that reaches it (set "
         "admin.auth, or restrict the address with a firewall or network policy)";
}

HttpResponse metricsResponse(const MetricsRegistry& metrics, const HttpRequest& req) {
  HttpResponse r;
  MetricsFormat format = metricsFormatFor(req.accept);
  r.contentType = contentTypeOf(format);
  r.body = metrics.render(format);
  return r;
}

AdminServer::AdminServer(boost::asio::io_context& io, std::shared_ptr<spdlog::logger> logger)
    : io_(io), logger_(std::move(logger)) {}

AdminServer::~AdminServer() {
  stop();
}

namespace {

AsyncHttpHandler async(HttpHandler handler) {
  return [handler = std::move(handler)](const HttpRequest& req,
                                        const std::function<void(HttpResponse)>& reply) {
    reply(handler(req));
  };
}

} // namespace

void AdminServer::route(const std::string& path, HttpHandler handler) {
  exact_[path] = async(std::move(handler));
}

void AdminServer::routePrefix(const std::string& prefix, HttpHandler handler) {
  prefixes_.emplace_back(prefix, async(std::move(handler)));
}

void AdminServer::routePrefix(const std::string& prefix, AsyncHttpHandler handler) {
  prefixes_.emplace_back(prefix, std::move(handler));
}

void AdminServer::dispatch(const HttpRequest& req, std::function<void(HttpResponse)> reply) const {
  // Open to everyone (kubelet's probes): /livez, and /readyz saying ok or not.
  bool open = req.path == "/livez" || (req.path == "/readyz" && !req.has("verbose"));
  if (!authEnabled() || open) return route(req, std::move(reply));
  auth_->check(req, [this, req, reply](std::optional<AdminIdentity> who,
                                       std::optional<HttpResponse> refusal) {
    if (!who) return reply(std::move(*refusal));
    HttpRequest authenticated = req;
    authenticated.user = who->user;
    route(authenticated, reply);
  });
}

void AdminServer::route(const HttpRequest& req, std::function<void(HttpResponse)> reply) const {
  const AsyncHttpHandler* handler = nullptr;
  if (auto it = exact_.find(req.path); it != exact_.end()) {
    handler = &it->second;
  } else {
    for (const auto& [prefix, h] : prefixes_)
      if (req.path.rfind(prefix, 0) == 0) handler = &h;
  }
  if (handler == nullptr) return reply(textResponse(404, "not found: " + req.path + "\n"));
  if (req.method != "GET" && req.method != "HEAD") {
    auto r = textResponse(405, "method " + req.method + " not allowed\n");
    r.headers.emplace_back("Allow", "GET, HEAD");
    return reply(std::move(r));
  }
  (*handler)(req, std::move(reply));
}

HttpResponse AdminServer::dispatch(const HttpRequest& req) const {
  HttpResponse out;
  dispatch(req, [&out](HttpResponse r) { out = std::move(r); });
  return out;
}

Result<boost::asio::ip::tcp::endpoint>
AdminServer::listen(const std::string& address, std::shared_ptr<boost::asio::ssl::context> tls) {
  if (server_) server_->stop();
  server_ = std::make_unique<httpd::Server>(
      io_, logger_, adminOptions(),
      [this](const httpd::Request& req, const std::shared_ptr<httpd::Exchange>& ex) {
        dispatch(req, [ex](HttpResponse r) { ex->respond(std::move(r)); });
      },
      std::move(tls));
  return server_->listen(address);
}

void AdminServer::setTls(std::shared_ptr<boost::asio::ssl::context> tls) {
  if (server_) server_->setTls(std::move(tls));
}

void AdminServer::stop() {
  if (server_) server_->stop();
}

} // namespace kuscia_host
