#include "app/demo.h"

#include <unistd.h>

#include <kuscia_host/timeline.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include "app/cluster_reader.h"
#include "app/daemon.h"
#include "app/timeline_render.h"
#include "common/install_dirs.h"
#include "common/listen_address.h"
#include "common/version.h"
#include "logging/logging.h"

namespace kuscia_host {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const char* const kPlugins[] = {"sim-agent", "task-timeline", "gateway-ready-time",
                                "scheduler-time"};
constexpr int kServicesPerPod = 3; // sim-agent's default ports: spu, fed, global
const char* const kTasksPath =
    "/apis/kuscia.secretflow/v1alpha1/namespaces/cross-domain/kusciatasks";

// Where the plugins are: --plugin-dir, next to the binary (build tree and install tree), the
// packaged directory.
std::vector<fs::path> pluginSearchPath(const DemoOptions& o) {
  std::vector<fs::path> dirs(o.pluginDirs.begin(), o.pluginDirs.end());
  std::error_code ec;
  fs::path exe = fs::canonical("/proc/self/exe", ec);
  if (ec && !o.executable.empty()) exe = fs::absolute(o.executable);
  if (!exe.empty()) dirs.push_back(exe.parent_path().parent_path() / "plugins"); // a build tree
  dirs.push_back(installedPluginDir());
  return dirs;
}

std::string findPlugin(const std::vector<fs::path>& dirs, const std::string& name) {
  for (const auto& d : dirs) {
    std::error_code ec;
    if (fs::is_regular_file(d / (name + ".so"), ec)) return (d / (name + ".so")).string();
  }
  return "";
}

json taskObject(const std::string& name) {
  return {{"apiVersion", "kuscia.secretflow/v1alpha1"},
          {"kind", "KusciaTask"},
          {"metadata", {{"name", name}, {"namespace", "cross-domain"}}},
          {"spec",
           {{"initiator", "alice"},
            {"taskInputConfig", R"({"sf_node_eval_param":{"domain":"data_prep","name":"psi"}})"},
            {"scheduleConfig", {{"minReservedMembers", 2}, {"lifecycleSeconds", 300}}},
            {"parties",
             {{{"domainID", "alice"}, {"appImageRef", "secretflow-image"}},
              {{"domainID", "bob"}, {"appImageRef", "secretflow-image"}}}}}}};
}

// The address with its port moved by `delta` (the second host of --p2p), unless it is 0.
std::string shiftPort(const std::string& listen, int delta) {
  std::string host;
  unsigned short port = 0;
  if (!parseListenAddress(listen, host, port) || port == 0) return listen;
  return host + ":" + std::to_string(port + delta);
}

} // namespace

