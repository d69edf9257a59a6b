// One suite of SDK behaviour, run against the SDK's fake host and the real host: the conformance
// plugin exercises the host side of the ABI and reports what it saw; the reports must be equal
// (and say what the ABI documents), so a plugin tested on the fake host behaves the same in
// production. Also: a plugin built against the frozen ABI 1.0 header loads and runs in this
// host, and check-config reports a plugin's bad setting at its line, as run refuses it.
#include <kuscia_host/testing/fake_host.hpp>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "apiserver/server.h"
#include "app/daemon.h"
#include "conformance.h"
#include "test_support.h"

namespace kuscia_host {
namespace {

using nlohmann::json;

json readJson(const std::string& path) {
  return json::parse(test::readFile(path));
}

// The report of the conformance plugin in the fake host.
json fakeHostReport(const std::string& file) {
  testing::FakeHost host("alice");
  EXPECT_TRUE(host.create(sdk::pluginDescriptor<tests::Conformance>("conformance"),
                          json{{"reportFile", file}}.dump()))
      << host.error();
  EXPECT_TRUE(host.start()) << host.error();
  for (const auto& s : host.subscriptions()) {
    if (s.fields != std::vector<std::string>{"/metadata/labels"}) continue;
    host.putObject(s.id, {"alice/p-a", "u-a", "5", R"([{"app":"a"}])", {{"app", "a"}}});
    host.putObject(s.id, {"alice/p-b", "u-b", "6", R"([{"app":"b"}])", {{"app", "b"}}});
  }
  for (const auto& s : host.subscriptions())
    host.deliver(s.id, KH_EVENT_SYNCED, "", "", "", "");
  EXPECT_TRUE(host.ready());
  EXPECT_EQ(host.httpGet("/api/v1/conformance/x").status, 200);
  host.destroy();
  return readJson(file);
}

// The report of conformance.so in the daemon, against an API server holding the same pods.
json realHostReport(const std::string& file, const test::TempDir& dir) {
  std::ostringstream logOut;
  LogManager logs(LogFormat::kText, spdlog::level::warn, logOut);
  SystemClock clock;
  Runtime runtime(2);
  apiserver::ServerOptions so;
  so.faultInjection = true;
  apiserver::ApiServer server(runtime.io(), clock, logs.logger("apiserver"), so);
  auto ep = server.start();
  EXPECT_TRUE(ep.ok());
  runtime.start();
  auto call = [&](const std::string& method, const std::string& target, const json& body) {
    return test::httpRequest(ep->port(), method, target, body.dump(), "application/json").status;
  };
  EXPECT_EQ(call("POST", "/api/v1/namespaces", {{"metadata", {{"name", "alice"}}}}), 201);
  for (const char* app : {"a", "b"})
    EXPECT_EQ(call("POST", "/api/v1/namespaces/alice/pods",
                   {{"metadata", {{"name", std::string("p-") + app}, {"labels", {{"app", app}}}}},
                    {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}}),
              201);
  // The pending write keeps failing with 503 (retried with backoff) until the instance stops.
  server.faults().respond(
      {"/api/v1/namespaces/alice/pods/conformance-pending", 503, 1000, -1, "PATCH", false});
  std::string kubeconfig = dir.file("kubeconfig");
  EXPECT_TRUE(server.writeKubeconfig(kubeconfig).ok());

  HostConfig c;
  c.adminListen = "127.0.0.1:0";
  c.cluster.source = ClusterConfig::Source::kKubeconfig;
  c.cluster.kubeconfig = kubeconfig;
  PluginEntry e;
  e.name = "conformance";
  e.path = KH_TEST_PLUGIN_DIR "/conformance.so";
  e.configJson = json{{"reportFile", file}}.dump();
  c.domains.push_back({"alice", {e}});
  Daemon d(c, DaemonOptions{}, logs, clock);
  auto started = d.start();
  EXPECT_TRUE(started.ok()) << started.error();
  EXPECT_TRUE(test::eventually([&] { return d.instances()[0]->health().ok; }, 20))
      << d.instances()[0]->health().detail;
  auto route = test::httpGet(d.adminEndpoint()->port(), "/api/v1/conformance/x");
  EXPECT_EQ(route.status, 200) << route.body;
  EXPECT_EQ(json::parse(route.body, nullptr, false)["path"], "/api/v1/conformance/x");
  d.shutdown();
  server.stop();
  runtime.stop();
  return readJson(file);
}

TEST(ConformanceTest, TheFakeHostAndTheRealHostAnswerAPluginAlike) {
  test::TempDir dir;
  json fake = fakeHostReport(dir.file("fake.json"));
  json real = realHostReport(dir.file("real.json"), dir);
  EXPECT_EQ(fake, real) << "fake host:\n" << fake.dump(2) << "\nreal host:\n" << real.dump(2);
  // And both say what abi.h documents.
  json expected = {{"abi", "1.6"},
                   {"sub.plain", "ok"},
                   {"sub.labels", "ok"},
                   {"sub.no_version", KH_ERR_INVALID_ARGUMENT},
                   {"sub.bad_scope", KH_ERR_INVALID_ARGUMENT},
                   {"sub.namespace_missing", KH_ERR_INVALID_ARGUMENT},
                   {"sub.bad_selector", KH_ERR_INVALID_ARGUMENT},
                   {"sub.bad_pointer", KH_ERR_INVALID_ARGUMENT},
                   {"sub.bad_resource", KH_ERR_INVALID_ARGUMENT},
                   {"route.ok", "ok"},
                   {"route.relative", KH_ERR_INVALID_ARGUMENT},
                   {"route.reserved", KH_ERR_INVALID_ARGUMENT},
                   {"metric.plugin_label", KH_ERR_INVALID_ARGUMENT},
                   {"metric.reshaped", KH_ERR_INVALID_ARGUMENT},
                   {"library_state", "same/per type/1"},
                   {"sub.late", KH_ERR_FAILED_PRECONDITION},
                   {"route.late", KH_ERR_FAILED_PRECONDITION},
                   {"req.bad_verb", KH_ERR_INVALID_ARGUMENT},
                   {"req.bad_patch_type", KH_ERR_INVALID_ARGUMENT},
                   {"req.no_name", KH_ERR_INVALID_ARGUMENT},
                   {"req.bad_json", KH_ERR_INVALID_ARGUMENT},
                   {"req.merge_not_object", KH_ERR_INVALID_ARGUMENT},
                   {"req.json_patch_not_array", KH_ERR_INVALID_ARGUMENT},
                   {"req.bad_segment", KH_ERR_INVALID_ARGUMENT},
                   {"req.no_version", KH_ERR_INVALID_ARGUMENT},
                   {"req.create_bad_json", KH_ERR_INVALID_ARGUMENT},
                   {"timer.cancel_unknown", "not found"},
                   {"cache.get_unknown_key", "absent"},
                   {"cache.get_foreign_subscription", "absent"},
                   {"cache.list_selector_without_labels", KH_ERR_FAILED_PRECONDITION},
                   {"cache.list_bad_selector", KH_ERR_INVALID_ARGUMENT},
                   {"cache.list_all", KH_OK},
                   {"cache.list_selector", KH_OK},
                   {"cache.list_selector_key", "alice/p-a"},
                   {"cache.list_counts", "2/1"},
                   {"cache.get", "found"},
                   {"cache.release_unknown_key", KH_ERR_NOT_FOUND},
                   {"cache.release_foreign_subscription", KH_ERR_NOT_FOUND},
                   {"cache.release_stale", KH_ERR_STALE},
                   {"cache.release", KH_OK},
                   {"cache.get_fields", json::array({{{"app", "a"}}})},
                   {"req.pending", "ok"},
                   {"req.after_stop", KH_ERR_FAILED_PRECONDITION},
                   {"timer.after_stop", KH_ERR_FAILED_PRECONDITION},
                   {"req.pending_result", 0},
                   {"destroyed_after_results", true}};
  EXPECT_EQ(real, expected) << real.dump(2);
}

// A daemon running one test plugin (built against a frozen older header) for its domains (alice).
struct OldPluginHost {
  explicit OldPluginHost(const std::string& name, std::vector<std::string> domains = {"alice"})
      : logs(LogFormat::kText, spdlog::level::warn, logOut),
        daemon(config(name, domains), DaemonOptions{}, logs, clock) {
    auto started = daemon.start();
    EXPECT_TRUE(started.ok()) << started.error();
  }
  static HostConfig config(const std::string& name, const std::vector<std::string>& domains) {
    HostConfig c;
    c.adminListen = "127.0.0.1:0";
    PluginEntry e;
    e.name = name;
    e.path = std::string(KH_TEST_PLUGIN_DIR) + "/" + name + ".so";
    for (const auto& d : domains)
      c.domains.push_back({d, {e}});
    return c;
  }
  std::ostringstream logOut;
  LogManager logs;
  SystemClock clock;
  Daemon daemon;
};

// `kuscia-host check-config` of a config enabling the test plugin `name` with `pluginConfig`.
test::RunResult checkConfig(const std::string& name, const std::string& pluginConfig) {
  test::TempDir dir;
  std::string config = dir.file(name + ".yaml");
  test::writeFile(config, "pluginDirs: [" KH_TEST_PLUGIN_DIR "]\ndomains:\n  - id: alice\n"
                          "    plugins:\n      - name: " +
                              name + "\n        config: " + pluginConfig + "\n");
  return test::runCommand({KH_BINARY, "check-config", "--config", config});
}

// A plugin compiled against the frozen 1.0 header runs in this host; the host reads none of
// the 1.1 fields its smaller descriptor lacks (non-NULL garbage sits where they would be).
TEST(AbiCompatibilityTest, APluginBuiltAgainstAbi10LoadsAndRunsInThisHost) {
  PluginLoader loader(LoaderOptions{::geteuid()});
  auto lib = loader.load(KH_TEST_PLUGIN_DIR "/abi10.so", "abi10");
  ASSERT_TRUE(lib.ok()) << lib.error();
  EXPECT_EQ(lib.value()->descriptor().abi_minor, 0);
  EXPECT_EQ(lib.value()->onHttpRequest(), nullptr);
  EXPECT_EQ(lib.value()->validateConfig(), nullptr);
  OldPluginHost host("abi10");
  EXPECT_TRUE(test::eventually([&] {
    return host.daemon.metrics().render().find(
               "abi10_ticks_total{plugin=\"abi10\",domain=\"alice\"} 3") != std::string::npos;
  }));
  host.daemon.shutdown();
  // And check-config, which calls validate_config where a plugin has one, leaves it alone.
  auto r = checkConfig("abi10", "{x: 1}");
  EXPECT_EQ(r.code, 0) << r.err;
}

// A plugin compiled against the frozen 1.1 header runs in this 1.3 host: its route is served,
// check-config asks it to validate its config, and it exports no 1.2 offline routes, which
// nothing but the commands that read a plugin's storage offline look for.
TEST(AbiCompatibilityTest, APluginBuiltAgainstAbi11LoadsAndServesItsRoute) {
  PluginLoader loader(LoaderOptions{::geteuid()});
  auto lib = loader.load(KH_TEST_PLUGIN_DIR "/abi11.so", "abi11");
  ASSERT_TRUE(lib.ok()) << lib.error();
  EXPECT_EQ(lib.value()->descriptor().abi_minor, 1);
  EXPECT_NE(lib.value()->onHttpRequest(), nullptr);
  EXPECT_EQ(lib.value()->offlineGet(), nullptr);
  OldPluginHost host("abi11");
  auto route = test::httpGet(host.daemon.adminEndpoint()->port(), "/api/v1/abi11/x");
  EXPECT_EQ(route.status, 200);
  EXPECT_EQ(json::parse(route.body), (json{{"abi", "1.1"}, {"path", "/api/v1/abi11/x"}}));
  host.daemon.shutdown();
  auto r = checkConfig("abi11", "{bad: 1}");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("abi11 refuses it"), std::string::npos) << r.err;
}

// A plugin compiled against the frozen 1.2 header runs in this 1.3 host: its route is served and
// its offline routes answer; it never releases a cached object, and nothing asks it to.
TEST(AbiCompatibilityTest, APluginBuiltAgainstAbi12ServesItsRouteAndItsOfflineRoutes) {
  PluginLoader loader(LoaderOptions{::geteuid()});
  auto lib = loader.load(KH_TEST_PLUGIN_DIR "/abi12.so", "abi12");
  ASSERT_TRUE(lib.ok()) << lib.error();
  EXPECT_EQ(lib.value()->descriptor().abi_minor, 2);
  auto offline = lib.value()->offlineGet();
  ASSERT_NE(offline, nullptr);
  std::string answer;
  char err[256] = {0};
  EXPECT_EQ(offline(
                "{}", 2, "/api/v1/abi12/t", "a=1",
                [](void* user, int32_t status, const char*, const char* body, size_t len) {
                  *static_cast<std::string*>(user) =
                      std::to_string(status) + " " + std::string(body, len);
                },
                &answer, err, sizeof err),
            KH_OK);
  EXPECT_EQ(answer, R"(200 {"abi": "1.2", "offline": "/api/v1/abi12/t?a=1"})");
  OldPluginHost host("abi12");
  auto route = test::httpGet(host.daemon.adminEndpoint()->port(), "/api/v1/abi12/x");
  EXPECT_EQ(route.status, 200);
  EXPECT_EQ(json::parse(route.body), (json{{"abi", "1.2"}, {"path", "/api/v1/abi12/x"}}));
  host.daemon.shutdown();
}

// A plugin compiled against the frozen 1.3 header answers its route before returning, as
// every plugin did before deferred answers (1.4), and finds the 1.3 host functions.
TEST(AbiCompatibilityTest, APluginBuiltAgainstAbi13ServesItsRoute) {
  OldPluginHost host("abi13");
  auto route = test::httpGet(host.daemon.adminEndpoint()->port(), "/api/v1/abi13/x");
  EXPECT_EQ(route.status, 200);
  EXPECT_EQ(json::parse(route.body),
            (json{{"abi", "1.3"}, {"path", "/api/v1/abi13/x"}, {"release", true}}));
  host.daemon.shutdown();
}

// A plugin compiled against the frozen 1.4 header defers its answer and gives it through the
// handle; it shares no library state and declares no command (1.5), and runs all the same.
TEST(AbiCompatibilityTest, APluginBuiltAgainstAbi14ServesItsDeferredRoute) {
  OldPluginHost host("abi14");
  auto route = test::httpGet(host.daemon.adminEndpoint()->port(), "/api/v1/abi14/x");
  EXPECT_EQ(route.status, 200);
  EXPECT_EQ(json::parse(route.body),
            (json{{"abi", "1.4"}, {"path", "/api/v1/abi14/x"}, {"deferred", true}}));
  host.daemon.shutdown();
}

// A plugin compiled against the frozen 1.5 header shares its library state between alice's and
// bob's instances and records a histogram, which Prometheus then scrapes without exemplars.
TEST(AbiCompatibilityTest, APluginBuiltAgainstAbi15SharesItsStateAndObserves) {
  OldPluginHost host("abi15", {"alice", "bob"});
  auto route = test::httpGet(host.daemon.adminEndpoint()->port(), "/api/v1/abi15/x");
  EXPECT_EQ(route.status, 200);
  EXPECT_EQ(json::parse(route.body),
            (json{{"abi", "1.5"}, {"path", "/api/v1/abi15/x"}, {"instances", 2}}));
  std::string om = host.daemon.metrics().render(MetricsFormat::kOpenMetrics);
  EXPECT_NE(om.find(R"(abi15_wait_seconds_bucket{plugin="abi15",domain="bob",le="2"} 1)"
                    "\n"),
            std::string::npos)
      << om;
  host.daemon.shutdown();
}

// A plugin needing a newer minor than the host's is refused, naming both versions.
TEST(AbiCompatibilityTest, APluginNeedingANewerMinorIsRefusedNamingBothVersions) {
  PluginLoader loader(LoaderOptions{::geteuid()});
  auto lib = loader.load(KH_TEST_PLUGIN_DIR "/bad_newer_minor.so");
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.error().find("needs ABI 1.7, newer than this host's ABI 1.6"), std::string::npos)
      << lib.error();
}

