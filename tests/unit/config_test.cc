#include "common/listen_address.h"
#include "config/config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "test_support.h"

namespace kuscia_host {
namespace {

ConfigLoadOptions buildPlugins() {
  ConfigLoadOptions o;
  o.extraPluginDirs = {KH_PLUGIN_DIR};
  return o;
}

ConfigLoadResult parse(const std::string& yaml) {
  return parseHostConfig(yaml, "test.yaml", buildPlugins());
}

// The first error, formatted as the CLI prints it.
std::string firstError(const ConfigLoadResult& r) {
  return r.errors.empty() ? "" : r.errors[0].str();
}

TEST(ConfigTest, EverySampleInConfigDirPasses) {
  int samples = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(KH_SOURCE_DIR "/config")) {
    if (entry.path().extension() != ".yaml") continue;
    // Only host configs: they have a top-level "domains" key (config/ also holds CRDs and RBAC).
    // Those of the Kubernetes manifests name the pod's files (its certificate, its secrets):
    // manifests_e2e.py checks them with stand-ins.
    if (test::readFile(entry.path()).find("\ndomains:") == std::string::npos ||
        entry.path().string().find("/config/k8s/") != std::string::npos)
      continue;
    ++samples;
    auto r = loadHostConfig(entry.path().string(), buildPlugins());
    EXPECT_TRUE(r.errors.empty()) << entry.path() << ": " << firstError(r);
    EXPECT_TRUE(r.config.has_value()) << entry.path();
  }
  EXPECT_GE(samples, 3);
}

TEST(ConfigTest, MinimalConfigGetsDefaults) {
  auto r = parse("domains:\n  - id: alice\n");
  ASSERT_TRUE(r.config) << firstError(r);
  EXPECT_EQ(r.config->mode, "centralized");
  EXPECT_EQ(r.config->logLevel, "info");
  EXPECT_EQ(r.config->adminListen, "127.0.0.1:9464");
  EXPECT_EQ(r.config->workerThreads, 1);
  EXPECT_EQ(r.config->cluster.source, ClusterConfig::Source::kNone);
  ASSERT_EQ(r.config->domains.size(), 1u);
  EXPECT_TRUE(r.config->domains[0].plugins.empty());
}

TEST(ConfigTest, UnknownKeyNamesFileLineAndKey) {
  auto r =
      parse("mode: centralized\ndomains:\n  - id: alice\n    plugins:\n      - name: heartbeat\n  "
            "      nmae: x\n");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].file, "test.yaml");
  EXPECT_EQ(r.errors[0].line, 6);
  EXPECT_EQ(r.errors[0].column, 9);
  EXPECT_EQ(r.errors[0].keyPath, "domains[0].plugins[0].nmae");
  EXPECT_NE(r.errors[0].message.find("unknown key 'nmae'"), std::string::npos);
  EXPECT_NE(r.errors[0].message.find("name, path, required, logLevel, config"), std::string::npos);
  EXPECT_EQ(firstError(r).rfind("test.yaml:6:9: domains[0].plugins[0].nmae: unknown key", 0), 0u)
      << firstError(r);
}

// Found by fuzz_host_config: bytes that are not UTF-8 in a plugin's config made the host abort
// (the config is handed to the plugin as JSON text). Now an error naming the line and the key.
TEST(ConfigTest, PluginConfigThatIsNotUtf8IsAnError) {
  auto r = parse("domains:\n  - id: alice\n    plugins:\n      - name: heartbeat\n        config: "
                 "{greeting: \"caf\xff\"}\n");
  ASSERT_EQ(r.errors.size(), 1u) << firstError(r);
  EXPECT_FALSE(r.config);
  EXPECT_EQ(firstError(r), "test.yaml:5:17: domains[0].plugins[0].config: not valid UTF-8 text");
}

TEST(ConfigTest, WrongTypesAreErrorsWithLocation) {
  auto r = parse("workerThreads: many\nadmin: [1]\ndomains:\n  - id: alice\n    plugins:\n      - "
                 "name: heartbeat\n        required: \"yes\"\n");
  ASSERT_EQ(r.errors.size(), 3u) << firstError(r);
  EXPECT_EQ(r.errors[0].keyPath, "workerThreads");
  EXPECT_EQ(r.errors[0].line, 1);
  EXPECT_NE(r.errors[0].message.find("expected integer"), std::string::npos);
  EXPECT_EQ(r.errors[1].keyPath, "admin");
  EXPECT_NE(r.errors[1].message.find("expected mapping, got a list"), std::string::npos);
  EXPECT_EQ(r.errors[2].keyPath, "domains[0].plugins[0].required");
  EXPECT_EQ(r.errors[2].line, 7);
}

