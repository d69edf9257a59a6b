// The kuscia-host binary, run as a user would: exit codes, messages, and the daemon's endpoints.
#include <csignal>
#include <gtest/gtest.h>

#include <filesystem>

#include "test_support.h"

namespace kuscia_host {
namespace {

using test::runCommand;

std::vector<std::string> hostCmd(std::vector<std::string> args) {
  args.insert(args.begin(), KH_BINARY);
  return args;
}

TEST(CliTest, VersionAndHelp) {
  auto r = runCommand(hostCmd({"version"}));
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("kuscia-host "), std::string::npos);
  EXPECT_NE(r.out.find("plugin ABI 1.6"), std::string::npos);
  // The allocator the build links (KH_JEMALLOC), as the process finds it at run time.
  EXPECT_NE(r.out.find(std::string("\nallocator ") + KH_ALLOCATOR), std::string::npos) << r.out;
  // Found from the binary's own place (E2e.Install checks it after `cmake --install`).
  EXPECT_NE(r.out.find("plugin directory " +
                       std::filesystem::path(KH_BINARY).parent_path().parent_path().string() + "/"),
            std::string::npos)
      << r.out;
  for (const char* sub : {"run", "check-config", "version"}) {
    auto h = runCommand(hostCmd({sub, "--help"}));
    EXPECT_EQ(h.code, 0) << sub;
    EXPECT_NE(h.out.find("--help"), std::string::npos) << sub;
  }
  auto check = runCommand(hostCmd({"check-config", "--help"}));
  EXPECT_NE(check.out.find("domains[].plugins[].required"), std::string::npos) << check.out;
}

TEST(CliTest, UsageErrorsExit2) {
  EXPECT_EQ(runCommand(hostCmd({})).code, 2);
  EXPECT_EQ(runCommand(hostCmd({"frobnicate"})).code, 2);
  EXPECT_EQ(runCommand(hostCmd({"run"})).code, 2); // --config is required
}

// A command a plugin declares (ABI 1.5) runs from it, found in --plugin-dir (which the host
// takes out of its arguments); the help lists it; its exit status is the process's; what it
// reads through the host fails with the reason; an exception in it exits 1 with the message.
TEST(CliTest, APluginsCommandRunsFromItsPlugin) {
  auto r = runCommand(hostCmd({"probe-echo", "a", "--plugin-dir", KH_TEST_PLUGIN_DIR, "b"}));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "probe-echo a b\n");
  EXPECT_EQ(runCommand(hostCmd({"probe-echo", "--fail", "--plugin-dir=" KH_TEST_PLUGIN_DIR})).code,
            3);
  auto help = runCommand(hostCmd({"--help", "--plugin-dir", KH_TEST_PLUGIN_DIR}));
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("probe-echo  Print the arguments (a test of plugin commands) (probe)"),
            std::string::npos)
      << help.out;
  EXPECT_NE(help.out.find("timeline"), std::string::npos) << help.out; // beside the binary
  // Not found without its directory: an unknown command.
  EXPECT_EQ(runCommand(hostCmd({"probe-echo", "a"})).code, 2);
  EXPECT_EQ(runCommand(hostCmd({"probe-echo", "--plugin-dir", "relative"})).code, 2);
  auto read = runCommand(hostCmd(
      {"probe-echo", "--read", "http://127.0.0.1:1", "/x", "--plugin-dir", KH_TEST_PLUGIN_DIR}));
  EXPECT_EQ(read.code, 1);
  EXPECT_NE(read.err.find("probe-echo: "), std::string::npos) << read.err;
  EXPECT_NE(read.err.find("127.0.0.1:1"), std::string::npos) << read.err;
  auto bad = runCommand(
      hostCmd({"probe-echo", "--read", "ftp://x", "/x", "--plugin-dir", KH_TEST_PLUGIN_DIR}));
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("--server ftp://x: not an http(s) URL"), std::string::npos) << bad.err;
  auto thrown = runCommand(hostCmd({"probe-echo", "--throw", "--plugin-dir", KH_TEST_PLUGIN_DIR}));
  EXPECT_EQ(thrown.code, 1);
  EXPECT_NE(thrown.err.find("probe-echo: asked to throw"), std::string::npos) << thrown.err;
}

