// probe: the test plugin the host tests drive. Configurable misbehaviour, lifecycle trace to a
// file (and "unload" from the library's destructor), and a check that two callbacks of one
// instance never overlap, reported through metrics.
#include <kuscia_host/config_reader.hpp>
#include <kuscia_host/plugin.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <string>

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
                                            {"busyMicros", "integer", "0", ""}});
    traceFile_ = r.string("traceFile", "");
    timers_ = r.integer("timers", 0, 0, 64);
    periodMs_ = r.integer("periodMs", 1, 0, 60000);
    throwOnTimer_ = r.boolean("throwOnTimer", false);
    failStart_ = r.boolean("failStart", false);
    notReady_ = r.boolean("notReady", false);
    busyMicros_ = r.integer("busyMicros", 0, 0, 100000);
    if (r.boolean("throwInCreate", false))
      throw std::runtime_error("probe refuses to start: bad widget");
    fired_ = host.counter("probe_timer_fired_total", "timer callbacks run");
    overlaps_ = host.counter("probe_overlaps_total", "callbacks that overlapped another");
    if (!traceFile_.empty()) {
      std::lock_guard lock(gTraceMu);
      std::snprintf(gTraceFile, sizeof gTraceFile, "%s", traceFile_.c_str());
    }
    trace(traceFile_, "create " + domain_);
  }
  ~Probe() override { trace(traceFile_, "destroy " + domain_); }

  void onStart() override {
    Guard g(*this);
    trace(traceFile_, "start " + domain_);
    if (failStart_) throw std::runtime_error("probe start failure requested");
    if (notReady_) host().setReady(false, "waiting for nothing");
    for (int64_t i = 0; i < timers_; ++i)
      host().startTimer(0, static_cast<uint64_t>(periodMs_), static_cast<uint64_t>(i));
  }
  void onStop() override {
    Guard g(*this);
    trace(traceFile_, "stop " + domain_);
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

private:
  struct Guard {
    explicit Guard(Probe& p) : p_(p) {
      if (p_.inFlight_.fetch_add(1) != 0) p_.overlaps_.add(1);
    }
    ~Guard() { p_.inFlight_.fetch_sub(1); }
    Probe& p_;
  };

  std::string domain_;
  std::string traceFile_;
  int64_t timers_ = 0, periodMs_ = 1, busyMicros_ = 0;
  bool throwOnTimer_ = false, failStart_ = false, notReady_ = false;
  kuscia_host::sdk::Metric fired_, overlaps_;
  std::atomic<int> inFlight_{0};
};

} // namespace

KH_PLUGIN(Probe, "probe", "1.0.0", "test plugin for the host's own tests")
