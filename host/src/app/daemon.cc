#include "app/daemon.h"

#include <unistd.h>

#include <boost/asio/steady_timer.hpp>
#include <csignal>
#include <future>

#include <fstream>
#include <sstream>

#include "common/listen_address.h"
#include "common/version.h"
#include "httpd/tls.h"

namespace kuscia_host {

Daemon::Daemon(HostConfig config, DaemonOptions options, LogManager& logs, const Clock& clock)
    : config_(std::move(config)), options_(std::move(options)), logs_(logs), clock_(clock),
      logger_(logs_.logger("host")), hostMetrics_(metrics_), runtime_(config_.workerThreads),
      admin_(runtime_.io(), logs_.logger("admin")),
      metricsServer_(runtime_.io(), logs_.logger("admin")), loader_(LoaderOptions{::geteuid()}) {
  if (auto info = metrics_.family(MetricKind::kGauge, "kuscia_host_build_info",
                                  "Build information; always 1", {"version", "abi"})) {
    info.value()->series({kVersion, kAbiVersion})->set(1);
  }
  admin_.route("/livez", [](const HttpRequest&) { return livezResponse(); });
  // With authentication, /readyz says ok or not to everyone, and more to an identity (?verbose).
  admin_.route("/readyz", [this](const HttpRequest& r) {
    return readyzResponse(health_, r, !admin_.authEnabled() || !r.user.empty());
  });
  admin_.route("/metrics",
               [this](const HttpRequest& req) { return metricsResponse(metrics_, req); });
  metricsServer_.route("/metrics",
                       [this](const HttpRequest& req) { return metricsResponse(metrics_, req); });
}

Daemon::~Daemon() {
  shutdown();
}

Result<std::shared_ptr<PluginLibrary>> Daemon::library(const PluginEntry& entry) {
  if (auto it = libraries_.find(entry.path); it != libraries_.end()) return it->second;
  auto lib = loader_.load(entry.path, entry.name);
  if (!lib) return lib;
  logger_->info("loaded plugin {} {} from {}", lib.value()->name(), lib.value()->version(),
                entry.path);
  libraries_[entry.path] = lib.value();
  hostMetrics_.pluginsLoaded->series({})->set(static_cast<double>(libraries_.size()));
  return lib;
}

Result<void> Daemon::startEmbeddedApiServer() {
  apiserver::ServerOptions options;
  options.listen = config_.cluster.embeddedListen;
  if (!config_.cluster.embeddedTokenAuthFile.empty()) {
    std::ifstream in(config_.cluster.embeddedTokenAuthFile);
    std::stringstream text;
    text << in.rdbuf();
    auto tokens = apiserver::parseTokenAuthFile(text.str());
    if (!in || !tokens)
      return makeError("cluster.embedded.tokenAuthFile " + config_.cluster.embeddedTokenAuthFile +
                       ": " + (in ? tokens.error() : std::string("cannot read it")));
    options.api.tokens = std::move(*tokens);
  }
  apiServer_ = std::make_unique<apiserver::ApiServer>(runtime_.io(), clock_,
                                                      logs_.logger("apiserver"), options);
  auto ep = apiServer_->start();
  if (!ep) return makeError(ep.error());
  if (!config_.cluster.embeddedKubeconfigOut.empty())
    if (auto r = apiServer_->writeKubeconfig(config_.cluster.embeddedKubeconfigOut); !r) return r;
  logger_->info("embedded API server listening on {} (state in memory only){}", apiServer_->url(),
                config_.cluster.embeddedKubeconfigOut.empty()
                    ? std::string()
                    : ", kubeconfig " + config_.cluster.embeddedKubeconfigOut);
  health_.add("apiserver:embedded", [this] {
    if (apiServer_->serving()) return HealthStatus{true, true, "ok"};
    return HealthStatus{false, true, "not serving"};
  });
  return {};
}

Result<void> Daemon::connectCluster() {
  Result<kube::ClusterAccess> access = makeError("no cluster configured");
  switch (config_.cluster.source) {
  case ClusterConfig::Source::kNone: return {};
  case ClusterConfig::Source::kEmbedded: {
    kube::ClusterAccess a;
    a.server = apiServer_->url();
    if (!kube::parseServerUrl(a.server, a.scheme, a.host, a.port))
      return makeError("embedded API server: unusable URL " + a.server);
    a.token = apiServer_->token();
    a.caPem = apiServer_->caPem();
    a.description = "the embedded API server";
    access = a;
    break;
  }
  case ClusterConfig::Source::kKubeconfig:
    access = kube::loadKubeconfig(config_.cluster.kubeconfig);
    break;
  case ClusterConfig::Source::kInCluster: access = kube::loadInCluster(); break;
  }
  if (!access) return makeError("cluster: " + access.error());
  kube::KubeClientOptions options;
  options.qps = config_.cluster.qps;
  options.burst = config_.cluster.burst;
  options.reflector = options_.reflector;
  options.reflector.watchBatch = std::chrono::milliseconds(config_.cluster.watchBatchMillis);
  auto client = kube::KubeClient::create(runtime_.io(), *access, options, clock_, metrics_,
                                         logs_.logger("kube"));
  if (!client) return makeError("cluster: " + client.error());
  kube_ = std::move(client.value());
  kubeBridge_ = std::make_unique<KubeClientBridge>(*kube_);
  logger_->info("cluster: {} ({}), client rate limit {} qps, burst {}", access->server,
                access->description, options.qps, options.burst);
  return {};
}

Result<void> Daemon::tolerate(bool required, const std::string& error,
                              const std::function<void()>& disable) {
  if (required) return makeError(error);
  logger_->error("{} (required: false, instance disabled)", error);
  disable();
  return {};
}

Result<void> Daemon::createInstances() {
  HostServices services{runtime_, metrics_,          hostMetrics_, logs_,
                        clock_,   kubeBridge_.get(), &routes_,     &libraryStates_};
  for (const auto& domain : config_.domains) {
    for (const auto& entry : domain.plugins) {
      std::string id = entry.name + "/" + domain.id;
      auto lib = library(entry);
      if (!lib) {
        auto r = tolerate(entry.required, lib.error(), [&] {
          health_.add("plugin:" + id, [reason = lib.error()] {
            return HealthStatus{false, false, "disabled (required: false): " + reason};
          });
        });
        if (!r) return r;
        continue;
      }
      InstanceOptions opts;
      opts.domain = domain.id;
      opts.mode = config_.mode;
      opts.configJson = entry.configJson;
      opts.required = entry.required;
      if (!entry.logLevel.empty()) opts.logLevel = parseLogLevel(entry.logLevel);
      auto instance = std::make_unique<PluginInstance>(lib.value(), opts, services);
      auto* raw = instance.get();
      health_.add("plugin:" + id, [raw] { return raw->health(); });
      instances_.push_back(std::move(instance));
      if (auto created = raw->create(); !created)
        if (auto r =
                tolerate(entry.required, created.error(), [&] { raw->disable(created.error()); });
            !r)
          return r;
    }
  }
  return {};
}

Result<std::shared_ptr<boost::asio::ssl::context>> Daemon::adminTls(const std::string& listen) {
  const AdminAccess& a = config_.adminAccess;
  if (!a.tls) return std::shared_ptr<boost::asio::ssl::context>();
  if (!a.selfSigned) { // files, read again while the server runs (renewals)
    tlsFiles_ = std::make_unique<TlsFiles>(
        runtime_.io(), TlsFiles::Paths{a.certFile, a.keyFile, a.clientCAFile},
        std::chrono::seconds(a.reloadSeconds), metrics_, logs_.logger("admin"));
    return tlsFiles_->load();
  }
  std::string host;
  unsigned short port = 0;
  parseListenAddress(listen, host, port);
  std::vector<std::string> names = {"localhost", "127.0.0.1"};
  char hostname[256] = {};
  if (::gethostname(hostname, sizeof hostname - 1) == 0 && hostname[0] != '\0')
    names.emplace_back(hostname);
  if (!host.empty() && host != "0.0.0.0" && host != "::") names.push_back(host);
  auto certs = httpd::generateCertificates("kuscia-host-admin", names);
  if (!certs) return makeError("admin.tls.selfSigned: " + certs.error());
  if (!a.caOut.empty()) {
    std::ofstream out(a.caOut, std::ios::trunc);
    out << certs->caCertPem;
    if (!out.flush()) return makeError("admin.tls.caOut: cannot write " + a.caOut);
    logger_->info("admin.tls: a self-signed certificate for {}; its CA is in {} (clients verify "
                  "with it: --ca-file {})",
                  names.front(), a.caOut, a.caOut);
  } else {
    logger_->info("admin.tls: a self-signed certificate for {} (set admin.tls.caOut to write its "
                  "CA for clients to verify it, or use certFile/keyFile)",
                  names.front());
  }
  std::string caPem;
  if (!a.clientCAFile.empty()) {
    auto ca = readPemFile("admin.clientCAFile", a.clientCAFile);
    if (!ca) return makeError(ca.error());
    caPem = *ca;
  }
  auto ctx = httpd::serverTlsContext(certs->certPem, certs->keyPem, caPem);
  if (!ctx) return makeError("admin.tls: " + ctx.error());
  return ctx.value();
}

std::shared_ptr<AdminAuth> Daemon::adminAuth() {
  const AdminAccess& a = config_.adminAccess;
  AdminAuthOptions o;
  o.mode = a.auth == AdminAccess::Auth::kToken        ? AdminAuthOptions::Mode::kToken
           : a.auth == AdminAccess::Auth::kKubernetes ? AdminAuthOptions::Mode::kKubernetes
                                                      : AdminAuthOptions::Mode::kNone;
  o.tokenFile = a.tokenFile;
  o.clientCertificates = !a.clientCAFile.empty();
  if (kube_) {
    // Reviews go to the cluster the host talks to, outside the write budget (AdminAuth has its
    // own rate), never retried: a caller that cannot be checked now is told so.
    o.review = [this](const std::string& path, std::string body,
                      const AdminAuthOptions::ReviewDone& done) {
      kube::ApiCall call;
      call.verb = "create";
      call.http = {"POST", path, std::move(body), "application/json",
                   std::chrono::milliseconds(10000)};
      call.rateLimited = false;
      call.maxRetries = 0;
      kube_->api().call(std::move(call), [done](Result<kube::HttpResponse> r) {
        if (!r) return done(0, "");
        done(r->status, r->body);
      });
    };
  }
  return std::make_shared<AdminAuth>(std::move(o), clock_, metrics_, logs_.logger("admin"));
}

Result<void> Daemon::startAdmin() {
  mountPluginRoutes();
  std::string listen = options_.adminListen.empty() ? config_.adminListen : options_.adminListen;
  // --admin-listen may move it off loopback: the same refusal as the config's.
  if (auto problem = adminExposureProblem(listen, config_.adminAccess); !problem.empty())
    return makeError(problem);
  auto tls = adminTls(listen);
  if (!tls) return makeError(tls.error());
  admin_.setAuth(adminAuth());
  auto ep = admin_.listen(listen, tls.value());
  if (!ep) return makeError(ep.error());
  if (tlsFiles_) tlsFiles_->start([this](auto ctx) { admin_.setTls(std::move(ctx)); });
  adminEndpoint_ = ep.value();
  logger_->info("admin server listening on {}:{}{}", ep->address().to_string(), ep->port(),
                tls.value() ? " (TLS)" : "");
  if (!admin_.authEnabled())
    if (auto warning = exposureWarning(ep->address()); !warning.empty())
      logger_->warn("{}", warning);
  return startMetricsListener();
}

Result<void> Daemon::startMetricsListener() {
  if (config_.metricsListen.empty()) return {};
  auto ep = metricsServer_.listen(config_.metricsListen);
  if (!ep) return makeError("admin.metricsListen: " + ep.error());
  metricsEndpoint_ = ep.value();
  logger_->info("metrics listening on {}:{} (plain HTTP, /metrics only, no authentication)",
                ep->address().to_string(), ep->port());
  return {};
}

Result<void> Daemon::startInstances() {
  for (auto& instance : instances_) {
    if (instance->state() != InstanceState::kCreated) continue;
    if (auto started = instance->start(); !started) {
      auto r = tolerate(instance->required(), started.error(), [&] {
        instance->stop();
        instance->disable(started.error());
      });
      if (!r) return r;
      continue;
    }
    logger_->info("started {}", instance->id());
  }
  return {};
}

Result<void> Daemon::start() {
  auto steps = [this]() -> Result<void> {
    // The embedded API server comes up before any plugin, and the cluster client before any
    // plugin can subscribe; a required instance that fails stops everything.
    if (config_.cluster.source == ClusterConfig::Source::kEmbedded)
      if (auto r = startEmbeddedApiServer(); !r) return r;
    if (auto r = connectCluster(); !r) return r;
    if (auto r = createInstances(); !r) return r;
    runtime_.start();
    if (auto r = startAdmin(); !r) return r;
    return startInstances();
  };
  if (auto r = steps(); !r) {
    shutdown();
    return r;
  }
  // Events flow once every instance has started.
  if (kube_) kube_->start(health_);
  updateInstanceGauges();
  logger_->info("kuscia-host {} running: {} plugin instance(s) in {} domain(s), mode {}", kVersion,
                instances_.size(), config_.domains.size(), config_.mode);
  return {};
}

void Daemon::mountPluginRoutes() {
  for (const auto& prefix : routes_.prefixes()) {
    admin_.routePrefix(prefix, [this, prefix](const HttpRequest& req,
                                              std::function<void(HttpResponse)> reply) {
      auto q = req.target.find('?');
      RouteRequest r{req.method, req.path, q == std::string::npos ? "" : req.target.substr(q + 1)};
      routes_.serve(
          prefix, r,
          [reply = std::move(reply)](RouteAnswer a) {
            HttpResponse res;
            res.status = a.status;
            res.contentType = std::move(a.contentType);
            res.body = std::move(a.body);
            // A plugin's page runs its own inline script and style, and loads nothing from
            // elsewhere.
            if (res.contentType.rfind("text/html", 0) == 0)
              res.headers.emplace_back("Content-Security-Policy",
                                       "default-src 'self'; style-src 'unsafe-inline'; "
                                       "script-src 'unsafe-inline'");
            reply(std::move(res));
          },
          [this](std::chrono::milliseconds delay, std::function<void()> fn) {
            auto t = std::make_shared<boost::asio::steady_timer>(runtime_.io(), delay);
            t->async_wait([t, fn = std::move(fn)](const boost::system::error_code& ec) {
              if (!ec) fn();
            });
          });
    });
    logger_->info("admin route {} served by plugins", prefix);
  }
}

void Daemon::updateInstanceGauges() {
  std::map<std::string, int> counts;
  for (const char* s : {"running", "failed", "disabled", "stopped"})
    counts[s] = 0;
  for (const auto& i : instances_)
    counts[toString(i->state())]++;
  for (const auto& [state, n] : counts)
    hostMetrics_.instances->series({state})->set(n);
}

void Daemon::shutdown() {
  if (shutDown_) return;
  shutDown_ = true;
  if (tlsFiles_) tlsFiles_->stop();
  admin_.stop();
  metricsServer_.stop();
  for (std::size_t i = instances_.size(); i-- > 0;) { // reverse start order
    instances_[i]->stop();
    logger_->debug("stopped {}", instances_[i]->id());
  }
  if (kube_) kube_->stop();
  if (apiServer_) apiServer_->stop();
  runtime_.stop();
  for (std::size_t i = instances_.size(); i-- > 0;)
    instances_[i]->destroy();
  updateInstanceGauges();
  instances_.clear();
  for (auto& [path, lib] : libraries_)
    logger_->debug("unloading {}", path);
  libraries_.clear();
  hostMetrics_.pluginsLoaded->series({})->set(0);
  logger_->info("shut down");
}

void Daemon::catchStopSignals() {
  if (!signals_)
    signals_ = std::make_unique<boost::asio::signal_set>(runtime_.io(), SIGINT, SIGTERM);
}

void Daemon::waitForSignal() {
  catchStopSignals();
  auto got = std::make_shared<std::promise<int>>();
  signals_->async_wait(
      [got](const boost::system::error_code& ec, int sig) { got->set_value(ec ? 0 : sig); });
  int sig = got->get_future().get();
  logger_->info("received signal {}, shutting down", sig);
  shutdown();
}

} // namespace kuscia_host
