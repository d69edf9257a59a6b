// probe: the test plugin the host tests drive. Configurable misbehaviour, lifecycle trace to a
// file (and "unload" from the library's destructor), a check that two callbacks of one
// instance never overlap, reported through metrics, and an admin route that answers later
// (ABI 1.4 deferred answers).
#include <kuscia_host/command.hpp>
#include <kuscia_host/config_reader.hpp>
#include <kuscia_host/plugin.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

std::mutex gTraceMu;
// The last instance's trace file, for the library destructor. A plain array: it must outlive
// the C++ static destructors, whose order against destructor functions is unspecified.
char gTraceFile[4096];

void trace(const std::string& file, const std::string& line) {
  if (file.empty()) return;
  std::lock_guard lock(gTraceMu);
  std::ofstream(file, std::ios::app) << line << "\n";
}

__attribute__((destructor)) void onUnload() {
  std::lock_guard lock(gTraceMu);
  if (gTraceFile[0] != '\0') {
    if (FILE* f = std::fopen(gTraceFile, "a")) {
      std::fputs("unload\n", f);
      std::fclose(f);
    }
  }
}

class Probe final : public kuscia_host::sdk::Plugin {
public:
  Probe(kuscia_host::sdk::Host host, std::string_view domain, std::string_view json)
      : Plugin(host), domain_(domain) {
    kuscia_host::sdk::ConfigReader r(json, {{"traceFile", "string", "", ""},
                                            {"timers", "integer", "0", ""},
                                            {"periodMs", "integer", "1", ""},
                                            {"throwOnTimer", "boolean", "false", ""},
                                            {"failStart", "boolean", "false", ""},
                                            {"throwInCreate", "boolean", "false", ""},
                                            {"notReady", "boolean", "false", ""},
                                            {"busyMicros", "integer", "0", ""},
                                            {"subscribe", "string", "", ""},
                                            {"scope", "string", "domain", ""},
                                            {"fields", "string", "", ""},
                                            {"selector", "string", "", ""},
                                            {"wantRaw", "boolean", "false", ""},
                                            {"eventFile", "string", "", ""},
                                            {"patchOnSynced", "string", "", ""},
                                            {"route", "boolean", "false", ""}});
    traceFile_ = r.string("traceFile", "");
    timers_ = r.integer("timers", 0, 0, 64);
    periodMs_ = r.integer("periodMs", 1, 0, 60000);
    throwOnTimer_ = r.boolean("throwOnTimer", false);
    failStart_ = r.boolean("failStart", false);
    notReady_ = r.boolean("notReady", false);
    busyMicros_ = r.integer("busyMicros", 0, 0, 100000);
    if (r.boolean("throwInCreate", false))
      throw std::runtime_error("probe refuses to start: bad widget");
    eventFile_ = r.string("eventFile", "");
    patchOnSynced_ = r.string("patchOnSynced", "");
    if (std::string what = r.string("subscribe", ""); !what.empty()) {
      // "v1/pods" or "group/version/resource"; fields comma-separated JSON pointers.
      kuscia_host::sdk::Subscription sub;
      auto parts = split(what, '/');
      if (parts.size() == 2) {
        sub.version = parts[0];
        sub.resource = parts[1];
      } else if (parts.size() == 3) {
        sub.group = parts[0];
        sub.version = parts[1];
        sub.resource = parts[2];
      } else {
        throw std::runtime_error(
            "probe: subscribe must be version/resource or group/version/resource");
      }
      std::string scope = r.string("scope", "domain");
      sub.scope = scope == "all" ? KH_SCOPE_ALL : KH_SCOPE_DOMAIN;
      sub.labelSelector = r.string("selector", "");
      for (auto& f : split(r.string("fields", ""), ','))
        if (!f.empty()) sub.fields.push_back(f);
      sub.wantRaw = r.boolean("wantRaw", false);
      group_ = sub.group;
      version_ = sub.version;
      resource_ = sub.resource;
      subscription_ = host.subscribe(sub);
    }
    // GET /api/v1/probe/park waits (deferred) until a GET /api/v1/probe/release, which answers
    // every parked request from a thread of the probe's own; /api/v1/probe/drop defers and
    // drops the answer (the SDK answers 500).
    if (r.boolean("route", false)) host.registerRoute("/api/v1/probe/");
    fired_ = host.counter("probe_timer_fired_total", "timer callbacks run");
    overlaps_ = host.counter("probe_overlaps_total", "callbacks that overlapped another");
    startedAt_ = host.gauge("probe_started_wall_seconds", "the host's wall clock at onStart");
    if (!traceFile_.empty()) {
      std::lock_guard lock(gTraceMu);
      std::snprintf(gTraceFile, sizeof gTraceFile, "%s", traceFile_.c_str());
    }
    trace(traceFile_, "create " + domain_);
  }
  ~Probe() override {
    if (answerer_.joinable()) answerer_.join();
    trace(traceFile_, "destroy " + domain_);
  }