// check-config asks each (1.1) plugin to validate its config and reports a bad key at its line,
// as `run` refuses it.
TEST(CheckConfigTest, APluginsBadSettingIsReportedAtItsLineAsRunRefusesIt) {
  test::TempDir dir;
  std::string config = dir.file("host.yaml");
  test::writeFile(config, "pluginDirs: [" KH_PLUGIN_DIR "]\n"
                          "domains:\n"
                          "  - id: alice\n"
                          "    plugins:\n"
                          "      - name: task-timeline\n"
                          "        config:\n"
                          "          taskNamespace: cross-domain\n"
                          "          coalesceMillis: 999999\n");
  auto r = test::runCommand({KH_BINARY, "check-config", "--config", config});
  EXPECT_EQ(r.code, 2);
  const std::string message = "config key 'coalesceMillis': 999999 is outside [0, 60000]";
  EXPECT_NE(r.err.find(config +
                       ":8:11: domains[0].plugins[0].config.coalesceMillis: plugin "
                       "task-timeline: " +
                       message),
            std::string::npos)
      << r.err;
  auto run =
      test::runCommand({KH_BINARY, "run", "--config", config, "--admin-listen", "127.0.0.1:0"});
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find(message), std::string::npos) << run.err;
  // A misspelt key is reported at the key.
  test::writeFile(config, "pluginDirs: [" KH_PLUGIN_DIR "]\ndomains:\n  - id: alice\n"
                          "    plugins:\n      - name: task-timeline\n"
                          "        config: {coalesceMilis: 5}\n");
  r = test::runCommand({KH_BINARY, "check-config", "--config", config});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("domains[0].plugins[0].config.coalesceMilis: plugin task-timeline: "
                       "unknown config key 'coalesceMilis'"),
            std::string::npos)
      << r.err;
}

} // namespace
} // namespace kuscia_host