TEST(CliTest, ApiServerClientCaNeedsTlsAndAPemFile) {
  test::TempDir dir;
  std::string notPem = dir.file("ca.txt");
  test::writeFile(notPem, "not a certificate\n");
  auto r = runCommand(hostCmd({"apiserver", "--client-ca", notPem}));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--client-ca needs --tls"), std::string::npos) << r.err;
  r = runCommand(hostCmd({"apiserver", "--tls", "--client-ca", notPem}));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(notPem + ": not a readable PEM certificate file"), std::string::npos)
      << r.err;
  r = runCommand(hostCmd({"apiserver", "--tls", "--client-ca", dir.file("absent.pem")}));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("absent.pem"), std::string::npos) << r.err;
}

// What the demo runs comes from its config file: another file runs other parties, and a file
// it cannot use is named with the reason.
TEST(CliTest, DemoRunsWhatItsConfigFileSays) {
  test::TempDir dir;
  std::string text = test::readFile(KH_SOURCE_DIR "/config/demo/demo.yaml");
  for (auto [from, to] : {std::pair{"alice", "carol"}, std::pair{"bob", "dave"}})
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at))
      text.replace(at, std::string(from).size(), to);
  const std::string custom = dir.file("demo.yaml");
  test::writeFile(custom, text);
  auto r = runCommand(hostCmd({"demo", "--demo-config", custom, "--tasks", "1", "--phase-millis",
                               "100", "--exit-when-done", "--admin-listen", "127.0.0.1:0",
                               "--work-dir", dir.file("work"), "--plugin-dir", KH_PLUGIN_DIR}));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("submitted to domains carol and dave"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("carol/demo-task-1-0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dave/demo-task-1-0"), std::string::npos) << r.out;

  auto bad = [&](const std::string& name, const std::string& content) {
    const std::string path = dir.file(name);
    test::writeFile(path, content);
    return runCommand(hostCmd({"demo", "--demo-config", path, "--work-dir", dir.file("work"),
                               "--plugin-dir", KH_PLUGIN_DIR}));
  };
  auto missing = runCommand(hostCmd({"demo", "--demo-config", dir.file("absent.yaml")}));
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("--demo-config " + dir.file("absent.yaml") + ": cannot read it"),
            std::string::npos)
      << missing.err;
  auto yaml = bad("broken.yaml", "host: |\n  x\nparties: [a\n");
  EXPECT_EQ(yaml.code, 1);
  EXPECT_NE(yaml.err.find(dir.file("broken.yaml") + ":"), std::string::npos) << yaml.err;
  EXPECT_NE(yaml.err.find("invalid YAML"), std::string::npos) << yaml.err;
  auto scalar = bad("scalar.yaml", "just a text\n");
  EXPECT_EQ(scalar.code, 1);
  EXPECT_NE(scalar.err.find(dir.file("scalar.yaml") + ": not a mapping"), std::string::npos)
      << scalar.err;
  auto keys = bad("keys.yaml", "host: x\ndomain: y\ntraces: z\nslowParty: w\n");
  EXPECT_EQ(keys.code, 1);
  EXPECT_NE(keys.err.find(dir.file("keys.yaml") + ": collection must be a text"), std::string::npos)
      << keys.err;
  // What shows the tasks is a plugin's command, which one the file says.
  std::string unknown = text;
  unknown.replace(unknown.find("command: timeline"), 17, "command: nosuch");
  auto none = bad("unknown.yaml", unknown);
  EXPECT_EQ(none.code, 1);
  EXPECT_NE(none.err.find("no plugin declares the command nosuch"), std::string::npos) << none.err;
}