TEST(ConfigTest, EnumAndRangeViolations) {
  auto r = parse("mode: mesh\nworkerThreads: 0\nlogLevel: loud\ndomains:\n  - id: alice\n");
  ASSERT_EQ(r.errors.size(), 3u);
  EXPECT_NE(r.errors[0].message.find("'mesh' is not one of: centralized, p2p"), std::string::npos);
  EXPECT_NE(r.errors[1].message.find("outside [1, 64]"), std::string::npos);
  EXPECT_EQ(r.errors[2].keyPath, "logLevel");
}

TEST(ConfigTest, DuplicateDomainsAndPlugins) {
  auto r = parse("domains:\n  - id: alice\n    plugins:\n      - name: heartbeat\n      - name: "
                 "heartbeat\n  - id: alice\n");
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_EQ(r.errors[0].line, 5);
  EXPECT_NE(r.errors[0].message.find("enabled twice for domain 'alice' (first at line 4)"),
            std::string::npos);
  EXPECT_EQ(r.errors[1].line, 6);
  EXPECT_NE(r.errors[1].message.find("duplicate domain 'alice' (first at line 2)"),
            std::string::npos);
}

TEST(ConfigTest, DuplicateYamlKey) {
  auto r = parse("logLevel: info\nlogLevel: debug\ndomains:\n  - id: alice\n");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].line, 2);
  EXPECT_NE(r.errors[0].message.find("duplicate key (first at line 1)"), std::string::npos);
}

TEST(ConfigTest, UnknownPluginNamesPluginAndDirs) {
  auto r = parse("domains:\n  - id: alice\n    plugins:\n      - name: no-such-plugin\n");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].line, 4);
  EXPECT_EQ(r.errors[0].keyPath, "domains[0].plugins[0].name");
  EXPECT_NE(r.errors[0].message.find("unknown plugin 'no-such-plugin'"), std::string::npos);
  EXPECT_NE(r.errors[0].message.find(KH_PLUGIN_DIR), std::string::npos);
}

TEST(ConfigTest, UnreadableOrRelativePluginDirs) {
  test::TempDir dir;
  auto r =
      parse("pluginDirs: [relative/dir, " + dir.file("missing") + "]\ndomains:\n  - id: alice\n");
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_NE(r.errors[0].message.find("must be an absolute path"), std::string::npos);
  EXPECT_EQ(r.errors[0].keyPath, "pluginDirs[0]");
  EXPECT_NE(r.errors[1].message.find("does not exist"), std::string::npos);
  EXPECT_EQ(r.errors[1].line, 1);
}

TEST(ConfigTest, PluginPathMustBeAbsoluteAndExist) {
  auto r = parse("domains:\n  - id: alice\n    plugins:\n      - name: heartbeat\n        path: "
                 "heartbeat.so\n");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].message.find("must be absolute"), std::string::npos);
  auto ok = parse(
      "domains:\n  - id: alice\n    plugins:\n      - name: heartbeat\n        path: " KH_PLUGIN_DIR
      "/heartbeat.so\n");
  ASSERT_TRUE(ok.config) << firstError(ok);
  EXPECT_EQ(ok.config->domains[0].plugins[0].path, KH_PLUGIN_DIR "/heartbeat.so");
}

TEST(ConfigTest, P2pServesExactlyOneDomain) {
  auto r = parse("mode: p2p\ndomains:\n  - id: alice\n  - id: bob\n");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].message.find("exactly one domain, found 2"), std::string::npos);
}

TEST(ConfigTest, DomainIdMustBeDnsLabel) {
  auto r = parse("domains:\n  - id: Alice_1\n");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].message.find("not a valid domain id"), std::string::npos);
}

TEST(ConfigTest, ClusterSourcesAreExclusive) {
  auto r = parse("cluster:\n  kubeconfig: /etc/k\n  inCluster: true\ndomains:\n  - id: alice\n");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].message.find("only one of kubeconfig, inCluster and embedded"),
            std::string::npos);
  auto e = parse("cluster:\n  embedded: { listen: 127.0.0.1:0 }\n  qps: 5\n  burst: 10\ndomains:\n "
                 " - id: alice\n");
  ASSERT_TRUE(e.config) << firstError(e);
  EXPECT_EQ(e.config->cluster.source, ClusterConfig::Source::kEmbedded);
  EXPECT_EQ(e.config->cluster.qps, 5);
  EXPECT_EQ(e.config->cluster.burst, 10);
}