int runDemo(const DemoOptions& o, std::ostream& out, std::ostream& err) {
  auto dirs = pluginSearchPath(o);
  std::map<std::string, std::string> paths;
  for (const char* p : kPlugins) {
    paths[p] = findPlugin(dirs, p);
    if (paths[p].empty()) {
      err << "kuscia-host: demo: no " << p << ".so in ";
      for (const auto& d : dirs)
        err << d.string() << " ";
      err << "(build the plugins, or give --plugin-dir)\n";
      return 1;
    }
  }
  fs::path work = o.workDir.empty() ? fs::temp_directory_path() /
                                          ("kuscia-host-demo-" + std::to_string(::getuid()))
                                    : fs::path(o.workDir);
  std::error_code ec;
  fs::create_directories(work, ec);
  if (ec) {
    err << "kuscia-host: demo: cannot create " << work.string() << ": " << ec.message() << "\n";
    return 1;
  }
  std::ofstream logFile(work / "demo.log", std::ios::trunc);
  LogManager logs(LogFormat::kText, spdlog::level::info, logFile);
  SystemClock clock;

  // The hosts: one for both domains, or one per domain with its own cluster.
  json sim = {{"scheduleMillis", o.phaseMillis},
              {"startMillis", o.phaseMillis * 3 / 2},
              {"readyMillis", o.phaseMillis * 5 / 2},
              {"endpointsMillis", o.phaseMillis * 6 / 5},
              {"runMillis", o.phaseMillis * 3},
              {"distribution", "uniform"},
              {"spread", 0.3}};
  std::vector<std::vector<std::string>> hostDomains;
  if (o.p2p)
    hostDomains = {{"alice"}, {"bob"}};
  else
    hostDomains = {{"alice", "bob"}};
  std::vector<std::unique_ptr<Daemon>> daemons;
  std::vector<std::string> kubeconfigs;
  for (std::size_t h = 0; h < hostDomains.size(); ++h) {
    HostConfig c;
    c.mode = o.p2p ? "p2p" : "centralized";
    c.adminListen = shiftPort(o.adminListen, static_cast<int>(h));
    c.cluster.source = ClusterConfig::Source::kEmbedded;
    std::string name = o.p2p ? hostDomains[h][0] : "cluster";
    c.cluster.embeddedKubeconfigOut = (work / (name + ".kubeconfig")).string();
    kubeconfigs.push_back(c.cluster.embeddedKubeconfigOut);
    for (const auto& d : hostDomains[h]) {
      DomainConfig dc{d, {}};
      for (const char* p : kPlugins) {
        PluginEntry e;
        e.name = p;
        e.path = paths[p];
        if (std::string_view(p) == "sim-agent") e.configJson = sim.dump();
        dc.plugins.push_back(e);
      }
      c.domains.push_back(dc);
    }
    auto d = std::make_unique<Daemon>(c, DaemonOptions{}, logs, clock);
    if (auto r = d->start(); !r) {
      err << "kuscia-host: demo: " << r.error() << " (log: " << (work / "demo.log").string()
          << ")\n";
      return 1;
    }
    daemons.push_back(std::move(d));
  }

  // The clusters' namespaces, then the tasks (in every cluster in p2p, as interconnection does).
  std::vector<std::unique_ptr<ClusterReader>> clusters;
  for (auto& d : daemons) {
    kube::ClusterAccess a;
    a.server = d->embeddedApiServer()->url();
    kube::parseServerUrl(a.server, a.scheme, a.host, a.port);
    auto reader = ClusterReader::open(a);
    if (!reader) {
      err << "kuscia-host: demo: " << reader.error() << "\n";
      return 1;
    }
    for (const char* ns : {"alice", "bob", "cross-domain"}) {
      auto code =
          (*reader)->send("POST", "/api/v1/namespaces", json{{"metadata", {{"name", ns}}}}.dump());
      if (!code || (*code != 201 && *code != 409)) {
        err << "kuscia-host: demo: creating namespace " << ns
            << " failed: " << (code ? "HTTP " + std::to_string(*code) : code.error()) << "\n";
        return 1;
      }
    }
    clusters.push_back(std::move(reader.value()));
  }
  std::vector<std::string> tasks;
  for (int i = 1; i <= o.tasks; ++i) {
    tasks.push_back("demo-task-" + std::to_string(i));
    for (auto& c : clusters) {
      auto code = c->send("POST", kTasksPath, taskObject(tasks.back()).dump());
      if (!code || (*code != 201 && *code != 409)) {
        err << "kuscia-host: demo: submitting " << tasks.back()
            << " failed: " << (code ? "HTTP " + std::to_string(*code) : code.error()) << "\n";
        return 1;
      }
    }
  }
  out << "kuscia-host " << kVersion << " demo (" << (o.p2p ? "p2p" : "centralized")
      << "): " << o.tasks << " two-party task(s) submitted to domains alice and bob\n";
  out.flush();

  // Progress until every task has every time.
  const std::size_t entriesPerTask = std::size_t{2} * (1 + std::size_t{kServicesPerPod});
  const bool tty = ::isatty(STDOUT_FILENO) != 0 && &out == &std::cout;
  std::map<std::string, json> docs;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o.timeoutSeconds);
  int lastReady = -1;
  int ready = 0;
  while (true) {
    ready = 0;
    for (const auto& t : tasks) {
      std::vector<json> parts;
      for (auto& c : clusters)
        if (auto obj = c->get(std::string(kTasksPath) + "/" + t))
          parts.push_back(sdk::timeline::fromTask(*obj));
      docs[t] = mergeTimelines(parts);
      ready += timelineComplete(docs[t]) && docs[t]["entries"].size() >= entriesPerTask;
    }
    if (ready != lastReady || tty) {
      if (tty)
        out << "\r  tasks ready " << ready << "/" << o.tasks << std::flush;
      else if (ready != lastReady)
        out << "  tasks ready " << ready << "/" << o.tasks << "\n" << std::flush;
      lastReady = ready;
    }
    if (ready == o.tasks || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (tty) out << "\n";
  for (const auto& t : tasks) {
    out << "\n" << renderTimelineTable(docs[t]) << "\n" << renderTimelineGantt(docs[t]);
    if (!o.outputDir.empty()) {
      fs::create_directories(o.outputDir, ec);
      std::ofstream(fs::path(o.outputDir) / (t + ".json")) << docs[t].dump(2) << "\n";
    }
  }
  out << "\n";
  if (!o.outputDir.empty()) out << "timelines written to " << o.outputDir << "/<task>.json\n";
  // While it serves, how to look further (everything is in memory: gone once it exits).
  for (std::size_t h = 0; h < daemons.size() && !o.exitWhenDone; ++h) {
    std::string who = o.p2p ? hostDomains[h][0] + "'s cluster" : "the cluster";
    out << who << ": kubectl --kubeconfig " << kubeconfigs[h]
        << " get kt -n cross-domain -o yaml\n";
    auto ep = daemons[h]->adminEndpoint();
    out << "  timeline web page: http://" << ep->address().to_string() << ":" << ep->port()
        << "/ui/   API: http://" << ep->address().to_string() << ":" << ep->port()
        << "/api/v1/timelines\n";
    out << "  in a terminal: kuscia-host timeline " << tasks.front() << " --kubeconfig "
        << kubeconfigs[h] << "\n";
  }
  out << "log: " << (work / "demo.log").string() << "\n";
  if (ready < o.tasks)
    err << "kuscia-host: demo: only " << ready << " of " << o.tasks << " task(s) started within "
        << o.timeoutSeconds << " s\n";
  if (!o.exitWhenDone) {
    // Before the line that tells a caller it may press Ctrl-C: a signal that arrives before
    // run_one() is queued instead of killing the process.
    boost::asio::io_context io;
    boost::asio::signal_set signals(io, SIGINT, SIGTERM);
    out << "serving until Ctrl-C\n" << std::flush;
    signals.async_wait([](const boost::system::error_code&, int) {});
    io.run_one();
  }
  for (auto& d : daemons)
    d->shutdown();
  return ready == o.tasks ? 0 : 1;
}

} // namespace kuscia_host
