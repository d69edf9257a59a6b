#include "app/demo.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <yaml-cpp/yaml.h>

#include "app/cluster_reader.h"
#include "app/daemon.h"
#include "app/plugin_commands.h"
#include "app/plugin_search.h"
#include "common/listen_address.h"
#include "common/version.h"
#include "common/yaml_json.h"
#include "logging/logging.h"

namespace kuscia_host {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The demo's config file (config/demo/demo.yaml): its hosts' texts, the namespaces it creates and
// the objects it submits.
struct DemoConfig {
  std::string host, domain, traces, slowParty; // templates (see the file)
  std::vector<std::string> domains;            // the parties; slow-party slows the last one
  std::vector<std::string> namespaces;
  std::string collection;      // where the objects are created
  std::string objectNamespace; // where they are read back
  std::string objectTemplate;  // a KusciaJob (JSON), with ${name} and ${fault}
  std::string taskTemplate;    // each task of its spec.tasks (JSON), with ${name}
  std::string showCommand;     // a plugin's command that shows the objects
  std::vector<std::string> showArgs;
  std::string after, whileServing; // templates
  // --scenario NAME: what it says, and what the objects play in turn (${fault}).
  struct Scenario {
    std::string says;
    std::vector<std::string> faults;
    // The last party's values of the domain template's variables (${slowMillis} in them: eight
    // phases), over the demo's own.
    std::map<std::string, std::string> lastParty;
    // The tasks of each job, each depending on the one before (1: a job per task).
    int tasksPerJob = 1;
  };
  std::map<std::string, Scenario> scenarios;
};

Result<DemoConfig> loadDemoConfig(const DemoOptions& o) {
  std::string where = o.demoConfig.empty() ? "the demo's built-in config" : o.demoConfig;
  std::string text = embeddedDemoConfig();
  if (!o.demoConfig.empty()) {
    std::ifstream in(o.demoConfig);
    if (!in) return makeError("--demo-config " + o.demoConfig + ": cannot read it");
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  json doc;
  try {
    doc = yamlToJson(YAML::Load(text));
  } catch (const YAML::Exception& e) {
    return makeError(where + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  }
  if (!doc.is_object()) return makeError(where + ": not a mapping of host, domain, traces, ...");
  DemoConfig c;
  auto str = [&](const json& from, const char* key, std::string& out) -> Result<void> {
    if (!from.is_object() || !from.contains(key) || !from[key].is_string())
      return makeError(where + ": " + key + " must be a text");
    out = from[key].get<std::string>();
    return {};
  };
  const json objects = doc.value("objects", json::object());
  const json show = doc.value("show", json::object());
  for (const auto& r :
       {str(doc, "host", c.host), str(doc, "domain", c.domain), str(doc, "traces", c.traces),
        str(doc, "slowParty", c.slowParty), str(objects, "collection", c.collection),
        str(objects, "namespace", c.objectNamespace), str(show, "command", c.showCommand),
        str(doc, "after", c.after), str(doc, "whileServing", c.whileServing)})
    if (!r) return makeError(r.error());
  if (!show.contains("args") || !show["args"].is_array())
    return makeError(where + ": show.args must be a list");
  for (const auto& a : show["args"])
    c.showArgs.push_back(a.is_string() ? a.get<std::string>() : a.dump());
  for (auto [key, out] :
       {std::pair{"parties", &c.domains}, std::pair{"namespaces", &c.namespaces}}) {
    if (!doc.contains(key) || !doc[key].is_array())
      return makeError(where + ": " + key + " must be a list");
    for (const auto& item : doc[key])
      if (item.is_string()) out->push_back(item.get<std::string>());
    if (out->empty()) return makeError(where + ": " + key + " names none");
  }
  for (const char* key : {"template", "task"})
    if (!objects.contains(key) || !objects[key].is_object())
      return makeError(where + ": objects." + key + " must be a mapping");
  const json scenarios = doc.value("scenarios", json::object());
  for (const auto& [name, sc] : scenarios.items()) {
    DemoConfig::Scenario& to = c.scenarios[name];
    if (!sc.is_object() || !sc.value("says", json()).is_string() ||
        !sc.value("faults", json()).is_array() || sc["faults"].empty() ||
        !sc.value("lastParty", json::object()).is_object())
      return makeError(
          where + ": scenarios." + name +
          " must have says (a text), faults (a list) and lastParty (a mapping or none)");
    to.says = sc["says"].get<std::string>();
    if (sc.contains("tasksPerJob")) {
      if (!sc["tasksPerJob"].is_number_integer() || sc["tasksPerJob"].get<int>() < 1 ||
          sc["tasksPerJob"].get<int>() > 8)
        return makeError(where + ": scenarios." + name + ".tasksPerJob must be 1 to 8");
      to.tasksPerJob = sc["tasksPerJob"].get<int>();
    }
    const json lastParty = sc.value("lastParty", json::object()); // kept: items() views it
    for (const auto& [var, value] : lastParty.items())
      to.lastParty[var] = value.is_string() ? value.get<std::string>() : value.dump();
    for (const auto& f : sc["faults"])
      to.faults.push_back(f.is_string() ? f.get<std::string>() : f.dump());
  }
  c.objectTemplate = objects["template"].dump();
  c.taskTemplate = objects["task"].dump();
  return c;
}

std::string fill(std::string text, const std::map<std::string, std::string>& values) {
  for (const auto& [name, value] : values) {
    const std::string var = "${" + name + "}";
    for (auto at = text.find(var); at != std::string::npos; at = text.find(var, at + value.size()))
      text.replace(at, var.size(), value);
  }
  return text;
}

// One demo host: its config, its daemon and what it prints about itself.
struct DemoHost {
  std::string cluster; // "cluster", or the domain of its own cluster (--p2p)
  std::string kubeconfig;
  std::unique_ptr<Daemon> daemon;
};

// The demo's jobs: each a name and its tasks' names, in order.
using DemoJobs = std::vector<std::pair<std::string, std::vector<std::string>>>;

DemoJobs demoJobs(const DemoConfig& c, const std::string& scenario, int tasks) {
  auto sc = c.scenarios.find(scenario);
  const int per = sc == c.scenarios.end() ? 1 : sc->second.tasksPerJob;
  DemoJobs jobs;
  for (int i = 1; i <= tasks; ++i) {
    if ((i - 1) % per == 0)
      jobs.emplace_back("demo-job-" + std::to_string(jobs.size() + 1), std::vector<std::string>{});
    jobs.back().second.push_back("demo-task-" + std::to_string(i));
  }
  return jobs;
}

// The KusciaJob the demo submits: the template named `name`, playing `fault`, with a task of the
// task template for each of `tasks`, each depending on the one before.
json jobObject(const DemoConfig& c, const std::string& name, const std::vector<std::string>& tasks,
               const std::string& fault) {
  json job = json::parse(fill(c.objectTemplate, {{"name", name}, {"fault", fault}}));
  json list = json::array();
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    json task = json::parse(fill(c.taskTemplate, {{"name", tasks[i]}}));
    task["alias"] = tasks[i];
    task["taskID"] = tasks[i];
    task["dependencies"] = i == 0 ? json::array() : json::array({tasks[i - 1]});
    list.push_back(std::move(task));
  }
  job["spec"]["tasks"] = std::move(list);
  return job;
}

// What the `index`th job (from 0) plays with the scenario: its faults in turn, ${party} the
// last party; "" nothing.
std::string faultOf(const DemoConfig& c, const std::string& scenario, std::size_t index) {
  auto it = c.scenarios.find(scenario);
  if (it == c.scenarios.end()) return "";
  const auto& faults = it->second.faults;
  return fill(faults[index % faults.size()], {{"party", c.domains.back()}});
}

// The address with its port moved by `delta` (the second host of --p2p), unless it is 0.
std::string shiftPort(const std::string& listen, int delta) {
  std::string host;
  unsigned short port = 0;
  if (!parseListenAddress(listen, host, port) || port == 0) return listen;
  return host + ":" + std::to_string(port + delta);
}

// A demo task waiting ten phases is stuck, and never sooner than 8 s: the times an entry's
// phases start from may be written up to 5 s after the fact (deferred writes).
int stuckSeconds(const DemoOptions& o) {
  return std::max(8, 10 * o.phaseMillis / 1000);
}

// Loads and starts the hosts: one for both domains, or one per domain with its own cluster.
Result<std::vector<DemoHost>> startHosts(const DemoOptions& o, const DemoConfig& c,
                                         const fs::path& work, LogManager& logs,
                                         const Clock& clock) {
  auto search = pluginSearch(o.pluginDirs, true);
  if (!search) return makeError(search.error());
  std::vector<std::vector<std::string>> hostDomains;
  if (o.p2p)
    for (const auto& d : c.domains)
      hostDomains.push_back({d});
  else
    hostDomains.push_back(c.domains);
  std::vector<DemoHost> hosts;
  for (std::size_t h = 0; h < hostDomains.size(); ++h) {
    DemoHost host{o.p2p ? hostDomains[h][0] : "cluster", "", nullptr};
    std::string domains;
    for (const auto& d : hostDomains[h]) {
      // slow-party: the last party's images take eight phases to pull.
      std::string extra =
          o.scenario == "slow-party" && d == c.domains.back()
              ? fill(c.slowParty, {{"slowPullMillis", std::to_string(8 * o.phaseMillis)}})
              : "";
      std::map<std::string, std::string> values = {
          {"domain", d},
          {"phaseMillis", std::to_string(o.phaseMillis)},
          {"reserveMillis", std::to_string(o.phaseMillis)},
          {"stuckSeconds", std::to_string(stuckSeconds(o))},
          {"cleanupMillis", std::to_string(2 * o.phaseMillis)},
          {"simExtra", extra},
          {"historyDb", (work / "history.db").string()},
          {"traces", o.otlpEndpoint.empty() ? std::string()
                                            : fill(c.traces, {{"endpoint", o.otlpEndpoint}})}};
      // A scenario's lastParty: its values for the last party (${slowMillis}: eight phases).
      if (auto sc = c.scenarios.find(o.scenario); sc != c.scenarios.end() && d == c.domains.back())
        for (const auto& [var, value] : sc->second.lastParty)
          values[var] = fill(value, {{"slowMillis", std::to_string(8 * o.phaseMillis)}});
      domains += fill(c.domain, values);
    }
    std::string text = fill(c.host, {{"mode", o.p2p ? "p2p" : "centralized"},
                                     {"adminListen", shiftPort(o.adminListen, int(h))},
                                     {"workDir", work.string()},
                                     {"cluster", host.cluster},
                                     {"domains", domains}});
    auto loaded = parseHostConfig(text, "<demo " + host.cluster + " host>", *search);
    if (!loaded.config) {
      std::string msg;
      for (const auto& e : loaded.errors)
        msg += (msg.empty() ? "" : "\n  ") + e.str();
      return makeError(msg + "\n  (build the plugins, or give --plugin-dir)");
    }
    host.kubeconfig = loaded.config->cluster.embeddedKubeconfigOut;
    host.daemon = std::make_unique<Daemon>(*loaded.config, DaemonOptions{}, logs, clock);
    if (auto r = host.daemon->start(); !r) return makeError(r.error());
    hosts.push_back(std::move(host));
  }
  return hosts;
}

// The clusters' namespaces, then the jobs (in every cluster in p2p, as interconnection does).
Result<std::vector<std::unique_ptr<ClusterReader>>> submitJobs(const DemoConfig& config,
                                                               std::vector<DemoHost>& hosts,
                                                               const DemoJobs& jobs,
                                                               const std::string& scenario) {
  std::vector<std::unique_ptr<ClusterReader>> clusters;
  auto post = [](ClusterReader& c, const std::string& path, const json& body,
                 const std::string& what) -> Result<void> {
    auto code = c.send("POST", path, body.dump());
    if (!code || (*code != 201 && *code != 409))
      return makeError(what +
                       " failed: " + (code ? "HTTP " + std::to_string(*code) : code.error()));
    return {};
  };
  for (auto& h : hosts) {
    kube::ClusterAccess a;
    a.server = h.daemon->embeddedApiServer()->url();
    kube::parseServerUrl(a.server, a.scheme, a.host, a.port);
    auto reader = ClusterReader::open(a);
    if (!reader) return makeError(reader.error());
    for (const auto& ns : config.namespaces)
      if (auto r = post(**reader, "/api/v1/namespaces", json{{"metadata", {{"name", ns}}}},
                        "creating namespace " + ns);
          !r)
        return makeError(r.error());
    clusters.push_back(std::move(reader.value()));
  }
  for (std::size_t i = 0; i < jobs.size(); ++i)
    for (auto& c : clusters) {
      const json object =
          jobObject(config, jobs[i].first, jobs[i].second, faultOf(config, scenario, i));
      if (auto r = post(*c, config.collection, object, "submitting " + jobs[i].first); !r)
        return makeError(r.error());
    }
  return clusters;
}

// The config's `show` command, from the plugin that declares it.
Result<PluginCommand> findShowCommand(const DemoOptions& o, const DemoConfig& c) {
  auto dirs = commandPluginDirs(o.pluginDirs);
  if (!dirs) return makeError(dirs.error());
  if (auto command = findPluginCommand(c.showCommand, *dirs)) return std::move(*command);
  return makeError("no plugin declares the command " + c.showCommand +
                   " (show.command; build the plugins, or give --plugin-dir)");
}

// Runs the `show` command over the jobs in every cluster: its exit status.
int show(const DemoOptions& o, const DemoConfig& c, const PluginCommand& command,
         const std::vector<DemoHost>& hosts, const DemoJobs& jobs, std::ostream& out,
         std::ostream& err) {
  std::vector<std::string> args = {c.showCommand};
  for (const auto& a : c.showArgs)
    args.push_back(fill(a, {{"timeoutSeconds", std::to_string(o.timeoutSeconds)},
                            {"outputDir", o.outputDir},
                            {"stuckSeconds", std::to_string(stuckSeconds(o))}}));
  for (const auto& [job, tasks] : jobs)
    args.insert(args.end(), {"--job", job});
  for (const auto& h : hosts)
    args.insert(args.end(), {"--kubeconfig", h.kubeconfig});
  bool tty = ::isatty(STDOUT_FILENO) != 0 && &out == &std::cout;
  return runPluginCommand(command, args, out, err, tty);
}

// What to look at next: once, then for each host while the demo serves.
void printHints(const DemoOptions& o, const DemoConfig& c, const std::vector<DemoHost>& hosts,
                const std::string& first, const fs::path& work, std::ostream& out) {
  out << fill(c.after, {{"historyDb", (work / "history.db").string()}});
  for (const auto& h : hosts) {
    if (o.exitWhenDone) break; // everything is in memory: gone once it exits
    auto ep = h.daemon->adminEndpoint();
    std::string admin = "http://" + ep->address().to_string() + ":" + std::to_string(ep->port());
    out << fill(c.whileServing, {{"who", o.p2p ? h.cluster + "'s cluster" : "the cluster"},
                                 {"kubeconfig", h.kubeconfig},
                                 {"admin", admin},
                                 {"first", first}});
  }
}

// ", slow-party: bob's image pulls are slow" and the like: what the scenario plays.
std::string scenarioText(const DemoOptions& o, const DemoConfig& c) {
  if (o.scenario == "slow-party")
    return ", slow-party: " + c.domains.back() + "'s image pulls are slow";
  auto it = c.scenarios.find(o.scenario);
  if (it == c.scenarios.end()) return "";
  return ", " + o.scenario + ": " + fill(it->second.says, {{"party", c.domains.back()}});
}

// Until SIGINT or SIGTERM. Before the line that tells a caller it may press Ctrl-C: a signal
// that arrives before run_one() is queued instead of killing the process.
void serveUntilSignal(std::ostream& out) {
  boost::asio::io_context io;
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  out << "serving until Ctrl-C\n" << std::flush;
  signals.async_wait([](const boost::system::error_code&, int) {});
  io.run_one();
}

} // namespace

int runDemo(const DemoOptions& o, std::ostream& out, std::ostream& err) {
  fs::path work = o.workDir.empty() ? fs::temp_directory_path() /
                                          ("kuscia-host-demo-" + std::to_string(::getuid()))
                                    : fs::path(o.workDir);
  std::error_code ec;
  fs::create_directories(work, ec);
  if (ec) {
    err << "kuscia-host: demo: cannot create " << work.string() << ": " << ec.message() << "\n";
    return 1;
  }
  // A fresh history per run (the demo's tasks have the same names every time).
  for (const char* f : {"history.db", "history.db-wal", "history.db-shm"})
    fs::remove(work / f, ec);
  std::ofstream logFile(work / "demo.log", std::ios::trunc);
  LogManager logs(LogFormat::kText, spdlog::level::info, logFile);
  SystemClock clock;
  auto config = loadDemoConfig(o);
  if (!config) {
    err << "kuscia-host: demo: " << config.error() << "\n";
    return 1;
  }
  if (o.scenario != "default" && o.scenario != "slow-party" &&
      config->scenarios.count(o.scenario) == 0) {
    std::string known = "default, slow-party";
    for (const auto& [name, sc] : config->scenarios)
      known += ", " + name;
    err << "kuscia-host: demo: --scenario " << o.scenario << ": no such scenario (" << known
        << ")\n";
    return 2;
  }
  auto showCommand = findShowCommand(o, *config);
  if (!showCommand) {
    err << "kuscia-host: demo: " << showCommand.error() << "\n";
    return 1;
  }
  auto hosts = startHosts(o, *config, work, logs, clock);
  if (!hosts) {
    err << "kuscia-host: demo: " << hosts.error() << "\n  (log: " << (work / "demo.log").string()
        << ")\n";
    return 1;
  }
  const DemoJobs jobs = demoJobs(*config, o.scenario, o.tasks);
  auto clusters = submitJobs(*config, *hosts, jobs, o.scenario);
  if (!clusters) {
    err << "kuscia-host: demo: " << clusters.error() << "\n";
    return 1;
  }
  std::string parties;
  for (std::size_t i = 0; i < config->domains.size(); ++i)
    parties += (i == 0                            ? ""
                : i + 1 == config->domains.size() ? " and "
                                                  : ", ") +
               config->domains[i];
  out << "kuscia-host " << kVersion << " demo (" << (o.p2p ? "p2p" : "centralized")
      << scenarioText(o, *config) << "): " << o.tasks << " two-party task(s) in " << jobs.size()
      << " KusciaJob(s) submitted to domains " << parties << "\n";
  if (!o.otlpEndpoint.empty())
    out << "traces of every task's startup go to " << o.otlpEndpoint
        << " (OTLP/HTTP, protobuf; one trace per task, every party's spans in it)\n";
  out.flush();
  int shown = show(o, *config, *showCommand, *hosts, jobs, out, err);
  printHints(o, *config, *hosts, jobs.front().second.front(), work, out);
  out << "log: " << (work / "demo.log").string() << "\n";
  if (!o.exitWhenDone) serveUntilSignal(out);
  for (auto& h : *hosts)
    h.daemon->shutdown();
  return shown;
}

} // namespace kuscia_host