TEST(ConfigTest, EmbeddedKubeconfigOutMustBeWritable) {
  auto rel = parse("cluster:\n  embedded: { kubeconfigOut: kc.yaml }\ndomains:\n  - id: alice\n");
  ASSERT_EQ(rel.errors.size(), 1u);
  EXPECT_NE(rel.errors[0].message.find("must be an absolute path"), std::string::npos);
  auto missing = parse("cluster:\n  embedded: { kubeconfigOut: /nonexistent/dir/kc.yaml "
                       "}\ndomains:\n  - id: alice\n");
  ASSERT_EQ(missing.errors.size(), 1u);
  EXPECT_EQ(missing.errors[0].keyPath, "cluster.embedded.kubeconfigOut");
  EXPECT_EQ(missing.errors[0].line, 2);
}

TEST(ConfigTest, PluginConfigReachesPluginAsTypedJson) {
  auto r = parse(
      "domains:\n  - id: alice\n    plugins:\n      - name: heartbeat\n        required: false\n"
      "        logLevel: debug\n        config:\n          n: 50\n          f: 1.5\n         "
      " b: true\n"
      "          s: \"123\"\n          t: text\n          none: ~\n          list: [1, two]\n"
      "          nested: { a: { b: 1 } }\n");
  ASSERT_TRUE(r.config) << firstError(r);
  const auto& p = r.config->domains[0].plugins[0];
  EXPECT_FALSE(p.required);
  EXPECT_EQ(p.logLevel, "debug");
  auto j = nlohmann::json::parse(p.configJson);
  EXPECT_EQ(j["n"], 50);
  EXPECT_TRUE(j["n"].is_number_integer());
  EXPECT_DOUBLE_EQ(j["f"].get<double>(), 1.5);
  EXPECT_EQ(j["b"], true);
  EXPECT_EQ(j["s"], "123"); // quoted: stays a string
  EXPECT_EQ(j["t"], "text");
  EXPECT_TRUE(j["none"].is_null());
  EXPECT_EQ(j["list"], nlohmann::json::parse("[1, \"two\"]"));
  EXPECT_EQ(j["nested"]["a"]["b"], 1);
}

TEST(ConfigTest, PluginConfigMustBeAMapping) {
  auto r = parse(
      "domains:\n  - id: alice\n    plugins:\n      - name: heartbeat\n        config: [1]\n");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].keyPath, "domains[0].plugins[0].config");
}

TEST(ConfigTest, MissingRequiredKeys) {
  auto r = parse("domains:\n  - plugins:\n      - config: {}\n");
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_NE(r.errors[0].message.find("missing required key 'name'"), std::string::npos);
  EXPECT_NE(r.errors[1].message.find("missing required key 'id'"), std::string::npos);
  auto none = parse("mode: centralized\n");
  ASSERT_EQ(none.errors.size(), 1u);
  EXPECT_NE(none.errors[0].message.find("missing required key 'domains'"), std::string::npos);
}

TEST(ConfigTest, YamlSyntaxErrorHasLine) {
  auto r = parse("domains:\n  - id: alice\n  bad: [\n");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_GT(r.errors[0].line, 0);
  EXPECT_NE(r.errors[0].message.find("invalid YAML"), std::string::npos);
}

TEST(ConfigTest, UnreadableFile) {
  auto r = loadHostConfig("/nonexistent/kuscia-host.yaml");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].str().find("/nonexistent/kuscia-host.yaml: cannot read config file"),
            std::string::npos);
}

TEST(ConfigTest, ListenAddresses) {
  std::string h;
  unsigned short p = 0;
  EXPECT_TRUE(parseListenAddress("127.0.0.1:0", h, p));
  EXPECT_EQ(h, "127.0.0.1");
  EXPECT_TRUE(parseListenAddress("[::1]:9464", h, p));
  EXPECT_EQ(h, "::1");
  EXPECT_EQ(p, 9464);
  EXPECT_FALSE(parseListenAddress("127.0.0.1", h, p));
  EXPECT_FALSE(parseListenAddress("127.0.0.1:70000", h, p));
  EXPECT_FALSE(parseListenAddress(":80", h, p));
  auto r = parse("admin: { listen: nowhere }\ndomains:\n  - id: alice\n");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].keyPath, "admin.listen");
}

