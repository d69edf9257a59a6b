#include "envoy_admin.h"

#include <kuscia_model/backoff.h>

#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>

namespace kuscia_host::plugins::gateway {

std::optional<HttpUrl> parseHttpUrl(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) return std::nullopt;
  std::string rest = url.substr(scheme.size());
  auto slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  HttpUrl out;
  out.basePath = slash == std::string::npos ? "" : rest.substr(slash);
  while (!out.basePath.empty() && out.basePath.back() == '/')
    out.basePath.pop_back();
  auto colon = authority.rfind(':');
  if (colon != std::string::npos && authority.find(']') == std::string::npos) {
    std::string port = authority.substr(colon + 1);
    if (port.empty() || port.size() > 5 ||
        port.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    long p = std::stol(port);
    if (p < 1 || p > 65535) return std::nullopt;
    out.port = static_cast<uint16_t>(p);
    authority = authority.substr(0, colon);
  }
  if (authority.empty() || authority.find_first_of(" \t\r\n@?#[]") != std::string::npos)
    return std::nullopt;
  out.host = authority;
  return out;
}

std::optional<std::set<std::string>> parseClusterNames(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("cluster_statuses") || !j["cluster_statuses"].is_array())
    return std::nullopt;
  std::set<std::string> names;
  for (const auto& c : j["cluster_statuses"])
    if (c.is_object() && c.contains("name") && c["name"].is_string())
      names.insert(c["name"].get<std::string>());
  return names;
}

std::optional<std::string> httpGet(const HttpUrl& url, const std::string& path, int timeoutMillis,
                                   std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string port = std::to_string(url.port);
  if (int rc = ::getaddrinfo(url.host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    error = "cannot resolve " + url.host + ": " + ::gai_strerror(rc);
    return std::nullopt;
  }
  int fd = -1;
  timeval tv{timeoutMillis / 1000, static_cast<suseconds_t>(timeoutMillis % 1000) * 1000};
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(res);
  if (fd < 0) {
    error = "cannot connect to " + url.host + ":" + port + ": " + std::strerror(errno);
    return std::nullopt;
  }
  std::string request = "GET " + url.basePath + path + " HTTP/1.1\r\nHost: " + url.host + ":" +
                        port + "\r\nAccept: application/json\r\nConnection: close\r\n\r\n";
  bool sent = ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
              static_cast<ssize_t>(request.size());
  std::string response;
  char buf[16384];
  for (ssize_t n; sent && (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) {
    response.append(buf, static_cast<std::size_t>(n));
    if (response.size() > (std::size_t{64} << 20)) break; // far beyond any admin answer
  }
  ::close(fd);
  auto headerEnd = response.find("\r\n\r\n");
  if (!sent || headerEnd == std::string::npos || response.rfind("HTTP/1.", 0) != 0) {
    error = "no HTTP answer from " + url.host + ":" + port;
    return std::nullopt;
  }
  std::string status = response.substr(9, 3);
  if (status != "200") {
    error = "HTTP " + status + " from " + url.host + ":" + port + url.basePath + path;
    return std::nullopt;
  }
  std::string head = response.substr(0, headerEnd);
  std::string body = response.substr(headerEnd + 4);
  std::string lower = head;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  if (lower.find("transfer-encoding: chunked") == std::string::npos) return body;
  std::string out; // de-chunk
  std::size_t i = 0;
  while (i < body.size()) {
    auto eol = body.find("\r\n", i);
    if (eol == std::string::npos) break;
    std::size_t len = std::strtoul(body.substr(i, eol - i).c_str(), nullptr, 16);
    if (len == 0) break;
    out.append(body, eol + 2, len);
    i = eol + 2 + len + 2;
  }
  return out;
}

EnvoyAdminPoller::EnvoyAdminPoller(HttpUrl url, int64_t intervalMillis, int64_t maxBackoffMillis)
    : url_(std::move(url)), intervalMillis_(intervalMillis), maxBackoffMillis_(maxBackoffMillis) {}

EnvoyAdminPoller::~EnvoyAdminPoller() {
  stop();
}

void EnvoyAdminPoller::start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { run(); });
}

void EnvoyAdminPoller::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::optional<std::set<std::string>> EnvoyAdminPoller::clusters() const {
  std::lock_guard lock(mu_);
  return clusters_;
}

std::string EnvoyAdminPoller::lastError() const {
  std::lock_guard lock(mu_);
  return lastError_;
}

void EnvoyAdminPoller::run() {
  model::Backoff backoff(intervalMillis_, maxBackoffMillis_); // after a failed poll
  for (;;) {
    std::string error;
    auto body = httpGet(url_, "/clusters?format=json", 1000, error);
    std::optional<std::set<std::string>> names;
    if (body) {
      names = parseClusterNames(*body);
      if (!names) error = "the /clusters answer is not Envoy's JSON";
    }
    int64_t wait = intervalMillis_;
    {
      std::lock_guard lock(mu_);
      if (names) {
        clusters_ = std::move(names);
        lastError_.clear();
        backoff.reset();
      } else {
        lastError_ = error;
        wait = backoff.next();
      }
    }
    std::unique_lock lock(mu_);
    if (wake_.wait_for(lock, std::chrono::milliseconds(wait), [this] { return stopping_; })) return;
  }
}

} // namespace kuscia_host::plugins::gateway