// The demo's failure scenarios end with each task's outcome: a task that starts, one whose bob
// container is killed for memory, one whose image never comes (stuck after 8 s, as the demo
// counts ten phases, at least 8 s); exit 3 (some failed or are stuck). A scenario the config does
// not have is refused with the ones it has.
TEST(CliTest, DemoScenariosEndWithEachTasksOutcome) {
  test::TempDir dir;
  auto r = runCommand(hostCmd({"demo", "--scenario", "mixed", "--tasks", "4", "--phase-millis",
                               "200", "--exit-when-done", "--admin-listen", "127.0.0.1:0",
                               "--work-dir", dir.file("work"), "--plugin-dir", KH_PLUGIN_DIR}));
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("mixed: some tasks fail or get stuck in bob"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  demo-task-1: ready in "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  demo-task-2: failed: OOMKilled in bob"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  demo-task-3: stuck: ImagePull in bob"), std::string::npos) << r.out;
  // Kuscia's route pre-check failed it before any pod: the pair and the route's reason.
  EXPECT_NE(
      r.out.find("  demo-task-4: failed: RouteNotReady on route alice-bob (HeartBeatTimeout)"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  | OOMKilled: container[secretflow] terminated state reason"),
            std::string::npos)
      << r.out;
  auto unknown = runCommand(hostCmd({"demo", "--scenario", "flaky", "--work-dir", dir.file("work"),
                                     "--plugin-dir", KH_PLUGIN_DIR}));
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find(
                "--scenario flaky: no such scenario (default, slow-party, approval-wait, crash,"),
            std::string::npos)
      << unknown.err;
}

// `demo --scenario NAME --tasks N` in `mode` (centralized or p2p), a phase a quarter second.
test::RunResult runScenario(const char* scenario, int tasks, const char* mode, test::TempDir& dir) {
  std::vector<std::string> args = {"demo",         "--scenario",          scenario,
                                   "--tasks",      std::to_string(tasks), "--phase-millis",
                                   "250",          "--exit-when-done",    "--admin-listen",
                                   "127.0.0.1:0",  "--work-dir",          dir.file("work"),
                                   "--plugin-dir", KH_PLUGIN_DIR};
  if (std::string(mode) == "p2p") args.emplace_back("--p2p");
  return runCommand(hostCmd(args));
}

// Kuscia's gang reservation as sim-agent plays it, in a job of two tasks (the second after the
// first): bob's pods take eight phases to reserve, so alice's wait for the other parties is on
// the critical path and the blame is bob's reserving; the job's view shows both tasks' queue,
// startup and overhead. In p2p, bob's reservation reaches alice's cluster through the
// initiator's stub, and the clusters merged say the same.
TEST(CliTest, ASlowReservationIsBlamedOnThePartyThatReservedLast) {
  for (const char* mode : {"centralized", "p2p"}) {
    test::TempDir dir;
    auto r = runScenario("slow-reservation", 2, mode, dir);
    EXPECT_EQ(r.code, 0) << mode << "\n" << r.out << r.err;
    for (const char* task : {"demo-task-1", "demo-task-2"}) {
      EXPECT_NE(r.out.find(std::string("blame: bob/") + task + "-0 reserving"), std::string::npos)
          << mode << "\n"
          << r.out;
      // alice waited for bob: her pod's awaiting-parties is drawn (w), whoever was ready last.
      const auto alice = r.out.rfind(std::string("  alice/") + task + "-0  ");
      ASSERT_NE(alice, std::string::npos) << r.out;
      const std::string bar = r.out.substr(alice, r.out.find('\n', alice) - alice);
      EXPECT_NE(bar.find_first_of("wW"), std::string::npos) << mode << ": " << bar;
    }
    // The job's view: the second task queued behind the first, each with its overhead.
    EXPECT_NE(r.out.find("job demo-job-1 ("), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("(dependencies)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("ready; blame bob/demo-task-2-0 reserving"), std::string::npos) << r.out;
    // The task's own preparing (ResourceCreated, as sim-agent writes it with Kuscia's shape).
    EXPECT_NE(r.out.find("\npreparing "), std::string::npos) << r.out;
  }
}

// A job held in approval by bob (who approves by hand, eight phases late): the job's view says
// how long, and that bob accepted last, observed (Kuscia writes no time for it); the task says
// what came before it. (p2p, where every job awaits approval: E2e.Demo.p2p and E2e.Timeline.p2p.)
TEST(CliTest, AJobHeldInApprovalBlamesThePartnerThatAcceptedLast) {
  for (const char* mode : {"centralized"}) {
    test::TempDir dir;
    auto r = runScenario("approval-wait", 1, mode, dir);
    EXPECT_EQ(r.code, 0) << mode << "\n" << r.out << r.err;
    EXPECT_NE(r.out.find(", bob accepted last (observed)"), std::string::npos) << mode << r.out;
    EXPECT_NE(r.out.find("before it, in job demo-job-1: approval "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("(after approval)"), std::string::npos) << r.out;
  }
}

// The Kubernetes manifests' host configs name the pod's files (its certificate, its secrets):
// manifests_e2e.py checks them with stand-ins.
TEST(CliTest, CheckConfigAcceptsEverySample) {
  int n = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(KH_SOURCE_DIR "/config")) {
    if (e.path().extension() != ".yaml" ||
        test::readFile(e.path()).find("\ndomains:") == std::string::npos ||
        e.path().string().find("/config/k8s/") != std::string::npos)
      continue;
    ++n;
    auto r = runCommand(
        hostCmd({"check-config", "--config", e.path().string(), "--plugin-dir", KH_PLUGIN_DIR}));
    EXPECT_EQ(r.code, 0) << e.path() << "\n" << r.err;
    EXPECT_NE(r.out.find(": ok ("), std::string::npos) << r.out;
  }
  EXPECT_GE(n, 3);
}

TEST(CliTest, CheckConfigReportsUnknownKeyAndUnknownPluginWithLocation) {
  test::TempDir dir;
  auto unknownKey = dir.file("unknown-key.yaml");
  test::writeFile(unknownKey, "domains:\n  - id: alice\n    plugns: []\n");
  auto r =
      runCommand(hostCmd({"check-config", "--config", unknownKey, "--plugin-dir", KH_PLUGIN_DIR}));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(unknownKey + ":3:5: domains[0].plugns: unknown key 'plugns'"),
            std::string::npos)
      << r.err;

  auto unknownPlugin = dir.file("unknown-plugin.yaml");
  test::writeFile(unknownPlugin,
                  "domains:\n  - id: alice\n    plugins:\n      - name: task-timelnie\n");
  r = runCommand(
      hostCmd({"check-config", "--config", unknownPlugin, "--plugin-dir", KH_PLUGIN_DIR}));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(unknownPlugin +
                       ":4:15: domains[0].plugins[0].name: unknown plugin 'task-timelnie'"),
            std::string::npos)
      << r.err;

  r = runCommand(hostCmd({"check-config", "--config", dir.file("absent.yaml")}));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("cannot read config file"), std::string::npos);
  r = runCommand(hostCmd({"check-config", "--config", unknownKey, "--plugin-dir", "relative"}));
  EXPECT_EQ(r.code, 2);
}

