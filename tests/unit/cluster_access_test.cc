// Cluster access from kubeconfig files (every variant kubectl accepts that kuscia-host supports)
// and from a pod's service account.
#include "kube/cluster_access.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>

#include "common/base64.h"
#include "test_support.h"

namespace kuscia_host::kube {
namespace {

EnvLookup envOf(const std::map<std::string, std::string>& vars) {
  return [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

std::string kubeconfig(const std::string& server, const std::string& clusterExtra,
                       const std::string& user, const std::string& current = "main") {
  return "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + server +
         "\n" + clusterExtra + "users:\n- name: u\n  user:\n" + user +
         "contexts:\n- name: main\n  context:\n    cluster: c\n    user: u\n    namespace: alice\n"
         "current-context: " +
         current + "\n";
}

// Found by fuzz_kubeconfig: a scalar where a list entry's mapping belongs threw out of the loader
// (the host aborted). Each is an error naming the file.
TEST(ClusterAccessTest, ScalarsWhereMappingsBelongAreErrors) {
  test::TempDir dir;
  auto path = dir.file("kc");
  for (const char* text :
       {"clusters:\n- c\nusers: []\ncontexts: []\n", "clusters: []\nusers:\n- [u]\n",
        "contexts:\n- name: main\n  context: x\ncurrent-context: main\n",
        "clusters:\n- name: c\n  cluster: {server: [x]}\nusers:\n- name: u\n  user: {token: "
        "[t]}\ncontexts:\n- name: m\n  context: {cluster: c, user: u}\ncurrent-context: m\n"}) {
    test::writeFile(path, text);
    auto a = loadKubeconfig(path, envOf({}));
    ASSERT_FALSE(a.ok()) << text;
    EXPECT_NE(a.error().find(path), std::string::npos) << a.error();
  }
}

TEST(ClusterAccessTest, InlineDataAndToken) {
  test::TempDir dir;
  auto path = dir.file("kc");
  test::writeFile(path, kubeconfig("https://10.1.2.3:6443",
                                   "    certificate-authority-data: " + base64Encode("CA PEM") +
                                       "\n"
                                       "    tls-server-name: api.internal\n",
                                   "    token: abc\n"));
  auto a = loadKubeconfig(path, envOf({}));
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(a->scheme, "https");
  EXPECT_EQ(a->host, "10.1.2.3");
  EXPECT_EQ(a->port, "6443");
  EXPECT_EQ(a->caPem, "CA PEM");
  EXPECT_EQ(a->tlsServerName, "api.internal");
  EXPECT_EQ(a->namespaceName, "alice");
  EXPECT_EQ(a->bearerToken().value(), "abc");
  EXPECT_NE(a->description.find("(context main)"), std::string::npos);
}

TEST(ClusterAccessTest, RelativePathsResolveAgainstTheKubeconfigAndTokenFileIsReread) {
  test::TempDir dir;
  std::filesystem::create_directories(dir.path() / "certs");
  test::writeFile(dir.file("certs/ca.crt"), "CA FROM FILE");
  test::writeFile(dir.file("certs/client.crt"), "CERT");
  test::writeFile(dir.file("certs/client.key"), "KEY");
  test::writeFile(dir.file("token"), "first\n");
  auto path = dir.file("kc");
  test::writeFile(
      path,
      kubeconfig("https://k3s.local", "    certificate-authority: certs/ca.crt\n",
                 "    token: static\n    tokenFile: token\n"
                 "    client-certificate: certs/client.crt\n    client-key: certs/client.key\n"));
  auto a = loadKubeconfig(path, envOf({}));
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(a->port, "443");
  EXPECT_EQ(a->caPem, "CA FROM FILE");
  EXPECT_EQ(a->clientCertPem, "CERT");
  EXPECT_EQ(a->clientKeyPem, "KEY");
  EXPECT_EQ(a->bearerToken().value(), "first"); // tokenFile wins over token
  // Read again once tokenReread has passed, not on every request; a copy shares what was read.
  test::writeFile(dir.file("token"), "rotated\n");
  ClusterAccess copy = *a;
  EXPECT_EQ(a->bearerToken().value(), "first");
  EXPECT_EQ(copy.bearerToken().value(), "first");
  copy.tokenReread = std::chrono::seconds(0);
  EXPECT_EQ(copy.bearerToken().value(), "rotated");
  EXPECT_EQ(a->bearerToken().value(), "rotated"); // read by the copy, for both
  // A file that cannot be read is an error naming it, and read again on the next request.
  std::filesystem::remove(dir.file("token"));
  auto gone = copy.bearerToken();
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.error().find("token file"), std::string::npos) << gone.error();
  test::writeFile(dir.file("token"), "back\n");
  EXPECT_EQ(copy.bearerToken().value(), "back");
}

TEST(ClusterAccessTest, NoCredentialsOverPlainHttp) {
  test::TempDir dir;
  auto path = dir.file("kc");
  test::writeFile(path, kubeconfig("http://127.0.0.1:8080", "", "    token: secret\n"));
  auto a = loadKubeconfig(path, envOf({}));
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(a->bearerToken().value(), "");
}

TEST(ClusterAccessTest, KubeconfigListFirstFileWins) {
  test::TempDir dir;
  test::writeFile(dir.file("a"), "clusters:\n- name: c\n  cluster:\n    server: https://first:1\n"
                                 "current-context: main\n");
  test::writeFile(dir.file("b"), kubeconfig("https://second:2", "", "    token: t\n", "other"));
  auto a = loadKubeconfig(
      "", envOf({{"KUBECONFIG", dir.file("missing") + ":" + dir.file("a") + ":" + dir.file("b")}}));
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(a->host, "first"); // cluster "c" from the first file that defines it
  EXPECT_EQ(a->bearerToken().value(), "t");
  auto home = loadKubeconfig("", envOf({{"HOME", dir.path().string()}}));
  ASSERT_FALSE(home.ok());
  EXPECT_NE(home.error().find(dir.path().string() + "/.kube/config: cannot read"),
            std::string::npos)
      << home.error();
}

TEST(ClusterAccessTest, ErrorsNameTheFileAndTheField) {
  test::TempDir dir;
  auto path = dir.file("kc");
  auto err = [&](const std::string& text) {
    test::writeFile(path, text);
    auto a = loadKubeconfig(path, envOf({}));
    return a.ok() ? std::string("no error") : a.error();
  };
  EXPECT_EQ(err(kubeconfig("https://x", "", "    token: t\n", "nope")),
            "kubeconfig " + path + ": context \"nope\" (current-context) is not defined");
  EXPECT_EQ(err(kubeconfig("", "", "    token: t\n")),
            "kubeconfig " + path + ": cluster \"c\": server is missing");
  EXPECT_NE(
      err(kubeconfig("ftp://x", "", "    token: t\n")).find("is not an http(s)://host[:port] URL"),
      std::string::npos);
  EXPECT_EQ(
      err(kubeconfig("https://x", "    certificate-authority-data: '***'\n", "    token: t\n")),
      "kubeconfig " + path + ": cluster \"c\": certificate-authority-data is not valid base64");
  EXPECT_NE(
      err(kubeconfig("https://x", "    certificate-authority: nope.crt\n", "    token: t\n"))
          .find("cluster \"c\": certificate-authority " + dir.file("nope.crt") + ": cannot read"),
      std::string::npos);
  EXPECT_EQ(
      err(kubeconfig("https://x", "", "    client-certificate-data: " + base64Encode("C") + "\n")),
      "kubeconfig " + path + ": user \"u\": client-certificate given without client-key");
  EXPECT_NE(err(kubeconfig("https://x", "", "    exec: {command: aws}\n"))
                .find("exec credentials are not supported"),
            std::string::npos);
  EXPECT_NE(err("clusters: [\n").find("invalid YAML"), std::string::npos);
  EXPECT_NE(err("just text").find("not a kubeconfig"), std::string::npos);
}

TEST(ClusterAccessTest, InCluster) {
  test::TempDir dir;
  test::writeFile(dir.file("token"), "sa-token\n");
  test::writeFile(dir.file("ca.crt"), "CLUSTER CA");
  test::writeFile(dir.file("namespace"), "bob\n");
  auto a = loadInCluster(
      envOf({{"KUBERNETES_SERVICE_HOST", "10.43.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}}),
      dir.path().string());
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(a->server, "https://10.43.0.1:443");
  EXPECT_EQ(a->caPem, "CLUSTER CA");
  EXPECT_EQ(a->namespaceName, "bob");
  EXPECT_EQ(a->bearerToken().value(), "sa-token");
  auto v6 = loadInCluster(
      envOf({{"KUBERNETES_SERVICE_HOST", "fd00::1"}, {"KUBERNETES_SERVICE_PORT", "443"}}),
      dir.path().string());
  EXPECT_EQ(v6->server, "https://[fd00::1]:443");
  auto none = loadInCluster(envOf({}), dir.path().string());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().find("KUBERNETES_SERVICE_HOST"), std::string::npos);
}

TEST(ClusterAccessTest, ServerUrls) {
  std::string s, h, p;
  EXPECT_TRUE(parseServerUrl("https://[::1]:6443", s, h, p));
  EXPECT_EQ(h, "::1");
  EXPECT_EQ(p, "6443");
  EXPECT_TRUE(parseServerUrl("https://example.com/", s, h, p));
  EXPECT_EQ(p, "443");
  EXPECT_FALSE(parseServerUrl("https://example.com/prefix", s, h, p));
  EXPECT_FALSE(parseServerUrl("example.com:443", s, h, p));
}

} // namespace
} // namespace kuscia_host::kube
