// The runtime and plugin instances, driven through the real daemon and real plugin libraries.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "admin/admin_server.h"
#include "app/daemon.h"
#include "test_support.h"

namespace kuscia_host {
namespace {

std::string probePath() {
  return KH_TEST_PLUGIN_DIR "/probe.so";
}

// The value of one sample line ("name{labels}") in the registry's text output; nullopt when the
// series is absent, so a check of a value fails if the series vanishes.
std::optional<double> sample(const MetricsRegistry& m, const std::string& series) {
  std::string text = m.render();
  auto pos = text.find("\n" + series + " ");
  if (pos == std::string::npos) return std::nullopt;
  return std::stod(text.substr(pos + series.size() + 2));
}

// For thresholds: an absent series is below any.
double sampleOr(const MetricsRegistry& m, const std::string& series) {
  return sample(m, series).value_or(-1);
}

std::string probeSeries(const std::string& name, const std::string& domain = "alice") {
  return name + R"({plugin="probe",domain=")" + domain + R"("})";
}

std::string hostSeries(const std::string& name, const std::string& callback,
                       const std::string& domain = "alice") {
  return name + R"({plugin="probe",domain=")" + domain + R"(",callback=")" + callback + R"("})";
}

PluginEntry probe(const nlohmann::json& config, bool required = true) {
  PluginEntry e;
  e.name = "probe";
  e.path = probePath();
  e.required = required;
  e.configJson = config.dump();
  return e;
}

HostConfig configWith(const std::vector<std::pair<std::string, PluginEntry>>& entries,
                      int threads = 2) {
  HostConfig c;
  c.adminListen = "127.0.0.1:0";
  c.workerThreads = threads;
  for (const auto& named : entries) {
    const std::string& domain = named.first;
    const PluginEntry& entry = named.second;
    auto it =
        std::find_if(c.domains.begin(), c.domains.end(), [&](auto& d) { return d.id == domain; });
    if (it == c.domains.end()) {
      c.domains.push_back({domain, {}});
      it = c.domains.end() - 1;
    }
    it->plugins.push_back(entry);
  }
  return c;
}

class InstanceTest : public ::testing::Test {
protected:
  std::unique_ptr<Daemon> make(HostConfig config) {
    return std::make_unique<Daemon>(std::move(config), DaemonOptions{}, logs_, clock_);
  }
  std::string logText() {
    logs_.logger("flush")->flush();
    return logOut_.str();
  }

