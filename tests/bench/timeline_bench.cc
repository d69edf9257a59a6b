// Benchmarks of the timeline plugins in the real host against the embedded API server, in one
// process (not tests: they print figures and ratios measured in the same run).
//
//   B3  a pod's Ready transition applied by the API server -> the KusciaTask status PATCH with its
//       readyTime applied, coalescing window 0; both instants are taken inside the server as the
//       changes are stored. Compared with the loopback TCP round trip measured in the same run.
//       Targets: p50 <= 10x RTT, p99 <= 1 ms.
//   B4  task startups replayed (2 parties x 1 pod x 3 services, each object created in one
//       burst): exact status writes and patch bytes per task, annotation writes per service, and
//       the writes of a restarted host on a converged cluster (must be 0).
//       Targets: <= 2 status writes and <= 2 KB per task, 1 annotation per service, 0 when
//       nothing changed.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "apiserver/server.h"
#include "app/daemon.h"
#include "bench_support.h"
#include "logging/logging.h"
#include "runtime/runtime.h"

namespace {

using namespace kuscia_host;
using bench::Connection;
using Clock = std::chrono::steady_clock;
using nlohmann::json;
namespace http = boost::beast::http;

std::string nowText() {
  auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char buf[32];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

// Loopback TCP round trips (1 byte each way, TCP_NODELAY), the latency floor of any write.
std::vector<double> loopbackRtt(int rounds) {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(listener, 1) != 0)
    throw std::runtime_error("loopback listener: " + std::string(std::strerror(errno)));
  socklen_t len = sizeof a;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
  std::thread echo([listener] {
    int c = ::accept(listener, nullptr, nullptr);
    int one = 1;
    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char b;
    while (::recv(c, &b, 1, 0) == 1)
      ::send(c, &b, 1, 0);
    ::close(c);
  });
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    throw std::runtime_error("loopback connect: " + std::string(std::strerror(errno)));
  int one = 1;
  ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  std::vector<double> out;
  char b = 'x';
  for (int i = 0; i < rounds; ++i) {
    auto t0 = Clock::now();
    ::send(s, &b, 1, 0);
    ::recv(s, &b, 1, 0);
    out.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  ::close(s);
  echo.join();
  ::close(listener);
  return out;
}

// An embedded API server and a host with the timeline plugins, in this process.
struct Setup {
  explicit Setup(const std::vector<std::string>& domains, const std::string& timelineConfig,
                 bool gateway)
      : server(runtime.io(), clock, logs.logger("apiserver"), {}) {
    auto ep = server.start();
    if (!ep) throw std::runtime_error(ep.error());
    port = ep->port();
    runtime.start();
    dir = std::filesystem::temp_directory_path() /
          ("kh-timeline-bench-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    kubeconfig = (dir / "kubeconfig").string();
    if (auto r = server.writeKubeconfig(kubeconfig); !r) throw std::runtime_error(r.error());
    Connection c(port);
    for (const auto& ns : domains)
      c.request(http::verb::post, "/api/v1/namespaces", json{{"metadata", {{"name", ns}}}}.dump());
    c.request(http::verb::post, "/api/v1/namespaces",
              json{{"metadata", {{"name", "cross-domain"}}}}.dump());
    config.adminListen = "127.0.0.1:0";
    config.cluster.source = ClusterConfig::Source::kKubeconfig;
    config.cluster.kubeconfig = kubeconfig;
    config.cluster.qps = 100000;
    config.cluster.burst = 100000;
    for (const auto& d : domains) {
      DomainConfig dc{d, {}};
      PluginEntry t;
      t.name = "task-timeline";
      t.path = KH_PLUGIN_DIR "/task-timeline.so";
      t.configJson = timelineConfig;
      dc.plugins.push_back(t);
      if (gateway) {
        PluginEntry g;
        g.name = "gateway-ready-time";
        g.path = KH_PLUGIN_DIR "/gateway-ready-time.so";
        dc.plugins.push_back(g);
      }
      config.domains.push_back(dc);
    }
  }
  ~Setup() {
    daemon.reset();
    server.stop();
    runtime.stop();
    std::filesystem::remove_all(dir);
  }
  void startHost() {
    daemon = std::make_unique<Daemon>(config, DaemonOptions{}, logs, clock);
    if (auto r = daemon->start(); !r) throw std::runtime_error(r.error());
  }
  // A series' value in the host's /metrics, 0 when absent.
  double metric(const std::string& series) const {
    std::string text = daemon->metrics().render();
    auto pos = text.find("\n" + series + " ");
    return pos == std::string::npos ? 0 : std::stod(text.substr(pos + series.size() + 2));
  }
  double sum(const std::string& name, const std::vector<std::string>& domains,
             const std::string& extra = "") const {
    double total = 0;
    for (const auto& d : domains)
      total +=
          metric(name + "{plugin=\"" +
                 (name.rfind("kuscia_gateway", 0) == 0 ? "gateway-ready-time" : "task-timeline") +
                 "\",domain=\"" + d + "\"" + extra + "}");
    return total;
  }

  std::ostringstream logOut;
  LogManager logs{LogFormat::kText, spdlog::level::warn, logOut};
  SystemClock clock;
  Runtime runtime{2};
  apiserver::ApiServer server;
  unsigned short port = 0;
  std::filesystem::path dir;
  std::string kubeconfig;
  HostConfig config;
  std::unique_ptr<Daemon> daemon;
};

json taskObject(const std::string& name, const std::vector<std::string>& parties) {
  json p = json::array();
  for (const auto& d : parties)
    p.push_back({{"domainID", d}, {"appImageRef", "secretflow-image"}});
  return {{"apiVersion", "kuscia.secretflow/v1alpha1"},
          {"kind", "KusciaTask"},
          {"metadata", {{"name", name}}},
          {"spec", {{"initiator", parties[0]}, {"parties", p}}}};
}

json podObject(const std::string& name, const std::string& task) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"annotations", {{"kuscia.secretflow/task-id", task}}}}},
          {"spec", {{"containers", {{{"name", "c"}, {"image", "secretflow"}}}}}}};
}