  void onStart() override {
    Guard g(*this);
    trace(traceFile_, "start " + domain_);
    const int64_t wholeSeconds = host().wallTimeNanos() / 1000000000;
    startedAt_.set(static_cast<double>(wholeSeconds));
    if (failStart_) throw std::runtime_error("probe start failure requested");
    if (notReady_) host().setReady(false, "waiting for nothing");
    for (int64_t i = 0; i < timers_; ++i)
      host().startTimer(0, static_cast<uint64_t>(periodMs_), static_cast<uint64_t>(i));
  }
  void onStop() override {
    Guard g(*this);
    trace(traceFile_, "stop " + domain_);
  }
  void onEvent(const kuscia_host::sdk::Event& e) override {
    Guard g(*this);
    static const char* kTypes[] = {"?", "ADDED", "MODIFIED", "DELETED", "SYNCED"};
    std::string line = std::string(R"({"type":")") + kTypes[e.type < 5 ? e.type : 0] +
                       R"(","key":")" + std::string(e.key) + R"(","rv":")" +
                       std::string(e.resourceVersion) + R"(","uid":")" + std::string(e.uid) +
                       R"(","fields":)" +
                       (e.fieldsJson.empty() ? "null" : std::string(e.fieldsJson)) +
                       ",\"raw\":" + (e.rawJson.empty() ? "null" : std::string(e.rawJson)) + "}";
    trace(eventFile_, line);
    if (e.type != KH_EVENT_SYNCED) return;
    // The cache as cache_list and cache_get see it, right after the initial list.
    std::string keys;
    host().cacheList(subscription_, "", [&](const kh_object_t& o) {
      bool found = host().cacheGet(subscription_, o.key, [](const kh_object_t&) {});
      keys += std::string(keys.empty() ? "" : ",") + "\"" + o.key + (found ? "" : "!") + "\"";
    });
    trace(eventFile_, "{\"cache\":[" + keys + "]}");
    if (!patchOnSynced_.empty()) {
      // "namespace/name/subresource|body|resourceVersion" on this subscription's resource.
      auto parts = split(patchOnSynced_, '|');
      auto target = split(parts.at(0), '/');
      kuscia_host::sdk::KubeRequest req;
      req.group = group_;
      req.version = version_;
      req.resource = resource_;
      req.namespaceName = target.at(0);
      req.name = target.at(1);
      req.subresource = target.size() > 2 ? target[2] : "";
      req.body = parts.at(1);
      req.resourceVersion = parts.size() > 2 ? parts[2] : "";
      req.userTag = 42;
      host().kubeRequest(req);
    }
  }
  void onKubeResult(const kuscia_host::sdk::KubeResult& r) override {
    Guard g(*this);
    trace(eventFile_, "{\"result\":" + std::to_string(r.httpCode) +
                          ",\"tag\":" + std::to_string(r.userTag) + R"(,"message":")" +
                          std::string(r.message) + "\"}");
  }
  void onTimer(uint64_t, uint64_t) override {
    Guard g(*this);
    fired_.add(1);
    if (busyMicros_ > 0) {
      auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(busyMicros_);
      while (std::chrono::steady_clock::now() < until) {
      }
    }
    if (throwOnTimer_) throw std::runtime_error("probe timer failure requested");
  }

  void onHttpRequest(const kuscia_host::sdk::HttpRequest& request,
                     kuscia_host::sdk::HttpResponse& response) override {
    Guard g(*this);
    if (request.path == "/api/v1/probe/park" || request.path == "/api/v1/probe/drop") {
      auto later = response.defer();
      if (!later) {
        response.status = 501;
        response.body = R"({"message":"the host cannot defer answers"})";
        return;
      }
      if (request.path == "/api/v1/probe/park") parked_.push_back(std::move(later));
      return; // a dropped DeferredResponse answers 500
    }
    if (request.path == "/api/v1/probe/release") {
      if (answerer_.joinable()) answerer_.join();
      const std::size_t n = parked_.size();
      answerer_ = std::thread([parked = std::move(parked_)]() mutable {
        for (std::size_t i = 0; i < parked.size(); ++i)
          parked[i].respond({200, "application/json", R"({"parked":)" + std::to_string(i) + "}"});
      });
      parked_.clear();
      response.status = 200;
      response.body = R"({"released":)" + std::to_string(n) + "}";
      return;
    }
    response.status = 404;
    response.body = R"({"message":"not found"})";
  }

