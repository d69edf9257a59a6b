// Benchmarks of the host's Kubernetes client (not tests: they print figures and ratios against
// a baseline measured in the same run, and assert nothing).
//
//   B1 watch ingest: recorded pod MODIFIED events (~8 KB) through frame split -> simdjson
//      projection of 8 fields -> cache update -> dispatch to a subscriber, against the same
//      frames parsed into an nlohmann DOM with the same 8 fields extracted and, with --go, the Go
//      baseline (tests/bench/go: encoding/json into typed Pod structs, as client-go decodes).
//   B2 memory per tracked pod at 10k and 50k pods: heap held by the informer's cache (records
//      and index) per pod, against an nlohmann DOM per pod.
//   B5 initial sync of P pods via paged LIST (limit 500) from `kuscia-host apiserver` in its own
//      process, in a fresh child process: CPU seconds and peak RSS, against a child that lists
//      the same pages into nlohmann DOMs.
//   B6 write ceiling: merge PATCHes/s through the host's client over one keep-alive connection,
//      against wrk (1 thread, 1 connection) on the same server, both changing the object with
//      every request; then a QPS-limited run checking that no 1 s window ever holds more than
//      qps + burst requests.
//
// usage: kube_bench [--events N] [--pods-b2 A,B] [--pods-b5 P] [--writes W] [--only B1,B2,...]
//                   [--go <b1decode binary>] --host <kuscia-host binary>
#include <malloc.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <vector>

#include "kube/http_client.h"
#include "kube/informer.h"
#include "kube/kube_client.h"
#include "logging/logging.h"
#include "metrics/registry.h"
#include "runtime/runtime.h"

extern char** environ;

namespace {

using namespace kuscia_host;
using namespace kuscia_host::kube;
using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

const std::vector<std::string> kFields = {"/metadata/creationTimestamp",
                                          "/metadata/labels/kuscia.secretflow~1task-uid",
                                          "/metadata/annotations/kuscia.secretflow~1task-id",
                                          "/spec/nodeName",
                                          "/status/phase",
                                          "/status/startTime",
                                          "/status/conditions/1/lastTransitionTime",
                                          "/status/containerStatuses/0/state/running/startedAt"};

double since(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

double cpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// A memory figure of this process from /proc/self/status, in KiB: "VmRSS" (current RSS) or
// "VmHWM" (peak RSS of this process image; unlike ru_maxrss it does not carry over an exec).
long statusKb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  return -1;
}

std::size_t heapInUse() {
  malloc_trim(0);
  return mallinfo2().uordblks;
}

// A Kuscia-like pod (the repository's fixture), padded to about `bytes` with env entries.
json basePod(std::size_t bytes) {
  std::ifstream in(std::string(KH_SOURCE_DIR) + "/tests/fixtures/pod.json");
  json pod = json::parse(in);
  auto& env = pod["spec"]["containers"][0]["env"];
  for (int i = 0; pod.dump().size() < bytes; ++i)
    env.push_back(
        {{"name", "KUSCIA_SETTING_" + std::to_string(i)},
         {"value", "value-of-a-setting-the-task-runtime-reads-at-start-" + std::to_string(i)}});
  return pod;
}

json podNumber(json pod, std::size_t i, uint64_t rv) {
  std::string n = std::to_string(i);
  pod["metadata"]["name"] = "secretflow-task-" + n + "-0";
  pod["metadata"]["uid"] =
      "5a3e9b7c-1d2f-4e6a-8b9c-" + std::string(12 - std::min<std::size_t>(12, n.size()), '0') + n;
  pod["metadata"]["resourceVersion"] = std::to_string(rv);
  pod["metadata"]["labels"]["kuscia.secretflow/task-uid"] = "task-uid-" + std::to_string(i / 2);
  pod["status"]["phase"] = (rv % 3 == 0) ? "Running" : "Pending";
  return pod;
}

// --- B1 ------------------------------------------------------------------------------------

struct Counting {
  std::atomic<uint64_t> events{0};
  std::atomic<uint64_t> bytes{0};
};

// An informer fed by hand (no server) with one subscription whose dispatch renders its fields,
// as a plugin subscription's does.
struct IngestRig {
  explicit IngestRig(const char* name) {
    inf = std::make_shared<Informer>(io, nullptr, metrics, clock, logs.logger(name), "", "v1",
                                     "pods", "alice", ReflectorOptions{});
    SubscriptionSpec spec{"", "v1", "pods", "alice", "", kFields, false};
    auto r =
        inf->subscribe(1, spec, [this](const Subscription& s, ChangeType, const RecordPtr& rec) {
          if (!rec) return;
          sink.bytes += s.fieldsJson(*rec).size();
          ++sink.events;
        });
    if (!r) throw std::runtime_error(r.error());
    inf->prepare();
  }
  std::ostringstream log;
  LogManager logs{LogFormat::kText, spdlog::level::warn, log};
  MetricsRegistry registry;
  KubeMetrics metrics{registry};
  SystemClock clock;
  boost::asio::io_context io;
  Counting sink;
  std::shared_ptr<Informer> inf;
};

// Runs the Go baseline (tests/bench/go) over the events file; its rate, or -1 when it failed.
double goBaseline(const std::string& binary, const std::string& file, std::size_t rounds) {
  std::string cmd = binary + " " + file + " " + std::to_string(rounds) + " 2>&1";
  double rate = -1;
  if (FILE* f = popen(cmd.c_str(), "r")) {
    char line[512];
    while (std::fgets(line, sizeof line, f) != nullptr)
      if (std::strncmp(line, "events/s:", 9) == 0)
        rate = std::atof(line + 9);
      else
        std::printf("  go baseline: %s", line);
    if (pclose(f) != 0) rate = -1;
  }
  return rate;
}

// The recorded events, replayed in rounds. Every event of every round carries a higher
// resourceVersion than the one before (an informer drops what goes backwards) and a new
// lastTransitionTime (a subscribed field: the event is dispatched), both stamped in place at
// fixed-width offsets between rounds.
struct Replay {
  std::string stream;
  std::vector<std::size_t> rvAt, timeAt; // offsets of the 10 rv digits and the HH:MM:SS
  uint64_t next = 1000000000;            // the next resourceVersion (10 digits)