// --- B3 -------------------------------------------------------------------------------------

void b3(std::size_t transitions, std::size_t tasks) {
  std::printf("B3: Ready transition -> status PATCH with readyTime (coalescing 0), %zu transitions "
              "over %zu tasks\n",
              transitions, tasks);
  auto rtt = loopbackRtt(20000);
  double rttP50 = percentile(rtt, 0.5);
  Setup s({"alice"}, R"({"coalesceMillis": 0})", false);
  Connection c(s.port);
  for (std::size_t t = 0; t < tasks; ++t)
    c.request(http::verb::post,
              "/apis/kuscia.secretflow/v1alpha1/namespaces/cross-domain/kusciatasks",
              taskObject("bench-" + std::to_string(t), {"alice"}).dump());
  s.startHost();

  std::mutex mu;
  std::condition_variable cv;
  std::string current;              // "alice/<pod>" being measured
  bool wantReady = false;           // waiting for the readyTime (else for the startTime)
  Clock::time_point readyApplied{}; // when the server stored the Ready transition
  double latencyUs = -1;
  bool entryStarted = false;
  s.server.store().setObserver([&](const apiserver::WatchEvent& e) {
    if (!e.object) return;
    std::lock_guard lock(mu);
    if (current.empty()) return;
    const auto& o = *e.object;
    if (e.resource->plural == "pods") {
      if (wantReady && o["metadata"].value("name", "") == current.substr(6)) {
        for (const auto& cond : o["status"].value("conditions", json::array()))
          if (cond.value("type", "") == "Ready" && cond.value("status", "") == "True")
            readyApplied = Clock::now();
      }
      return;
    }
    if (e.resource->plural != "kusciatasks" || !o.contains("status")) return;
    const auto& pods = o["status"].value("podStatuses", json::object());
    auto it = pods.find(current);
    if (it == pods.end()) return;
    if (!wantReady && it->contains("startTime")) {
      entryStarted = true;
      cv.notify_all();
    } else if (wantReady && it->contains("readyTime") && latencyUs < 0) {
      latencyUs = std::chrono::duration<double, std::micro>(Clock::now() - readyApplied).count();
      cv.notify_all();
    }
  });

  std::vector<double> latencies;
  for (std::size_t i = 0; i < transitions; ++i) {
    std::string name = "p" + std::to_string(i);
    std::string task = "bench-" + std::to_string(i % tasks);
    {
      std::lock_guard lock(mu);
      current = "alice/" + name;
      wantReady = false;
      entryStarted = false;
      latencyUs = -1;
    }
    c.request(http::verb::post, "/api/v1/namespaces/alice/pods", podObject(name, task).dump());
    std::string t = nowText();
    c.request(http::verb::patch, "/api/v1/namespaces/alice/pods/" + name + "/status",
              json{{"status", {{"phase", "Running"}, {"startTime", t}}}}.dump(),
              "application/merge-patch+json");
    {
      std::unique_lock lock(mu);
      if (!cv.wait_for(lock, std::chrono::seconds(10), [&] { return entryStarted; }))
        throw std::runtime_error("the status never got " + name + "'s startTime");
      wantReady = true;
    }
    c.request(http::verb::patch, "/api/v1/namespaces/alice/pods/" + name + "/status",
              json{{"status",
                    {{"conditions",
                      {{{"type", "Ready"}, {"status", "True"}, {"lastTransitionTime", t}}}}}}}
                  .dump(),
              "application/strategic-merge-patch+json");
    std::unique_lock lock(mu);
    if (!cv.wait_for(lock, std::chrono::seconds(10), [&] { return latencyUs >= 0; }))
      throw std::runtime_error("the status never got " + name + "'s readyTime");
    latencies.push_back(latencyUs);
  }
  s.server.store().setObserver(nullptr);
  double p50 = percentile(latencies, 0.5);
  double p99 = percentile(latencies, 0.99);
  std::printf("  loopback TCP round trip (same run): p50 %.1f us\n", rttP50);
  std::printf(
      "  Ready -> status patch applied: p50 %.1f us (%.1fx RTT, target <= 10x), p99 %.1f us "
      "(target <= 1000 us), max %.1f us\n",
      p50, p50 / rttP50, p99, percentile(latencies, 1.0));
}