private:
  struct Guard {
    explicit Guard(Probe& p) : p_(p) {
      if (p_.inFlight_.fetch_add(1) != 0) p_.overlaps_.add(1);
    }
    ~Guard() { p_.inFlight_.fetch_sub(1); }
    Probe& p_;
  };

  static std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::size_t i = 0;
    while (true) {
      std::size_t j = s.find(sep, i);
      out.push_back(s.substr(i, j == std::string::npos ? std::string::npos : j - i));
      if (j == std::string::npos) return out;
      i = j + 1;
    }
  }

  std::string domain_;
  std::string traceFile_;
  std::string eventFile_;
  std::string patchOnSynced_;
  std::string group_, version_, resource_;
  uint64_t subscription_ = 0;
  int64_t timers_ = 0, periodMs_ = 1, busyMicros_ = 0;
  bool throwOnTimer_ = false, failStart_ = false, notReady_ = false;
  kuscia_host::sdk::Metric fired_, overlaps_, startedAt_;
  std::atomic<int> inFlight_{0};
  std::vector<kuscia_host::sdk::DeferredResponse> parked_;
  std::thread answerer_;
};

} // namespace

KH_PLUGIN(Probe, "probe", "1.0.0", "test plugin for the host's own tests")

// A plugin command (ABI 1.5): prints its arguments; `probe-echo --read URL PATH` prints what an
// admin server answers (or the reason it could not, exit 1); `probe-echo --throw` throws.
static int runEcho(const kuscia_host::sdk::CommandEnv& env, const std::vector<std::string>& args) {
  if (args.size() == 4 && args[1] == "--read") {
    try {
      int32_t reader = env.openAdmin(args[2]);
      env.out(env.get(reader, args[3]) + "\n");
      return 0;
    } catch (const kuscia_host::sdk::HostError& e) {
      env.err(std::string("probe-echo: ") + e.what() + "\n");
      return 1;
    }
  }
  if (args.size() == 2 && args[1] == "--throw") throw std::runtime_error("asked to throw");
  std::string line;
  for (const auto& a : args)
    line += (line.empty() ? "" : " ") + a;
  env.out(line + (env.stdoutIsTty() ? " (tty)\n" : "\n"));
  return args.size() > 1 && args[1] == "--fail" ? 3 : 0;
}
KH_COMMANDS(KH_COMMAND("probe-echo", "Print the arguments (a test of plugin commands)", runEcho))
