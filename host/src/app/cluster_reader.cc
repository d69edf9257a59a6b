#include "app/cluster_reader.h"

#include <fstream>
#include <future>
#include <sstream>

#include "apimachinery/status.h"

namespace kuscia_host {

ClusterReader::ClusterReader(kube::ClusterAccess access)
    : access_(std::move(access)), guard_(io_.get_executor()), thread_([this] { io_.run(); }) {}

Result<std::unique_ptr<ClusterReader>> ClusterReader::openAdmin(const std::string& server,
                                                                const std::string& tokenFile,
                                                                const std::string& caFile) {
  kube::ClusterAccess access;
  access.server = server;
  if (!kube::parseServerUrl(server, access.scheme, access.host, access.port))
    return makeError("--server " + server + ": not an http(s) URL");
  access.description = "--server " + server;
  if (!tokenFile.empty()) {
    if (access.scheme != "https")
      return makeError("--token-file: a token is only sent over https (--server " + server + ")");
    access.tokenFile = tokenFile;
  }
  if (!caFile.empty()) {
    std::ifstream in(caFile);
    std::stringstream pem;
    pem << in.rdbuf();
    if (!in) return makeError("--ca-file " + caFile + ": cannot read it");
    access.caPem = pem.str();
  }
  return open(access);
}

ClusterReader::~ClusterReader() {
  client_.reset();
  guard_.reset();
  io_.stop();
  thread_.join();
}

Result<std::unique_ptr<ClusterReader>> ClusterReader::open(const kube::ClusterAccess& access) {
  std::unique_ptr<ClusterReader> r(new ClusterReader(access));
  auto client = kube::BeastHttpClient::create(r->io_, access);
  if (!client) return makeError(client.error());
  r->client_ = client.value();
  return r;
}

Result<kube::HttpResponse> ClusterReader::call(kube::HttpRequest request) {
  std::promise<Result<kube::HttpResponse>> done;
  auto fut = done.get_future();
  client_->send(std::move(request),
                [&done](Result<kube::HttpResponse> r) { done.set_value(std::move(r)); });
  return fut.get();
}

Result<kube::HttpResponse> ClusterReader::fetch(const std::string& path) {
  return call(kube::HttpRequest{"GET", path, "", "", std::chrono::milliseconds(15000)});
}

std::string ClusterReader::answerError(const std::string& path,
                                       const kube::HttpResponse& answer) const {
  return access_.server + path + ": " +
         apimachinery::statusMessage(answer.body).value_or("HTTP " + std::to_string(answer.status));
}

Result<nlohmann::json> ClusterReader::get(const std::string& path) {
  auto r = fetch(path);
  if (!r) return makeError(r.error());
  if (r->status != 200) return makeError(answerError(path, *r));
  auto j = nlohmann::json::parse(r->body, nullptr, false);
  if (j.is_discarded()) return makeError(access_.server + path + ": the answer is not JSON");
  return j;
}

Result<int> ClusterReader::send(const std::string& method, const std::string& path,
                                const std::string& body, const std::string& contentType) {
  auto r =
      call(kube::HttpRequest{method, path, body, contentType, std::chrono::milliseconds(15000)});
  if (!r) return makeError(r.error());
  return r->status;
}

} // namespace kuscia_host