// --- B4 -------------------------------------------------------------------------------------

void b4(std::size_t tasks) {
  const std::vector<std::string> parties = {"alice", "bob"};
  const std::vector<std::string> ports = {"spu", "fed", "global"};
  std::printf("B4: %zu task startups replayed, 2 parties x 1 pod x 3 services, coalescing 50 ms\n",
              tasks);
  Setup s(parties, "{}", true);
  s.startHost();
  Connection c(s.port);
  auto complete = [&](const std::string& task) {
    c.request(http::verb::get,
              "/apis/kuscia.secretflow/v1alpha1/namespaces/cross-domain/kusciatasks/" + task);
    json st = json::parse(c.body())["status"];
    if (!st.is_object()) return false;
    const json pods = st.value("podStatuses", json::object());
    const json services = st.value("serviceStatuses", json::object());
    std::size_t done = 0;
    for (const auto& e : pods)
      done += e.contains("readyTime") && e.contains("startTime") && e.contains("createTime");
    for (const auto& e : services)
      done += e.contains("readyTime") && e.contains("createTime");
    return done == parties.size() * (1 + ports.size());
  };
  for (std::size_t t = 0; t < tasks; ++t) {
    std::string task = "replay-" + std::to_string(t);
    c.request(http::verb::post,
              "/apis/kuscia.secretflow/v1alpha1/namespaces/cross-domain/kusciatasks",
              taskObject(task, parties).dump());
    std::string now = nowText();
    for (const auto& d : parties) {
      std::string pod = task + "-0";
      std::string base = "/api/v1/namespaces/" + d;
      c.request(http::verb::post, base + "/pods", podObject(pod, task).dump());
      c.request(
          http::verb::patch, base + "/pods/" + pod + "/status",
          json{{"status",
                {{"phase", "Running"},
                 {"startTime", now},
                 {"conditions",
                  {{{"type", "PodScheduled"}, {"status", "True"}, {"lastTransitionTime", now}},
                   {{"type", "Ready"}, {"status", "True"}, {"lastTransitionTime", now}}}}}}}
              .dump(),
          "application/merge-patch+json");
      for (const auto& port : ports) {
        std::string svc = pod + "-" + port;
        c.request(http::verb::post, base + "/services",
                  json{{"apiVersion", "v1"},
                       {"kind", "Service"},
                       {"metadata",
                        {{"name", svc}, {"annotations", {{"kuscia.secretflow/task-id", task}}}}},
                       {"spec", {{"clusterIP", "None"}, {"ports", {{{"port", 8080}}}}}}}
                      .dump());
        c.request(http::verb::post, base + "/endpoints",
                  json{{"apiVersion", "v1"},
                       {"kind", "Endpoints"},
                       {"metadata", {{"name", svc}}},
                       {"subsets", {{{"addresses", {{{"ip", "10.0.0.1"}}}}}}}}
                      .dump());
      }
    }
    auto until = Clock::now() + std::chrono::seconds(20);
    while (!complete(task)) {
      if (Clock::now() > until) throw std::runtime_error(task + " never completed");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200)); // nothing more may follow
  double writes = s.sum("kuscia_timeline_status_writes_total", parties, ",result=\"ok\"");
  double retried = s.sum("kuscia_timeline_status_writes_total", parties, ",result=\"retried\"");
  double bytes = s.sum("kuscia_timeline_status_patch_bytes_total", parties);
  double annotations = s.sum("kuscia_gateway_ready_time_writes_total", parties, ",result=\"ok\"");
  auto n = static_cast<double>(tasks);
  std::printf("  status writes per task: %.2f (target <= 2; %.0f retried in all)\n", writes / n,
              retried);
  std::printf("  status patch bytes per task: %.0f (target <= 2048)\n", bytes / n);
  std::printf("  annotation writes per service: %.2f (target 1)\n",
              annotations / (n * static_cast<double>(parties.size() * ports.size())));
  // A restarted host on the converged cluster: nothing to write.
  s.daemon->shutdown();
  s.startHost();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  double after = s.sum("kuscia_timeline_status_writes_total", parties, ",result=\"ok\"") +
                 s.sum("kuscia_gateway_ready_time_writes_total", parties, ",result=\"ok\"");
  std::printf("  writes by a restarted host when nothing changed: %.0f (target 0)\n", after);
}

int run(int argc, char** argv) {
  std::size_t transitions = 10000;
  std::size_t tasks = 10000; // one pod per task and domain, as Kuscia tasks mostly have
  std::size_t replays = 100;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--transitions")
      transitions = std::stoul(argv[i + 1]);
    else if (k == "--tasks")
      tasks = std::stoul(argv[i + 1]);
    else if (k == "--replays")
      replays = std::stoul(argv[i + 1]);
    else if (k == "--only")
      only = argv[i + 1];
    else
      throw std::runtime_error("unknown option " + k);
  }
  if (only.empty() || only == "B3") b3(transitions, tasks);
  if (only.empty() || only == "B4") b4(replays);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "timeline_bench: %s\n", e.what());
  }
  return 1;
}
