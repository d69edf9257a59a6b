#include "admin/tls_files.h"

#include <fstream>
#include <sstream>

#include "httpd/tls.h"

namespace kuscia_host {

Result<std::string> readPemFile(const std::string& key, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return makeError(key + ": cannot read " + path);
  return text.str();
}

TlsFiles::TlsFiles(boost::asio::io_context& io, Paths paths, std::chrono::milliseconds every,
                   MetricsRegistry& metrics, std::shared_ptr<spdlog::logger> logger)
    : io_(io), paths_(std::move(paths)), every_(every), logger_(std::move(logger)),
      reloads_(metrics.hostFamily(MetricKind::kCounter, "kuscia_host_admin_tls_reloads_total",
                                  "Changes of the admin server's certificate files: applied "
                                  "(ok) or refused (failed: the old certificate stays)",
                                  {"result"})) {}

TlsFiles::~TlsFiles() {
  try {
    stop();
  } catch (...) { // nothing is left to stop when the lock or the timer fails here
  }
}

Result<TlsFiles::Texts> TlsFiles::read() const {
  Texts t;
  auto cert = readPemFile("admin.tls.certFile", paths_.certFile);
  if (!cert) return makeError(cert.error());
  auto key = readPemFile("admin.tls.keyFile", paths_.keyFile);
  if (!key) return makeError(key.error());
  t.cert = std::move(*cert);
  t.key = std::move(*key);
  if (!paths_.clientCAFile.empty()) {
    auto ca = readPemFile("admin.clientCAFile", paths_.clientCAFile);
    if (!ca) return makeError(ca.error());
    t.ca = std::move(*ca);
  }
  return t;
}

Result<std::shared_ptr<boost::asio::ssl::context>> TlsFiles::load() {
  auto texts = read();
  if (!texts) return makeError(texts.error());
  auto ctx = httpd::serverTlsContext(texts->cert, texts->key, texts->ca);
  if (!ctx) return makeError("admin.tls: " + ctx.error());
  std::lock_guard lock(mu_);
  loaded_ = std::move(*texts);
  return ctx.value();
}

void TlsFiles::start(Apply apply) {
  std::lock_guard lock(mu_);
  apply_ = std::move(apply);
  timer_ = std::make_unique<boost::asio::steady_timer>(io_);
  reloads_->series({"ok"});
  reloads_->series({"failed"});
  arm();
}

void TlsFiles::arm() {
  timer_->expires_after(every_);
  timer_->async_wait([this](const boost::system::error_code& ec) {
    if (ec) return; // stopped
    check();
    std::lock_guard lock(mu_);
    if (timer_) arm();
  });
}

void TlsFiles::stop() {
  std::lock_guard lock(mu_);
  if (timer_) timer_->cancel();
  timer_.reset();
}

bool TlsFiles::check() {
  auto texts = read();
  std::lock_guard lock(mu_);
  if (!texts) {
    if (!unreadable_) logger_->warn("{} (the certificate in use stays)", texts.error());
    unreadable_ = true;
    return false;
  }
  unreadable_ = false;
  if (*texts == loaded_ || *texts == refused_) return false;
  auto ctx = httpd::serverTlsContext(texts->cert, texts->key, texts->ca);
  if (!ctx) {
    reloads_->series({"failed"})->add(1);
    logger_->warn("admin.tls: the changed certificate files are not usable ({}): the certificate "
                  "in use stays until they are",
                  ctx.error());
    refused_ = std::move(*texts);
    return false;
  }
  loaded_ = std::move(*texts);
  refused_ = {};
  reloads_->series({"ok"})->add(1);
  if (apply_) apply_(ctx.value());
  logger_->info("admin.tls: the certificate was renewed from {}: new connections get it",
                paths_.certFile);
  return true;
}

} // namespace kuscia_host
