// Blocking requests to an API server or an admin server for the command line (the plugins'
// commands, the demo): the host's HTTP client (TLS, tokens, client certificates, kubeconfig and
// in-cluster access) on an io thread of its own.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "common/result.h"
#include "kube/cluster_access.h"
#include "kube/http_client.h"

namespace kuscia_host {

class ClusterReader {
public:
  static Result<std::unique_ptr<ClusterReader>> open(const kube::ClusterAccess& access);
  // A kuscia-host's admin server (--server http(s)://HOST:PORT), with the bearer token in
  // `tokenFile` (https only, re-read at each request) and the CA in `caFile` when given; errors
  // name the option.
  static Result<std::unique_ptr<ClusterReader>>
  openAdmin(const std::string& server, const std::string& tokenFile, const std::string& caFile);
  ~ClusterReader();
  ClusterReader(const ClusterReader&) = delete;
  ClusterReader& operator=(const ClusterReader&) = delete;

  // The object at `path` (200); otherwise an error with the server's Status message.
  Result<nlohmann::json> get(const std::string& path);
  // The answer to GET `path`, whatever its status; an error when none came.
  Result<kube::HttpResponse> fetch(const std::string& path);
  // What an answer other than 200 to GET `path` says: the server, the path, its Status message.
  std::string answerError(const std::string& path, const kube::HttpResponse& answer) const;
  // Sends a request; the HTTP status (or an error when no answer came).
  Result<int> send(const std::string& method, const std::string& path, const std::string& body,
                   const std::string& contentType = "application/json");
  const kube::ClusterAccess& access() const { return access_; }

private:
  explicit ClusterReader(kube::ClusterAccess access);
  Result<kube::HttpResponse> call(kube::HttpRequest request);

  kube::ClusterAccess access_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::thread thread_;
  std::shared_ptr<kube::BeastHttpClient> client_;
};

} // namespace kuscia_host