// check-config loads every plugin through the loader `run` uses: a file `run` refuses (here group
// writable) fails check-config too, naming the config line and the reason; an optional one is a
// warning, since run would only disable its instance.
TEST(CliTest, CheckConfigRefusesWhatRunRefuses) {
  namespace fs = std::filesystem;
  test::TempDir dir;
  fs::create_directory(dir.file("plugins"));
  std::string plugin = dir.file("plugins/probe.so");
  fs::copy_file(KH_TEST_PLUGIN_DIR "/probe.so", plugin);
  fs::permissions(plugin, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
  fs::permissions(dir.file("plugins"), fs::perms::owner_all | fs::perms::group_read |
                                           fs::perms::group_exec | fs::perms::others_read |
                                           fs::perms::others_exec);
  fs::permissions(dir.path(), fs::perms::group_write | fs::perms::others_write,
                  fs::perm_options::remove);
  auto config = dir.file("host.yaml");
  auto write = [&](const std::string& required) {
    test::writeFile(config, "pluginDirs: [" + dir.file("plugins") +
                                "]\ndomains:\n  - id: alice\n    plugins:\n      - name: probe\n" +
                                "        required: " + required + "\n");
  };
  write("true");
  auto ok = runCommand(hostCmd({"check-config", "--config", config}));
  ASSERT_EQ(ok.code, 0) << ok.err;

  fs::permissions(plugin, fs::perms::group_write, fs::perm_options::add);
  auto r = runCommand(hostCmd({"check-config", "--config", config}));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(config + ":5:15: domains[0].plugins[0].name: plugin " + plugin +
                       ": refused: file " + plugin + " is writable by group or others"),
            std::string::npos)
      << r.err;
  auto run = runCommand(hostCmd({"run", "--config", config, "--admin-listen", "127.0.0.1:0"}));
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("is writable by group or others"), std::string::npos) << run.err;

  write("false");
  r = runCommand(hostCmd({"check-config", "--config", config}));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: " + config + ":5:15: domains[0].plugins[0].name: plugin " +
                       plugin + ": refused"),
            std::string::npos)
      << r.err;
}