  std::ostringstream logOut_;
  LogManager logs_{LogFormat::kText, spdlog::level::debug, logOut_};
  SystemClock clock_;
};

TEST_F(InstanceTest, TimersFireAndPluginMetricsCarryPluginAndDomain) {
  auto d = make(configWith({{"alice", probe({{"timers", 1}, {"periodMs", 1}})}}));
  ASSERT_TRUE(d->start().ok());
  EXPECT_TRUE(test::eventually(
      [&] { return sampleOr(d->metrics(), probeSeries("probe_timer_fired_total")) >= 5; }));
  EXPECT_GE(sampleOr(d->metrics(), hostSeries("kuscia_host_plugin_callbacks_total", "on_timer")),
            5);
  EXPECT_EQ(sample(d->metrics(), hostSeries("kuscia_host_plugin_callbacks_total", "on_start")), 1);
  d->shutdown();
}

TEST_F(InstanceTest, TwoCallbacksOfOneInstanceNeverOverlap) {
  // Eight periodic timers on four worker threads, each callback busy for 100 us: without the
  // serial executor, callbacks of the instance would overlap within milliseconds.
  auto d = make(configWith({{"alice", probe({{"timers", 8}, {"periodMs", 1}, {"busyMicros", 100}})},
                            {"bob", probe({{"timers", 8}, {"periodMs", 1}, {"busyMicros", 100}})}},
                           4));
  ASSERT_TRUE(d->start().ok());
  EXPECT_TRUE(test::eventually(
      [&] {
        return sampleOr(d->metrics(), probeSeries("probe_timer_fired_total")) >= 2000 &&
               sampleOr(d->metrics(), probeSeries("probe_timer_fired_total", "bob")) >= 2000;
      },
      30));
  d->shutdown();
  EXPECT_EQ(sample(d->metrics(), probeSeries("probe_overlaps_total")), 0);
  EXPECT_EQ(sample(d->metrics(), probeSeries("probe_overlaps_total", "bob")), 0);
}

// Prometheus client libraries export an unlabelled counter at 0 from registration; so does the
// host, for the plugin's series (plugin and domain are the host's labels).
TEST_F(InstanceTest, UnlabelledPluginCounterIsExportedAtZeroBeforeItsFirstIncrement) {
  auto d = make(configWith({{"alice", probe({{"timers", 0}})}}));
  ASSERT_TRUE(d->start().ok());
  EXPECT_EQ(sample(d->metrics(), probeSeries("probe_timer_fired_total")), 0);
  EXPECT_EQ(sample(d->metrics(), probeSeries("probe_overlaps_total")), 0);
  EXPECT_EQ(sample(d->metrics(), "kuscia_host_kube_rate_limiter_wait_seconds_total"),
            std::nullopt); // no cluster: the kube families are not registered at all
  d->shutdown();
}

TEST_F(InstanceTest, CallbackThatThrowsIsCountedAndTheHostKeepsRunning) {
  auto d = make(
      configWith({{"alice", probe({{"timers", 1}, {"periodMs", 1}, {"throwOnTimer", true}})}}));
  ASSERT_TRUE(d->start().ok());
  EXPECT_TRUE(test::eventually([&] {
    return sampleOr(d->metrics(),
                    hostSeries("kuscia_host_plugin_callback_errors_total", "on_timer")) >= 10;
  }));
  double fired = sampleOr(d->metrics(), probeSeries("probe_timer_fired_total"));
  EXPECT_TRUE(test::eventually(
      [&] { return sampleOr(d->metrics(), probeSeries("probe_timer_fired_total")) > fired + 5; }));
  EXPECT_EQ(d->instances()[0]->state(), InstanceState::kRunning);
  d->shutdown();
  EXPECT_NE(logText().find("onTimer failed: probe timer failure requested"), std::string::npos);
}

TEST_F(InstanceTest, CreateThatThrowsFailsWithThePluginsReason) {
  auto d = make(configWith({{"alice", probe({{"throwInCreate", true}})}}));
  auto r = d->start();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("plugin probe (" + probePath() + ") for domain alice"),
            std::string::npos)
      << r.error();
  EXPECT_NE(r.error().find("bad widget"), std::string::npos) << r.error();
}

TEST_F(InstanceTest, BadPluginConfigIsReportedWithTheKey) {
  auto d = make(configWith({{"alice", probe({{"timers", "many"}})}}));
  auto r = d->start();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("config key 'timers': expected an integer"), std::string::npos)
      << r.error();
}

TEST_F(InstanceTest, StartFailureOfRequiredInstanceStopsTheHost) {
  auto d = make(configWith({{"alice", probe({{"failStart", true}})}}));
  auto r = d->start();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("start failed: probe start failure requested"), std::string::npos)
      << r.error();
}

TEST_F(InstanceTest, OptionalInstanceFailureDisablesOnlyThatInstance) {
  auto d = make(configWith({{"alice", probe({})},
                            {"bob", probe({{"failStart", true}}, false)},
                            {"carol", probe({{"throwInCreate", true}}, false)}}));
  ASSERT_TRUE(d->start().ok());
  EXPECT_EQ(d->instances()[0]->state(), InstanceState::kRunning);
  EXPECT_EQ(d->instances()[1]->state(), InstanceState::kDisabled);
  EXPECT_EQ(d->instances()[2]->state(), InstanceState::kDisabled);
  HttpRequest req;
  req.query["verbose"] = "";
  auto res = readyzResponse(d->health(), req);
  EXPECT_EQ(res.status, 200) << res.body;
  EXPECT_NE(res.body.find("[+]plugin:probe/alice ok"), std::string::npos) << res.body;
  EXPECT_NE(res.body.find("[!]plugin:probe/bob disabled (required: false)"), std::string::npos)
      << res.body;
  EXPECT_NE(res.body.find("probe start failure requested"), std::string::npos) << res.body;
  EXPECT_NE(res.body.find("bad widget"), std::string::npos) << res.body;
}