  Replay(const json& pod, std::size_t distinct, std::size_t pods) {
    for (std::size_t i = 0; i < distinct; ++i) {
      json obj = podNumber(pod, i % pods, 1000000000);
      obj["status"]["conditions"][1]["lastTransitionTime"] = "2099-01-01T00:00:00Z";
      std::size_t base = stream.size();
      std::string ev = json{{"type", "MODIFIED"}, {"object", obj}}.dump() + "\n";
      rvAt.push_back(base + ev.find("\"resourceVersion\":\"1000000000\"") + 19);
      timeAt.push_back(base + ev.find("2099-01-01T00:00:00Z") + 11);
      stream += ev;
    }
  }
  // Stamps the next round; the events it covers.
  std::size_t stamp() {
    for (std::size_t i = 0; i < rvAt.size(); ++i, ++next) {
      std::string rv = std::to_string(next);
      stream.replace(rvAt[i], 10, rv);
      uint64_t t = next % 86400; // each pod's next event is `distinct` seconds later
      char hms[9];
      std::snprintf(hms, sizeof hms, "%02u:%02u:%02u", static_cast<unsigned>(t / 3600),
                    static_cast<unsigned>(t / 60 % 60), static_cast<unsigned>(t % 60));
      stream.replace(timeAt[i], 8, hms);
    }
    return rvAt.size();
  }
};

// B1's measurement; false when fewer events were dispatched than ingested (the figure would
// measure nothing).
bool b1(std::size_t events, const std::string& goBinary) {
  std::printf("\nB1 watch ingest: %zu pod MODIFIED events\n", events);
  json pod = basePod(std::size_t{8} * 1024);
  const std::size_t distinct = 1000;
  Replay replay(pod, distinct, 200);
  std::printf("  event size %.1f KB, %zu distinct events replayed with rising resourceVersions, "
              "200 pods\n",
              static_cast<double>(replay.stream.size()) / distinct / 1024, distinct);
  const std::size_t rounds = std::max<std::size_t>(1, events / distinct);
  const std::size_t chunk = std::size_t{16} * 1024; // arbitrary chunk boundaries, as from a socket

  IngestRig rig("b1");
  auto& inf = rig.inf;
  // Ours: median of 3; only the ingest is timed, not the stamping.
  std::vector<double> ours;
  std::size_t ingested = 0;
  for (int rep = 0; rep < 3; ++rep) {
    double seconds = 0;
    std::size_t n = 0;
    for (std::size_t r = 0; r < rounds; ++r) {
      n += replay.stamp();
      auto t0 = SteadyClock::now();
      for (std::size_t off = 0; off < replay.stream.size(); off += chunk)
        inf->ingest(std::string_view(replay.stream).substr(off, chunk));
      seconds += since(t0);
    }
    ingested += n;
    ours.push_back(static_cast<double>(n) / seconds);
  }
  const std::string& stream = replay.stream;
  // Baseline: the same frames, each parsed into an nlohmann DOM and the same fields extracted.
  std::vector<double> dom;
  std::vector<json::json_pointer> ptrs;
  ptrs.reserve(kFields.size());
  for (const auto& f : kFields)
    ptrs.emplace_back(f);
  std::size_t extracted = 0;
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = SteadyClock::now();
    std::size_t n = 0;
    for (std::size_t r = 0; r < std::max<std::size_t>(1, rounds / 5); ++r) {
      FrameSplitter split;
      for (std::size_t off = 0; off < stream.size(); off += chunk) {
        split.feed(std::string_view(stream).substr(off, chunk));
        std::string_view frame;
        while (split.next(frame) == FrameSplitter::Status::kFrame) {
          json ev = json::parse(frame);
          const json& obj = ev["object"];
          for (const auto& p : ptrs)
            if (obj.contains(p)) extracted += obj.at(p).dump().size();
          ++n;
        }
      }
    }
    dom.push_back(static_cast<double>(n) / since(t0));
  }
  std::sort(ours.begin(), ours.end());
  std::sort(dom.begin(), dom.end());
  std::printf(
      "  kuscia-host (split, simdjson projection, cache, dispatch): %.0f events/s (%.1f MB/s)\n",
      ours[1], ours[1] * static_cast<double>(stream.size()) / distinct / 1e6);
  std::printf("  baseline nlohmann DOM + same 8 fields:                      %.0f events/s\n",
              dom[1]);
  std::printf("  B1 ratio: %.1fx the nlohmann-DOM baseline (target >= 5x; >= 75k events/s)\n",
              ours[1] / dom[1]);
  if (goBinary.empty()) {
    std::printf("  Go encoding/json baseline: not run (--go <tests/bench/go binary>)\n");
  } else {
    std::string file = std::filesystem::temp_directory_path() /
                       ("kh-bench1-" + std::to_string(getpid()) + ".jsonl");
    std::ofstream(file) << stream;
    double go = goBaseline(goBinary, file, std::max<std::size_t>(1, rounds / 5));
    std::filesystem::remove(file);
    if (go > 0)
      std::printf("  baseline Go encoding/json, typed Pod + same 8 fields:       %.0f events/s\n"
                  "  B1 ratio: %.1fx the Go encoding/json baseline (target >= 20x)\n",
                  go, ours[1] / go);
    else
      std::printf("  Go encoding/json baseline: %s failed\n", goBinary.c_str());
  }
  const uint64_t dispatched = rig.sink.events.load();
  std::printf("  (ingested %zu events, dispatched %llu, %zu objects cached, checksum %zu)\n",
              ingested, static_cast<unsigned long long>(dispatched), inf->size(), extracted);
  if (dispatched < ingested) {
    std::printf("  B1 FAILED: %llu of %zu events were dispatched; the figures above measure "
                "events the informer dropped\n",
                static_cast<unsigned long long>(dispatched), ingested);
    return false;
  }
  return true;
}