TEST(ConfigTest, AdminAccessIsValidatedWithLinesAndKeys) {
  test::TempDir dir;
  std::string tokens = (dir.path() / "tokens").string();
  test::writeFile(tokens, "t0ken prometheus\n");
  // Off loopback with no authentication: refused, naming the keys to set.
  auto r = parse("admin:\n  listen: 0.0.0.0:9464\ndomains:\n  - id: alice\n");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].line, 2);
  EXPECT_EQ(r.errors[0].keyPath, "admin.listen");
  EXPECT_NE(r.errors[0].message.find("admin.auth"), std::string::npos);
  EXPECT_NE(r.errors[0].message.find("admin.allowUnauthenticated"), std::string::npos);
  EXPECT_TRUE(parse("admin: {listen: '0.0.0.0:9464', allowUnauthenticated: true}\n"
                    "domains: [{id: alice}]\n")
                  .config);
  // Tokens off loopback need TLS.
  r = parse("admin: {listen: '0.0.0.0:9464', auth: token, tokenFile: " + tokens +
            "}\ndomains: [{id: alice}]\n");
  ASSERT_FALSE(r.errors.empty());
  EXPECT_NE(firstError(r).find("admin.tls"), std::string::npos) << firstError(r);
  r = parse("admin:\n  listen: 0.0.0.0:9464\n  tls: {selfSigned: true}\n  auth: token\n"
            "  tokenFile: " +
            tokens + "\ndomains: [{id: alice}]\n");
  ASSERT_TRUE(r.config) << firstError(r);
  EXPECT_TRUE(r.config->adminAccess.tls && r.config->adminAccess.selfSigned);
  EXPECT_EQ(r.config->adminAccess.auth, AdminAccess::Auth::kToken);
  EXPECT_EQ(r.config->adminAccess.tokenFile, tokens);
  // Each inconsistency at its key and line.
  struct Case {
    std::string admin, key, words;
  };
  for (const auto& c : std::vector<Case>{
           {"  auth: token\n", "admin.auth", "tokenFile"},
           {"  auth: kubernetes\n", "admin.auth", "set cluster"},
           {"  tokenFile: " + tokens + "\n", "admin.tokenFile", "only read with auth: token"},
           {"  clientCAFile: " + tokens + "\n", "admin.clientCAFile", "need admin.tls"},
           {"  tls: {certFile: /nonexistent.crt, keyFile: /nonexistent.key}\n",
            "admin.tls.certFile", "cannot read"},
           {"  tls: {selfSigned: true, certFile: " + tokens + "}\n", "admin.tls", "either"},
           {"  tls: {keyFile: " + tokens + "}\n", "admin.tls", "certFile and keyFile"},
           {"  tls: {certFile: " + tokens + ", keyFile: " + tokens + ", caOut: /tmp/ca.pem}\n",
            "admin.tls.caOut", "only with selfSigned"},
           {"  tls: {selfSigned: true, reloadSeconds: 0}\n", "admin.tls.reloadSeconds", "1"},
           {"  auth: everyone\n", "admin.auth", "not one of"}}) {
    r = parse("admin:\n" + c.admin + "domains: [{id: alice}]\n");
    ASSERT_FALSE(r.errors.empty()) << c.admin;
    EXPECT_EQ(r.errors[0].keyPath, c.key) << c.admin;
    EXPECT_EQ(r.errors[0].line, 2) << c.admin;
    EXPECT_NE(r.errors[0].message.find(c.words), std::string::npos) << r.errors[0].str();
  }
  EXPECT_TRUE(isLoopbackListen("127.0.0.1:1") && isLoopbackListen("[::1]:1") &&
              isLoopbackListen("localhost:1") && !isLoopbackListen("0.0.0.0:1") &&
              !isLoopbackListen("10.0.0.1:1") && !isLoopbackListen("[::]:1"));
}

TEST(ConfigTest, ReferenceListsEveryKey) {
  auto ref = configReference();
  for (const char* key :
       {"mode", "admin.listen", "cluster.embedded.kubeconfigOut", "domains[].plugins[].required"})
    EXPECT_NE(ref.find(key), std::string::npos) << key;
}

} // namespace
} // namespace kuscia_host

namespace kuscia_host {
namespace {

TEST(ConfigDocsTest, TheConfigurationReferenceDocumentsEveryKey) {
  std::string readme = test::readFile(KH_SOURCE_DIR "/docs/operators/configuration.md");
  std::istringstream ref(configReference());
  int keys = 0;
  for (std::string line; std::getline(ref, line);) {
    auto start = line.find_first_not_of(' ');
    auto end = line.find(' ', start);
    std::string path = line.substr(start, end - start);
    if (line.find("(mapping)") != std::string::npos) continue;
    ++keys;
    EXPECT_NE(readme.find("`" + path + "`"), std::string::npos)
        << "docs/operators/configuration.md does not document " << path;
  }
  EXPECT_GE(keys, 15);
}

} // namespace
} // namespace kuscia_host