TEST_F(InstanceTest, UnloadableOptionalPluginIsDisabledAndShown) {
  PluginEntry bad = probe({}, false);
  bad.name = "bad";
  bad.path = KH_TEST_PLUGIN_DIR "/bad_abi2.so";
  auto d = make(configWith({{"alice", probe({})}, {"alice", bad}}));
  ASSERT_TRUE(d->start().ok());
  HttpRequest req;
  req.query["verbose"] = "";
  auto res = readyzResponse(d->health(), req);
  EXPECT_EQ(res.status, 200);
  EXPECT_NE(
      res.body.find("[!]plugin:bad/alice disabled (required: false): plugin " KH_TEST_PLUGIN_DIR
                    "/bad_abi2.so: built for ABI 2.x"),
      std::string::npos)
      << res.body;
}

TEST_F(InstanceTest, PluginThatIsNotReadyFailsReadyz) {
  auto d = make(configWith({{"alice", probe({{"notReady", true}})}}));
  ASSERT_TRUE(d->start().ok());
  auto res = readyzResponse(d->health(), HttpRequest{});
  EXPECT_EQ(res.status, 503);
  EXPECT_NE(res.body.find("[-]plugin:probe/alice not ready: waiting for nothing"),
            std::string::npos)
      << res.body;
}

// The embedded API server's readiness check follows the server: it fails once it stops serving.
TEST_F(InstanceTest, EmbeddedApiServerReadinessFollowsTheServer) {
  HostConfig c = configWith({{"alice", probe({})}});
  c.cluster.source = ClusterConfig::Source::kEmbedded;
  auto d = make(std::move(c));
  ASSERT_TRUE(d->start().ok());
  auto verbose = [&] {
    HttpRequest r;
    r.query["verbose"] = "";
    return readyzResponse(d->health(), r).body;
  };
  EXPECT_NE(verbose().find("[+]apiserver:embedded ok"), std::string::npos) << verbose();
  d->embeddedApiServer()->stop();
  EXPECT_NE(verbose().find("[-]apiserver:embedded not serving"), std::string::npos) << verbose();
  EXPECT_EQ(readyzResponse(d->health(), HttpRequest{}).status, 503);
}

TEST_F(InstanceTest, ShutdownStopsAllThenDestroysAllThenUnloads) {
  test::TempDir dir;
  auto traceFile = dir.file("trace");
  auto d = make(configWith({{"alice", probe({{"traceFile", traceFile}, {"timers", 2}})},
                            {"bob", probe({{"traceFile", traceFile}, {"timers", 2}})}}));
  ASSERT_TRUE(d->start().ok());
  d->shutdown();
  EXPECT_EQ(test::readFile(traceFile),
            "create alice\ncreate bob\nstart alice\nstart bob\nstop bob\nstop alice\n"
            "destroy bob\ndestroy alice\nunload\n");
  EXPECT_EQ(sample(d->metrics(), "kuscia_host_plugins_loaded"), 0);
}

TEST_F(InstanceTest, TheBundledExamplePluginBeats) {
  PluginEntry heartbeat;
  heartbeat.name = "heartbeat";
  heartbeat.path = KH_PLUGIN_DIR "/heartbeat.so";
  heartbeat.configJson = R"({"intervalMillis": 10})";
  auto d = make(configWith({{"alice", heartbeat}}));
  ASSERT_TRUE(d->start().ok());
  EXPECT_TRUE(test::eventually([&] {
    return sample(d->metrics(), "heartbeat_beats_total{plugin=\"heartbeat\",domain=\"alice\"}") >=
           3;
  }));
  d->shutdown();
}

