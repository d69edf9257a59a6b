// Raw bytes on the admin and API servers' sockets: one real host (task-timeline,
// gateway-ready-time and scheduler-time for domain alice; its plugin routes and the web page on
// the admin server) against one real embedded API server, both on 127.0.0.1 in this process. The
// first byte picks the server; the rest is written to a fresh connection as it is (one request,
// several pipelined ones, or garbage), the write side is closed, and the answer read to the end.
// Both servers must answer or close within the read timeout, and keep serving: a /livez and a
// /version request must work after every 16th input (each exchange costs milliseconds).
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>

#include "apiserver/server.h"
#include "app/daemon.h"
#include "fuzz_support.h"
#include "logging/logging.h"
#include "runtime/runtime.h"

namespace {

using namespace kuscia_host;

struct Servers {
  Servers() : api(runtime.io(), clock, logs.logger("apiserver"), {}) {
    auto ep = api.start();
    if (!ep) kh_fuzz::fail(ep.error());
    apiPort = ep->port();
    runtime.start();
    auto dir =
        std::filesystem::temp_directory_path() / ("kh-fuzz-http-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::string kubeconfig = (dir / "kubeconfig").string();
    if (auto r = api.writeKubeconfig(kubeconfig); !r) kh_fuzz::fail(r.error());
    std::string text = "mode: centralized\ncluster:\n  kubeconfig: " + kubeconfig +
                       "\ndomains:\n  - id: alice\n    plugins:\n      - name: task-timeline\n"
                       "      - name: gateway-ready-time\n      - name: scheduler-time\n";
    ConfigLoadOptions options;
    options.extraPluginDirs = {KH_FUZZ_PLUGIN_DIR};
    auto loaded = parseHostConfig(text, "fuzz-http.yaml", options);
    if (!loaded.config) kh_fuzz::fail("the host config does not load");
    DaemonOptions d;
    d.adminListen = "127.0.0.1:0";
    daemon = std::make_unique<Daemon>(*loaded.config, d, logs, clock);
    if (auto r = daemon->start(); !r) kh_fuzz::fail(r.error());
    adminPort = daemon->adminEndpoint()->port();
  }

  // Stops the threads. Run at exit before the statics they use are destroyed: libFuzzer ends with
  // exit(), and a thread still decoding then would call into a destroyed simdjson implementation.
  void stop() {
    daemon->shutdown();
    api.stop();
    runtime.stop();
  }

  std::ostringstream logOut;
  LogManager logs{LogFormat::kText, spdlog::level::off, logOut};
  SystemClock clock;
  Runtime runtime{2};
  apiserver::ApiServer api;
  std::unique_ptr<Daemon> daemon;
  unsigned short apiPort = 0;
  unsigned short adminPort = 0;
};

// Writes `bytes`, closes the write side, reads until the server closes; the bytes read, or
// nullopt when the server neither answered nor closed within 5 s.
std::optional<std::string> exchange(unsigned short port, std::string_view bytes) {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  // libFuzzer's SIGALRM (its -timeout watchdog) interrupts blocking calls: EINTR is retried. An
  // interrupted connect goes on in the kernel; wait until the socket is writable and read its
  // outcome.
  if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (errno != EINTR && errno != EINPROGRESS)
      kh_fuzz::fail("connect: " + std::string(std::strerror(errno)));
    pollfd p{s, POLLOUT, 0};
    while (::poll(&p, 1, 5000) < 0 && errno == EINTR) {
    }
    int error = 0;
    socklen_t len = sizeof error;
    ::getsockopt(s, SOL_SOCKET, SO_ERROR, &error, &len);
    if (error != 0) kh_fuzz::fail("connect: " + std::string(std::strerror(error)));
  }
  timeval tv{5, 0};
  ::setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    auto n = ::send(s, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break; // the server closed early (an error answer): fine
    sent += static_cast<std::size_t>(n);
  }
  ::shutdown(s, SHUT_WR);
  std::string out;
  char buf[16384];
  for (;;) {
    auto n = ::recv(s, buf, sizeof buf, 0);
    if (n > 0) {
      out.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      ::close(s);
      return std::nullopt;
    }
    break; // closed (or reset)
  }
  ::close(s);
  return out;
}

} // namespace

// libFuzzer's entry point: its name is not ours to choose.
// NOLINTNEXTLINE(readability-identifier-naming)
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static Servers* servers = [] {
    auto* s = new Servers(); // stopped at exit, never deleted
    // Registered once the host is ready, i.e. has decoded its first LIST pages: the statics those
    // create (simdjson's implementation among them) are then destroyed after this handler ran.
    for (int i = 0; i < 200; ++i) {
      auto ready = exchange(s->adminPort, "GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n");
      if (ready && ready->rfind("HTTP/1.1 200", 0) == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::atexit([] { servers->stop(); });
    return s;
  }();
  if (size == 0) return 0;
  bool admin = (data[0] & 1) != 0;
  unsigned short port = admin ? servers->adminPort : servers->apiPort;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (!exchange(port, bytes))
    kh_fuzz::fail(std::string(admin ? "admin" : "API") + " server neither answered nor closed");
  static unsigned inputs = 0;
  if (++inputs % 16 != 0) return 0;
  auto livez = exchange(servers->adminPort, "GET /livez HTTP/1.1\r\nHost: x\r\n\r\n");
  auto version = exchange(servers->apiPort, "GET /version HTTP/1.1\r\nHost: x\r\n\r\n");
  if (!livez || livez->rfind("HTTP/1.1 200", 0) != 0) kh_fuzz::fail("the admin server stopped");
  if (!version || version->rfind("HTTP/1.1 200", 0) != 0) kh_fuzz::fail("the API server stopped");
  return 0;
}