TEST(CliTest, RunServesAdminEndpointsAndExitsZeroOnSigterm) {
  test::TempDir dir;
  const std::string config = std::string(KH_SOURCE_DIR) + "/config/samples/centralized.yaml";
  test::Child host(hostCmd({"run", "--config", config, "--plugin-dir", KH_PLUGIN_DIR,
                            "--admin-listen", "127.0.0.1:0"}),
                   dir.path().string());
  auto addr = host.waitForStderr("admin server listening on 127.0.0.1:", 30);
  ASSERT_TRUE(addr.has_value()) << host.err();
  auto port = static_cast<unsigned short>(std::stoi(*addr));
  ASSERT_TRUE(host.waitForStderr("running: 2 plugin instance(s) in 2 domain(s)", 30)) << host.err();

  EXPECT_EQ(test::httpGet(port, "/livez").status, 200);
  auto ready = test::httpGet(port, "/readyz?verbose");
  EXPECT_EQ(ready.status, 200) << ready.body;
  EXPECT_NE(ready.body.find("[+]plugin:heartbeat/alice ok"), std::string::npos) << ready.body;
  EXPECT_NE(ready.body.find("[+]plugin:heartbeat/bob ok"), std::string::npos) << ready.body;
  auto metrics = test::httpGet(port, "/metrics");
  EXPECT_EQ(metrics.status, 200);
  for (const char* m : {"kuscia_host_build_info{version=", "kuscia_host_plugins_loaded 1",
                        "kuscia_host_plugin_instances{state=\"running\"} 2",
                        // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one long sample line
                        "kuscia_host_plugin_callbacks_total{plugin=\"heartbeat\",domain=\"alice\","
                        "callback=\"on_start\"} 1",
                        "# TYPE kuscia_host_plugin_callback_duration_seconds histogram",
                        "# TYPE heartbeat_beats_total counter"})
    EXPECT_NE(metrics.body.find(m), std::string::npos) << m << "\n" << metrics.body;

  host.signal(SIGTERM);
  auto code = host.wait(30);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0) << host.err();
  EXPECT_NE(host.err().find("shut down"), std::string::npos);
}

