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

std::string exposureWarning(const boost::asio::ip::address& address) {
  if (address.is_loopback()) return {};
  if (address.is_v6() && address.to_v6().is_v4_mapped() &&
      boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, address.to_v6()).is_loopback())
    return {};
  return "the admin server listens on " + address.to_string() +
         ", not a loopback address: it has no authentication, and /metrics and the "
         "plugins' routes are open to every client that reaches it (bind 127.0.0.1 and put an "
         "authenticating proxy in front, or restrict the address with a firewall or network "
         "policy)";
}

HttpResponse metricsResponse(const MetricsRegistry& metrics) {
  HttpResponse r;
  r.contentType = "text/plain; version=0.0.4; charset=utf-8";
  r.body = metrics.render();
  return r;
}

AdminServer::AdminServer(boost::asio::io_context& io, std::shared_ptr<spdlog::logger> logger)
    : server_(io, std::move(logger), adminOptions(),
              [this](const httpd::Request& req, const std::shared_ptr<httpd::Exchange>& ex) {
                dispatch(req, [ex](HttpResponse r) { ex->respond(std::move(r)); });
              }) {}

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

Result<boost::asio::ip::tcp::endpoint> AdminServer::listen(const std::string& address) {
  return server_.listen(address);
}

void AdminServer::stop() {
  server_.stop();
}

} // namespace kuscia_host