// --- B2 ------------------------------------------------------------------------------------

void b2(const std::vector<std::size_t>& sizes) {
  json pod = basePod(std::size_t{8} * 1024);
  for (std::size_t n : sizes) {
    std::printf("\nB2 memory per tracked pod: %zu pods, 8 fields each\n", n);
    IngestRig rig("b2");
    auto& inf = rig.inf;
    // Warm up the parser and the stream buffer, then measure what the cache holds.
    inf->ingest(json{{"type", "ADDED"}, {"object", podNumber(pod, n, 1)}}.dump() + "\n");
    std::size_t before = heapInUse();
    long rssBefore = statusKb("VmRSS");
    for (std::size_t i = 0; i < n; i += 100) {
      std::string batch;
      for (std::size_t j = i; j < std::min(n, i + 100); ++j)
        batch += json{{"type", "ADDED"}, {"object", podNumber(pod, j, 10 + j)}}.dump() + "\n";
      for (std::size_t off = 0; off < batch.size();
           off += std::size_t{64} * 1024) // as from a socket
        inf->ingest(std::string_view(batch).substr(off, std::size_t{64} * 1024));
    }
    std::size_t held = heapInUse() - before;
    n += 1; // the warm-up pod is cached too
    long rssAfter = statusKb("VmRSS");
    // Baseline: an nlohmann DOM per pod (what a DOM-based cache holds).
    std::size_t domBefore = heapInUse();
    std::vector<json> doms;
    std::size_t domN = std::min<std::size_t>(n, 5000);
    doms.reserve(domN);
    for (std::size_t j = 0; j < domN; ++j)
      doms.push_back(podNumber(pod, j, 10 + j));
    std::size_t domPerPod = (heapInUse() - domBefore) / domN;
    std::printf("  cached objects %zu; heap held %.1f MB = %zu bytes/pod (records + index)\n",
                inf->size(), static_cast<double>(held) / 1e6, held / n);
    std::printf("  RSS grew %.1f MB while ingesting\n",
                static_cast<double>(rssAfter - rssBefore) / 1024);
    std::printf("  baseline nlohmann DOM per pod: %zu bytes\n", domPerPod);
    const std::size_t perPod = held / n;
    std::printf("  B2: %zu bytes/pod (target <= 512), %.0fx smaller than the DOM baseline\n",
                perPod, static_cast<double>(domPerPod) / static_cast<double>(perPod));
  }
}