TEST(CliTest, RunStartsTheEmbeddedApiServerBeforeThePlugins) {
  test::TempDir dir;
  auto cfg = dir.file("embedded.yaml");
  auto kubeconfig = dir.file("kubeconfig.yaml");
  test::writeFile(
      cfg, "admin: { listen: 127.0.0.1:0 }\ncluster:\n  embedded:\n    listen: 127.0.0.1:0\n"
           "    kubeconfigOut: " +
               kubeconfig + "\ndomains:\n  - id: alice\n    plugins:\n      - name: heartbeat\n");
  test::Child host(hostCmd({"run", "--config", cfg, "--plugin-dir", KH_PLUGIN_DIR}),
                   dir.path().string());
  auto admin = host.waitForStderr("admin server listening on 127.0.0.1:", 30);
  ASSERT_TRUE(admin.has_value()) << host.err();
  ASSERT_TRUE(host.waitForStderr("running: 1 plugin instance(s)", 30)) << host.err();
  auto err = host.err();
  EXPECT_LT(err.find("embedded API server listening on http://127.0.0.1:"),
            err.find("started heartbeat/alice"));
  auto kc = test::readFile(kubeconfig);
  auto pos = kc.find("server: http://127.0.0.1:");
  ASSERT_NE(pos, std::string::npos) << kc;
  auto port = static_cast<unsigned short>(std::stoi(kc.substr(pos + 25)));
  auto ns = test::httpGet(port, "/api/v1/namespaces/default");
  EXPECT_EQ(ns.status, 200) << ns.body;
  auto ready = test::httpGet(static_cast<unsigned short>(std::stoi(*admin)), "/readyz?verbose");
  EXPECT_NE(ready.body.find("[+]apiserver:embedded ok"), std::string::npos) << ready.body;
  host.signal(SIGTERM);
  EXPECT_EQ(host.wait(30).value_or(-1), 0) << host.err();
}

TEST(CliTest, CheckConfigReportsAnUnusableKubeconfig) {
  test::TempDir dir;
  auto kc = dir.file("kubeconfig");
  test::writeFile(
      kc, "clusters:\n- name: c\n  cluster: {}\ncontexts:\n- name: x\n  context: {cluster: c}\n"
          "current-context: x\n");
  auto cfg = dir.file("host.yaml");
  test::writeFile(cfg, "cluster:\n  kubeconfig: " + kc + "\ndomains:\n  - id: alice\n");
  auto r = runCommand(hostCmd({"check-config", "--config", cfg}));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(cfg + ": cluster.kubeconfig: kubeconfig " + kc +
                       ": cluster \"c\": server is missing"),
            std::string::npos)
      << r.err;
}

TEST(CliTest, RunRefusesAbi2PluginWithBothVersionsAndExits1) {
  test::TempDir dir;
  auto cfg = dir.file("abi2.yaml");
  test::writeFile(cfg, "admin: { listen: 127.0.0.1:0 }\ndomains:\n  - id: alice\n    plugins:\n"
                       "      - name: bad\n        path: " KH_TEST_PLUGIN_DIR "/bad_abi2.so\n");
  auto r = runCommand(hostCmd({"run", "--config", cfg}));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("built for ABI 2.x, but this host speaks ABI 1.6"), std::string::npos)
      << r.err;
}

TEST(CliTest, RunWithJsonLogsEmitsOneJsonObjectPerLine) {
  test::TempDir dir;
  const std::string config = std::string(KH_SOURCE_DIR) + "/config/samples/p2p-alice.yaml";
  test::Child host(hostCmd({"run", "--config", config, "--plugin-dir", KH_PLUGIN_DIR,
                            "--admin-listen", "127.0.0.1:0"}),
                   dir.path().string());
  ASSERT_TRUE(host.waitForStderr("running: 1 plugin instance(s)", 30)) << host.err();
  host.signal(SIGINT);
  ASSERT_EQ(host.wait(30).value_or(-1), 0);
  std::istringstream lines(host.err());
  int n = 0;
  for (std::string l; std::getline(lines, l); ++n) {
    EXPECT_EQ(l.front(), '{') << l;
    EXPECT_EQ(l.back(), '}') << l;
  }
  EXPECT_GT(n, 2);
}

} // namespace
} // namespace kuscia_host