// admin.metricsListen: /metrics alone, over plain HTTP and without authentication (what Kuscia's
// metric exporter scrapes), beside an admin server that asks for a token.
TEST_F(InstanceTest, TheMetricsListenerServesMetricsAloneWithoutAuthentication) {
  test::TempDir dir;
  const std::string tokens = dir.file("tokens");
  test::writeFile(tokens, "s3cret reader\n");
  HostConfig c = configWith({{"alice", probe(nlohmann::json::object())}});
  c.adminAccess.auth = AdminAccess::Auth::kToken;
  c.adminAccess.tokenFile = tokens;
  c.metricsListen = "127.0.0.1:0";
  auto d = make(c);
  ASSERT_TRUE(d->start().ok()) << logText();
  ASSERT_TRUE(d->metricsEndpoint());
  const unsigned short metrics = d->metricsEndpoint()->port();
  EXPECT_NE(metrics, d->adminEndpoint()->port());
  auto r = test::httpGet(metrics, "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("kuscia_host_build_info"), std::string::npos);
  EXPECT_EQ(test::httpGet(metrics, "/readyz").status, 404);
  EXPECT_EQ(test::httpGet(metrics, "/api/v1/timelines").status, 404);
  EXPECT_EQ(test::httpGet(d->adminEndpoint()->port(), "/metrics").status, 401);
  EXPECT_NE(logText().find("metrics listening on 127.0.0.1:"), std::string::npos);
  d->shutdown();
}

TEST(InstanceClockTest, PluginsReadTheInjectedClock) {
  std::ostringstream out;
  LogManager logs(LogFormat::kText, spdlog::level::info, out);
  ManualClock clock(1700000000LL * 1000000000LL); // 2023-11-14T22:13:20Z
  PluginEntry probe;
  probe.name = "probe";
  probe.path = probePath();
  Daemon d(configWith({{"alice", probe}}), DaemonOptions{}, logs, clock);
  ASSERT_TRUE(d.start().ok());
  EXPECT_TRUE(test::eventually([&] {
    return sample(d.metrics(), "probe_started_wall_seconds{plugin=\"probe\",domain=\"alice\"}") ==
           1700000000;
  }));
  d.shutdown();
}

// A deferred answer (ABI 1.4) leaves the host's one worker thread free: while a request waits
// for its answer, the same instance serves the request that releases it, and the answer then
// comes from the plugin's own thread. A deferred answer the plugin drops is a 500.
TEST_F(InstanceTest, ADeferredAnswerDoesNotHoldTheHostsOnlyThread) {
  auto d = make(configWith({{"alice", probe({{"route", true}})}}, 1));
  ASSERT_TRUE(d->start().ok());
  const unsigned short port = d->adminEndpoint()->port();
  test::HttpResult parked;
  std::thread waiter([&] { parked = test::httpGet(port, "/api/v1/probe/park"); });
  // Once the probe holds the parked request, a release answers it.
  EXPECT_TRUE(test::eventually([&] {
    auto r = test::httpGet(port, "/api/v1/probe/release");
    return r.status == 200 && nlohmann::json::parse(r.body).value("released", 0) == 1;
  }));
  waiter.join();
  EXPECT_EQ(parked.status, 200);
  EXPECT_EQ(nlohmann::json::parse(parked.body), (nlohmann::json{{"parked", 0}}));
  auto dropped = test::httpGet(port, "/api/v1/probe/drop");
  EXPECT_EQ(dropped.status, 500);
  EXPECT_NE(dropped.body.find("the plugin did not answer"), std::string::npos) << dropped.body;
  d->shutdown();
}

} // namespace
} // namespace kuscia_host