// --- helpers for B5/B6: a real API server in its own process --------------------------------

class ServerProcess {
public:
  ServerProcess(const std::string& host, const std::string& dir)
      : kubeconfig_(dir + "/kubeconfig") {
    std::string out = dir + "/apiserver.out";
    std::vector<std::string> args = {
        host,        "apiserver", "--listen", "127.0.0.1:0", "--kubeconfig-out",
        kubeconfig_, "--history", "1000"};
    std::fflush(stdout);
    pid_ = fork();
    if (pid_ == 0) {
      std::freopen(out.c_str(), "w", stdout);
      std::vector<char*> argv;
      argv.reserve(args.size());
      for (auto& a : args)
        argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    for (int i = 0; i < 200; ++i) {
      std::ifstream in(out);
      std::string line;
      if (std::getline(in, line) && line.find("listening on ") != std::string::npos) {
        url_ = line.substr(line.find("listening on ") + 13);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    throw std::runtime_error("kuscia-host apiserver did not start");
  }
  ~ServerProcess() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  const std::string& url() const { return url_; }
  const std::string& kubeconfig() const { return kubeconfig_; }

private:
  pid_t pid_ = -1;
  std::string url_;
  std::string kubeconfig_;
};

// An io_context run by one thread until stop() (or destruction).
struct IoThread {
  IoThread() : worker([this] { io.run(); }) {}
  ~IoThread() { stop(); }
  void stop() {
    guard.reset();
    io.stop();
    if (worker.joinable()) worker.join();
  }
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard =
      boost::asio::make_work_guard(io);
  std::thread worker;
};

ClusterAccess accessFor(const std::string& url) {
  ClusterAccess a;
  a.server = url;
  parseServerUrl(url, a.scheme, a.host, a.port);
  a.description = "bench";
  return a;
}

// Synchronous request through the host's own transport.
HttpResponse call(HttpTransport& t, const std::string& method, const std::string& target,
                  const std::string& body = "", const std::string& type = "") {
  std::promise<Result<HttpResponse>> p;
  t.send(HttpRequest{method, target, body, type, std::chrono::milliseconds(120000)},
         [&p](Result<HttpResponse> r) { p.set_value(std::move(r)); });
  auto r = p.get_future().get();
  if (!r) throw std::runtime_error(r.error());
  return *r;
}

// Runs this binary again with `args`; returns its stdout.
std::string runSelf(const std::vector<std::string>& args) {
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe");
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    std::vector<std::string> all = {self};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    argv.reserve(all.size());
    for (auto& a : all)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(self.c_str(), argv.data());
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0)
    out.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  return out;
}

// --- B5 ------------------------------------------------------------------------------------

// In a fresh process: sync `url`'s alice pods, print "cpu=<s> rss=<kb> objects=<n> wall=<s>".
int b5Child(const std::string& url, const std::string& mode) {
  std::ostringstream sinkLog;
  LogManager logs(LogFormat::kText, spdlog::level::warn, sinkLog);
  SystemClock clock;
  MetricsRegistry registry;
  IoThread rt;
  auto& io = rt.io;
  double cpu0 = cpuSeconds();
  auto t0 = SteadyClock::now();
  std::size_t objects = 0;
  std::string error;
  try {
    if (mode == "ours") {
      HealthRegistry health;
      KubeClientOptions o;
      o.qps = 1000;
      o.burst = 1000;
      auto client = KubeClient::create(io, accessFor(url), o, clock, registry, logs.logger("b5"));
      if (!client) throw std::runtime_error(client.error());
      std::promise<void> synced;
      SubscriptionSpec spec{"", "v1", "pods", "alice", "", kFields, false};
      std::atomic<std::size_t> added{0};
      auto id =
          (*client)->subscribe(spec, [&](const Subscription&, ChangeType t, const RecordPtr&) {
            if (t == ChangeType::kAdded) ++added;
            if (t == ChangeType::kSynced) synced.set_value();
          });
      (*client)->start(health);
      synced.get_future().wait();
      objects = (*client)->informers()[0]->size();
      (*client)->stop();
      (void)id;
    } else {
      // Baseline: the same paged LIST, each page parsed into an nlohmann DOM, items kept as DOMs.
      auto t = BeastHttpClient::create(io, accessFor(url));
      std::map<std::string, json> cache;
      std::string cont;
      do {
        std::string encoded;
        for (unsigned char c : cont)
          encoded += std::isalnum(c) != 0 ? std::string(1, static_cast<char>(c))
                                          : fmt::format("%{:02X}", c);
        std::string target =
            "/api/v1/namespaces/alice/pods?limit=500" +
            (cont.empty() ? std::string("&resourceVersion=0") : "&continue=" + encoded);
        auto page = json::parse(call(**t, "GET", target).body);
        for (auto& item : page["items"]) {
          std::string name = item["metadata"]["name"].get<std::string>();
          cache[name] = std::move(item);
        }
        const json& c = page["metadata"]["continue"];
        cont = c.is_string() ? c.get<std::string>() : "";
      } while (!cont.empty());
      objects = cache.size();
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  double wall = since(t0);
  double cpu = cpuSeconds() - cpu0;
  rt.stop();
  if (!error.empty()) {
    std::printf("error=%s\n", error.c_str());
    return 1;
  }
  std::printf("cpu=%.3f rss=%ld objects=%zu wall=%.3f\n", cpu, statusKb("VmHWM"), objects, wall);
  return 0;
}

void b5(const std::string& host, std::size_t pods) {
  std::printf("\nB5 initial sync: %zu pods via paged LIST (limit 500) from kuscia-host apiserver\n",
              pods);
  std::string dir =
      std::filesystem::temp_directory_path() / ("kh-bench-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  ServerProcess server(host, dir);
  IoThread rt;
  auto t = BeastHttpClient::create(rt.io, accessFor(server.url()));
  call(**t, "POST", "/api/v1/namespaces", R"({"metadata":{"name":"alice"}})", "application/json");
  json pod = basePod(std::size_t{4} * 1024);
  pod["metadata"].erase("resourceVersion");
  pod["metadata"].erase("uid");
  pod.erase("status");
  auto t0 = SteadyClock::now();
  for (std::size_t i = 0; i < pods; ++i) {
    json p = pod;
    p["metadata"]["name"] = "pod-" + std::to_string(i);
    auto r = call(**t, "POST", "/api/v1/namespaces/alice/pods", p.dump(), "application/json");
    if (r.status != 201) throw std::runtime_error("create failed: " + r.body);
    if (i % 10000 == 9999) std::printf("  loaded %zu pods (%.0f/s)\n", i + 1, (i + 1) / since(t0));
  }
  rt.stop(); // no thread may run across the fork of the child processes below
  std::printf("  pod size %.1f KB; loaded in %.1f s\n",
              static_cast<double>(pod.dump().size()) / 1024, since(t0));
  auto parse = [](const std::string& out, const char* key) {
    auto p = out.find(std::string(key) + "=");
    return p == std::string::npos ? -1.0 : std::stod(out.substr(p + std::strlen(key) + 1));
  };
  std::string ours = runSelf({"--b5-child", server.url(), "ours"});
  std::string base = runSelf({"--b5-child", server.url(), "baseline"});
  for (const auto* out : {&ours, &base})
    if (out->find("error=") != std::string::npos) std::printf("  child failed: %s", out->c_str());
  double oc = parse(ours, "cpu"), orss = parse(ours, "rss") / 1024, ow = parse(ours, "wall");
  double bc = parse(base, "cpu"), brss = parse(base, "rss") / 1024, bw = parse(base, "wall");
  std::printf("  kuscia-host informer: %.3f s CPU, peak RSS %.1f MB, %.2f s wall, %.0f objects\n",
              oc, orss, ow, parse(ours, "objects"));
  std::printf("  baseline nlohmann DOM list+cache: %.3f s CPU, peak RSS %.1f MB, %.2f s wall\n", bc,
              brss, bw);
  std::printf("  B5: %.3f s CPU (target <= 1.0), peak RSS %.1f MB (target <= 64); CPU %.1fx and "
              "RSS %.1fx lower than the baseline\n",
              oc, orss, bc / oc, brss / orss);
  std::filesystem::remove_all(dir);
}

// --- B6 ------------------------------------------------------------------------------------

// Records when each request went out (the real transport does the work).
class RecordingTransport final : public HttpTransport {
public:
  explicit RecordingTransport(std::shared_ptr<HttpTransport> inner) : inner_(std::move(inner)) {}
  void send(HttpRequest r, std::function<void(Result<HttpResponse>)> done) override {
    {
      std::lock_guard lock(mu_);
      sent_.push_back(SteadyClock::now());
    }
    inner_->send(std::move(r), std::move(done));
  }
  std::shared_ptr<Stream> stream(HttpRequest r, Strand strand,
                                 std::function<void(std::string_view)> d,
                                 std::function<void(Result<HttpResponse>)> done) override {
    return inner_->stream(std::move(r), std::move(strand), std::move(d), std::move(done));
  }
  // The most requests sent in any window of `w`.
  std::size_t maxInWindow(std::chrono::milliseconds w) {
    std::lock_guard lock(mu_);
    std::size_t best = 0, lo = 0;
    for (std::size_t hi = 0; hi < sent_.size(); ++hi) {
      while (sent_[hi] - sent_[lo] >= w)
        ++lo;
      best = std::max(best, hi - lo + 1);
    }
    return best;
  }

private:
  std::shared_ptr<HttpTransport> inner_;
  std::mutex mu_;
  std::vector<SteadyClock::time_point> sent_;
};

// Returns false when the client exceeded its configured rate limit: that is a defect, not a
// figure, and the benchmark exits non-zero for it.
bool b6(const std::string& host, std::size_t writes) {
  std::printf("\nB6 write ceiling: merge PATCH of a pod's status over one keep-alive connection\n");
  std::string dir =
      std::filesystem::temp_directory_path() / ("kh-bench6-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  ServerProcess server(host, dir);
  std::ostringstream sinkLog;
  LogManager logs(LogFormat::kText, spdlog::level::warn, sinkLog);
  SystemClock clock;
  MetricsRegistry registry;
  IoThread rt;
  auto& io = rt.io;
  auto beast = BeastHttpClient::create(io, accessFor(server.url()));
  call(**beast, "POST", "/api/v1/namespaces", R"({"metadata":{"name":"alice"}})",
       "application/json");
  json pod = basePod(std::size_t{2} * 1024);
  pod["metadata"].erase("resourceVersion");
  pod["metadata"].erase("uid");
  pod.erase("status");
  pod["metadata"]["name"] = "p0";
  call(**beast, "POST", "/api/v1/namespaces/alice/pods", pod.dump(), "application/json");

  auto run = [&](double qps, int burst, std::size_t n, bool sequential,
                 std::shared_ptr<RecordingTransport>& recording) {
    recording = std::make_shared<RecordingTransport>(*beast);
    KubeClientOptions o;
    o.qps = qps;
    o.burst = burst;
    auto client =
        std::make_shared<KubeClient>(io, recording, o, clock, registry, logs.logger("b6"));
    KubeRequest w;
    w.version = "v1";
    w.resource = "pods";
    w.namespaceName = "alice";
    w.name = "p0";
    w.subresource = "status";
    std::atomic<std::size_t> ok{0};
    auto t0 = SteadyClock::now();
    if (sequential) {
      // One write in flight: the next is issued from the completion, as a plugin does.
      std::promise<void> all;
      std::function<void(std::size_t)> next = [&](std::size_t i) {
        if (i == n) return all.set_value();
        w.body = R"({"status":{"message":"write )" + std::to_string(i) + "\"}}";
        (void)client->request(w, [&, i](const KubeResult& r) {
          if (r.httpCode == 200) ++ok;
          next(i + 1);
        });
      };
      next(0);
      all.get_future().wait();
    } else {
      std::promise<void> all;
      std::atomic<std::size_t> done{0};
      for (std::size_t i = 0; i < n; ++i) {
        w.body = R"({"status":{"message":"burst )" + std::to_string(i) + "\"}}";
        (void)client->request(w, [&](const KubeResult& r) {
          if (r.httpCode == 200) ++ok;
          if (++done == n) all.set_value();
        });
      }
      all.get_future().wait();
    }
    double secs = since(t0);
    client->stop();
    return std::make_pair(static_cast<double>(ok.load()) / secs, ok.load());
  };
  std::shared_ptr<RecordingTransport> rec;
  // wrk against the same server and object.
  std::string lua = dir + "/patch.lua";
  // Each request changes the object, as the client's writes do: a constant body would be a
  // no-op patch, which the server answers without writing anything.
  std::ofstream(lua) << "local n = 0\n"
                        "request = function()\n"
                        "  n = n + 1\n"
                        "  return wrk.format(\"PATCH\", nil,\n"
                        "    {[\"Content-Type\"] = \"application/merge-patch+json\"},\n"
                        "    '{\"status\":{\"message\":\"wrk ' .. n .. '\"}}')\n"
                        "end\n";
  auto wrk = [&] {
    std::string cmd = "wrk -t1 -c1 -d2s -s " + lua + " " + server.url() +
                      "/api/v1/namespaces/alice/pods/p0/status 2>&1";
    double rate = -1;
    if (FILE* f = popen(cmd.c_str(), "r")) {
      char line[512];
      while (std::fgets(line, sizeof line, f) != nullptr)
        if (std::strncmp(line, "Requests/sec:", 13) == 0) rate = std::atof(line + 13);
      pclose(f);
    }
    return rate;
  };
  // Interleaved pairs (ours, then wrk) so that drift on a shared machine hits both alike; the
  // ratio reported is the median of the pairs' ratios.
  std::vector<double> ours, theirs, ratios;
  double cpu = 0;
  for (int rep = 0; rep < 5; ++rep) {
    double cpu0 = cpuSeconds();
    ours.push_back(run(1e9, 1000000, writes, true, rec).first);
    cpu += cpuSeconds() - cpu0;
    double w = wrk();
    if (w > 0) {
      theirs.push_back(w);
      ratios.push_back(ours.back() / w);
    }
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? -1.0 : v[v.size() / 2];
  };
  std::printf("  kuscia-host client (rate limit off): %.0f PATCH/s (median of 5 x %zu), client CPU "
              "%.1f us per write\n",
              median(ours), writes, cpu / static_cast<double>(5 * writes) * 1e6);
  if (!ratios.empty())
    std::printf("  wrk -t1 -c1 (baseline):              %.0f PATCH/s (median of 5 x 2 s)\n"
                "  B6 ratio: %.0f%% of wrk (median of 5 interleaved pairs, range %.0f-%.0f%%; "
                "target >= 50%%)\n",
                median(theirs), 100 * median(ratios),
                100 * *std::min_element(ratios.begin(), ratios.end()),
                100 * *std::max_element(ratios.begin(), ratios.end()));
  else
    std::printf("  wrk not found (apt-get install wrk): no baseline this run\n");

  // The limit: 2,000 writes queued at once with qps 500, burst 50.
  auto limited = run(500, 50, 2000, false, rec);
  std::size_t maxWindow = rec->maxInWindow(std::chrono::milliseconds(1000));
  std::printf("  qps 500 burst 50, 2000 writes queued at once: %.0f writes/s achieved, at most %zu "
              "requests in any 1 s window (limit qps + burst = 550): %s\n",
              limited.first, maxWindow, maxWindow <= 550 ? "never exceeded" : "EXCEEDED");
  rt.stop();
  std::filesystem::remove_all(dir);
  return maxWindow <= 550;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 3 && args[0] == "--b5-child") {
    try {
      return b5Child(args[1], args[2]);
    } catch (const std::exception& e) {
      std::printf("error=%s\n", e.what());
      return 1;
    }
  }
  std::size_t events = 100000, podsB5 = 50000, writes = 20000;
  std::vector<std::size_t> podsB2 = {10000, 50000};
  std::string host, goBinary;
  std::set<std::string> only;
  for (std::size_t i = 0; i + 1 < args.size(); i += 2) {
    if (args[i] == "--events")
      events = std::stoul(args[i + 1]);
    else if (args[i] == "--pods-b5")
      podsB5 = std::stoul(args[i + 1]);
    else if (args[i] == "--writes")
      writes = std::stoul(args[i + 1]);
    else if (args[i] == "--host")
      host = args[i + 1];
    else if (args[i] == "--go")
      goBinary = args[i + 1];
    else if (args[i] == "--pods-b2") {
      podsB2.clear();
      std::stringstream ss(args[i + 1]);
      std::string n;
      while (std::getline(ss, n, ','))
        podsB2.push_back(std::stoul(n));
    } else if (args[i] == "--only") {
      std::stringstream ss(args[i + 1]);
      std::string n;
      while (std::getline(ss, n, ','))
        only.insert(n);
    } else {
      std::fprintf(stderr, "unknown option %s\n", args[i].c_str());
      return 2;
    }
  }
  auto want = [&](const char* b) { return only.empty() || only.count(b) > 0; };
  try {
    if (want("B1") && !b1(events, goBinary)) {
      std::fprintf(stderr, "kube_bench: B1: fewer events dispatched than ingested\n");
      return 1;
    }
    if (want("B2")) b2(podsB2);
    if ((want("B5") || want("B6")) && host.empty()) {
      std::fprintf(stderr, "B5 and B6 need --host <kuscia-host binary>\n");
      return 2;
    }
    if (want("B5")) b5(host, podsB5);
    if (want("B6") && !b6(host, writes)) {
      std::fprintf(stderr, "kube_bench: B6: the client exceeded its rate limit\n");
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kube_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
