// Raw bytes on the admin and API servers' sockets: one real host (task-timeline,
// gateway-ready-time and scheduler-time for domain alice; its plugin routes and the web page on
// the admin server) against one real embedded API server, both on 127.0.0.1 in this process. The
// first byte picks the server; the rest is written to a fresh connection as it is (one request,
// several pipelined ones, or garbage), the write side is closed, and the answer read to the end.
// Both servers must answer or close within the read timeout, and keep serving: a /livez and a
// /version request must work after every 16th input (each exchange costs milliseconds).
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>

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
  if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    kh_fuzz::fail("connect: " + std::string(std::strerror(errno)));
  timeval tv{5, 0};
  ::setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    auto n = ::send(s, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
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
  static auto* servers = new Servers(); // lives for the process: libFuzzer exits without teardown
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
