// The admin server's certificate from its files, read again while it serves: cert-manager (or an
// operator) renews certFile and keyFile in place, and the clients' CA with them. Each check reads
// the files; when they changed and make a usable context, new connections get it (open ones keep
// theirs: nothing is dropped). A pair caught half-written (a new certificate, the old key) is
// refused, logged once and tried again at the next check.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <spdlog/logger.h>
#include <string>

#include "common/result.h"
#include "metrics/registry.h"

namespace kuscia_host {

// A PEM file's text; the error names the config key and the file.
Result<std::string> readPemFile(const std::string& key, const std::string& path);

class TlsFiles {
public:
  struct Paths {
    std::string certFile, keyFile, clientCAFile; // clientCAFile may be empty
  };
  using Apply = std::function<void(std::shared_ptr<boost::asio::ssl::context>)>;

  TlsFiles(boost::asio::io_context& io, Paths paths, std::chrono::milliseconds every,
           MetricsRegistry& metrics, std::shared_ptr<spdlog::logger> logger);
  ~TlsFiles();
  TlsFiles(const TlsFiles&) = delete;
  TlsFiles& operator=(const TlsFiles&) = delete;

  // The context of the files as they are now (errors name the key): the first load.
  Result<std::shared_ptr<boost::asio::ssl::context>> load();
  // Checks every `every` from now on, giving `apply` each new context.
  void start(Apply apply);
  void stop();
  // One check now: true when the files changed and their new context was applied.
  bool check();

private:
  struct Texts {
    std::string cert, key, ca;
    bool operator==(const Texts&) const = default;
  };
  Result<Texts> read() const;
  void arm();

  boost::asio::io_context& io_;
  Paths paths_;
  std::chrono::milliseconds every_;
  std::shared_ptr<spdlog::logger> logger_;
  MetricFamily* reloads_;
  std::mutex mu_;
  Texts loaded_;            // what the context in use was made of
  Texts refused_;           // the last texts refused (logged once)
  bool unreadable_ = false; // the files could not be read at the last check (logged once)
  Apply apply_;
  std::unique_ptr<boost::asio::steady_timer> timer_;
};

} // namespace kuscia_host
