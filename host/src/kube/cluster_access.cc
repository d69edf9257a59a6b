#include "kube/cluster_access.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "common/base64.h"

namespace kuscia_host::kube {
namespace {

namespace fs = std::filesystem;

Result<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError(path + ": cannot read: " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trim(std::string s) {
  while (!s.empty() &&
         (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t'))
    s.pop_back();
  return s;
}

// One kubeconfig file, parsed.
struct KubeconfigFile {
  std::string path;
  YAML::Node root;
};

// A named entry (cluster, user or context) and the file it came from.
struct Named {
  YAML::Node node;
  std::string file;
};

std::string str(const YAML::Node& n, const std::string& key) {
  if (!n.IsMap()) return ""; // a scalar or a list where a mapping belongs: operator[] would throw
  auto v = n[key];
  return v && v.IsScalar() ? v.Scalar() : "";
}

// Reads `<field>-data` (base64) or `<field>` (a path, relative to the kubeconfig's directory).
Result<std::string> dataOrFile(const YAML::Node& n, const std::string& field,
                               const std::string& file, const std::string& what) {
  std::string data = str(n, field + "-data");
  if (!data.empty()) {
    auto decoded = base64Decode(data);
    if (!decoded || decoded->empty())
      return makeError("kubeconfig " + file + ": " + what + ": " + field +
                       "-data is not valid base64");
    return *decoded;
  }
  std::string path = str(n, field);
  if (path.empty()) return std::string();
  fs::path p(path);
  if (p.is_relative()) p = fs::path(file).parent_path() / p;
  auto content = readFile(p.string());
  if (!content)
    return makeError("kubeconfig " + file + ": " + what + ": " + field + " " + content.error());
  return content;
}

} // namespace

EnvLookup processEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
  };
}

bool parseServerUrl(const std::string& url, std::string& scheme, std::string& host,
                    std::string& port) {
  auto sep = url.find("://");
  if (sep == std::string::npos) return false;
  scheme = url.substr(0, sep);
  if (scheme != "https" && scheme != "http") return false;
  std::string rest = url.substr(sep + 3);
  if (auto slash = rest.find('/'); slash != std::string::npos) {
    if (rest.find_first_not_of('/', slash) != std::string::npos) return false; // no path prefixes
    rest = rest.substr(0, slash);
  }
  if (!rest.empty() && rest.front() == '[') {
    auto close = rest.find(']');
    if (close == std::string::npos) return false;
    host = rest.substr(1, close - 1);
    rest = rest.substr(close + 1);
    port = rest.empty() ? "" : rest.substr(1);
    if (!rest.empty() && rest[0] != ':') return false;
  } else {
    auto colon = rest.rfind(':');
    host = rest.substr(0, colon);
    port = colon == std::string::npos ? "" : rest.substr(colon + 1);
  }
  if (port.empty()) port = scheme == "https" ? "443" : "80";
  return !host.empty() && port.find_first_not_of("0123456789") == std::string::npos;
}

Result<std::string> ClusterAccess::bearerToken() const {
  if (scheme != "https") return std::string(); // never send credentials in clear text
  if (!tokenFile.empty()) {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(tokenCache_->mu);
    TokenCache& c = *tokenCache_;
    if (c.path == tokenFile && now - c.readAt < tokenReread) return c.token;
    auto t = readFile(tokenFile);
    if (!t) return makeError("token file " + t.error()); // read again on the next request
    c.path = tokenFile;
    c.token = trim(*t);
    c.readAt = now;
    return c.token;
  }
  return token;
}

namespace {

// The kubeconfig files to read: `path`, else $KUBECONFIG's list, else ~/.kube/config.
Result<std::vector<std::string>> kubeconfigPaths(const std::string& path, const EnvLookup& env) {
  std::vector<std::string> paths;
  if (!path.empty()) {
    paths.push_back(path);
  } else if (auto list = env("KUBECONFIG"); list && !list->empty()) {
    std::stringstream ss(*list);
    for (std::string p; std::getline(ss, p, ':');)
      if (!p.empty()) paths.push_back(p);
  } else if (auto home = env("HOME"); home && !home->empty()) {
    paths.push_back(*home + "/.kube/config");
  } else {
    return makeError("no kubeconfig: set cluster.kubeconfig, $KUBECONFIG or $HOME");
  }
  return paths;
}

// The files read and parsed; missing entries of a $KUBECONFIG list are skipped, as kubectl does.
Result<std::vector<KubeconfigFile>> readKubeconfigs(const std::vector<std::string>& paths,
                                                    bool explicitPath) {
  std::vector<KubeconfigFile> files;
  for (const auto& p : paths) {
    auto text = readFile(p);
    if (!text) {
      if (explicitPath || paths.size() == 1) return makeError("kubeconfig " + text.error());
      continue;
    }
    try {
      files.push_back({p, YAML::Load(*text)});
    } catch (const YAML::Exception& e) {
      return makeError("kubeconfig " + p + ":" + std::to_string(e.mark.line + 1) +
                       ": invalid YAML: " + e.msg);
    }
    if (!files.back().root.IsMap())
      return makeError("kubeconfig " + p +
                       ": not a kubeconfig (expected a mapping with clusters, users, contexts)");
  }
  return files;
}

// The files merged: the first file that names an entry (or sets current-context) wins.
struct MergedKubeconfig {
  std::map<std::string, Named> clusters, users, contexts;
  std::string current;     // current-context
  std::string currentFile; // the file that set it
};

// Adds the entries of `f`'s list (clusters, users, contexts) that no earlier file named.
Result<void> collectEntries(const KubeconfigFile& f, const char* list, const char* inner,
                            std::map<std::string, Named>& out) {
  auto seq = f.root[list];
  if (!seq) return {};
  if (!seq.IsSequence()) return makeError("kubeconfig " + f.path + ": " + list + " must be a list");
  for (const auto& item : seq) {
    std::string name = str(item, "name");
    if (name.empty())
      return makeError("kubeconfig " + f.path + ": an entry of " + list + " has no name");
    if (!item[inner] || !item[inner].IsMap())
      return makeError("kubeconfig " + f.path + ": " + list + " entry \"" + name + "\" has no " +
                       inner + " mapping");
    out.emplace(name, Named{item[inner], f.path});
  }
  return {};
}

Result<MergedKubeconfig> mergeKubeconfigs(const std::vector<KubeconfigFile>& files) {
  MergedKubeconfig m;
  for (const auto& f : files) {
    if (auto r = collectEntries(f, "clusters", "cluster", m.clusters); !r)
      return makeError(r.error());
    if (auto r = collectEntries(f, "users", "user", m.users); !r) return makeError(r.error());
    if (auto r = collectEntries(f, "contexts", "context", m.contexts); !r)
      return makeError(r.error());
    if (m.current.empty() && !str(f.root, "current-context").empty()) {
      m.current = str(f.root, "current-context");
      m.currentFile = f.path;
    }
  }
  return m;
}

// The cluster's server and TLS settings into `a`.
Result<void> readCluster(const Named& cluster, const std::string& clusterName, ClusterAccess& a) {
  const auto& c = cluster.node;
  std::string what = "cluster \"" + clusterName + "\"";
  a.server = str(c, "server");
  if (a.server.empty())
    return makeError("kubeconfig " + cluster.file + ": " + what + ": server is missing");
  if (!parseServerUrl(a.server, a.scheme, a.host, a.port))
    return makeError("kubeconfig " + cluster.file + ": " + what + ": server \"" + a.server +
                     "\" is not an http(s)://host[:port] URL");
  a.insecureSkipTlsVerify = str(c, "insecure-skip-tls-verify") == "true";
  a.tlsServerName = str(c, "tls-server-name");
  auto ca = dataOrFile(c, "certificate-authority", cluster.file, what);
  if (!ca) return makeError(ca.error());
  a.caPem = *ca;
  return {};
}

// The user's credentials into `a`: a token, a token file or a client certificate.
Result<void> readUser(const Named& user, const std::string& userName, ClusterAccess& a) {
  const auto& n = user.node;
  std::string uwhat = "user \"" + userName + "\"";
  a.token = str(n, "token");
  a.tokenFile = str(n, "tokenFile");
  if (!a.tokenFile.empty() && fs::path(a.tokenFile).is_relative())
    a.tokenFile = (fs::path(user.file).parent_path() / a.tokenFile).string();
  auto cert = dataOrFile(n, "client-certificate", user.file, uwhat);
  if (!cert) return makeError(cert.error());
  auto key = dataOrFile(n, "client-key", user.file, uwhat);
  if (!key) return makeError(key.error());
  a.clientCertPem = *cert;
  a.clientKeyPem = *key;
  if (a.clientCertPem.empty() != a.clientKeyPem.empty())
    return makeError("kubeconfig " + user.file + ": " + uwhat + ": " +
                     (a.clientCertPem.empty() ? "client-key given without client-certificate"
                                              : "client-certificate given without client-key"));
  for (const char* unsupported : {"exec", "auth-provider", "username"})
    if (n[unsupported])
      return makeError(
          "kubeconfig " + user.file + ": " + uwhat + ": " + unsupported +
          " credentials are not supported (use a token, a tokenFile or a client certificate)");
  return {};
}

} // namespace

Result<ClusterAccess> loadKubeconfig(const std::string& path, const EnvLookup& env,
                                     const std::string& contextOverride) {
  auto paths = kubeconfigPaths(path, env);
  if (!paths) return makeError(paths.error());
  auto files = readKubeconfigs(*paths, !path.empty());
  if (!files) return makeError(files.error());
  if (files->empty())
    return makeError("kubeconfig: none of " + (env("KUBECONFIG") ? *env("KUBECONFIG") : path) +
                     " exists");
  auto merged = mergeKubeconfigs(*files);
  if (!merged) return makeError(merged.error());
  std::string current = contextOverride.empty() ? merged->current : contextOverride;
  const std::string& firstPath = files->front().path;
  if (current.empty()) return makeError("kubeconfig " + firstPath + ": current-context is not set");
  auto ctx = merged->contexts.find(current);
  if (ctx == merged->contexts.end())
    return makeError("kubeconfig " +
                     (merged->currentFile.empty() ? firstPath : merged->currentFile) +
                     ": context \"" + current + "\" (current-context) is not defined");
  std::string clusterName = str(ctx->second.node, "cluster");
  std::string userName = str(ctx->second.node, "user");
  auto cl = merged->clusters.find(clusterName);
  if (clusterName.empty() || cl == merged->clusters.end())
    return makeError("kubeconfig " + ctx->second.file + ": context \"" + current +
                     "\": cluster \"" + clusterName + "\" is not defined");

  ClusterAccess a;
  a.description = "kubeconfig " + cl->second.file + " (context " + current + ")";
  a.namespaceName = str(ctx->second.node, "namespace");
  if (auto r = readCluster(cl->second, clusterName, a); !r) return makeError(r.error());
  if (!userName.empty()) {
    auto u = merged->users.find(userName);
    if (u == merged->users.end())
      return makeError("kubeconfig " + ctx->second.file + ": context \"" + current + "\": user \"" +
                       userName + "\" is not defined");
    if (auto r = readUser(u->second, userName, a); !r) return makeError(r.error());
  }
  return a;
}

Result<ClusterAccess> loadInCluster(const EnvLookup& env, const std::string& root) {
  auto host = env("KUBERNETES_SERVICE_HOST");
  auto port = env("KUBERNETES_SERVICE_PORT");
  if (!host || host->empty() || !port || port->empty())
    return makeError(
        "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set "
        "(is the host running in a pod?)");
  ClusterAccess a;
  a.scheme = "https";
  a.host = *host;
  a.port = *port;
  bool v6 = host->find(':') != std::string::npos;
  a.server = "https://" + (v6 ? "[" + *host + "]" : *host) + ":" + *port;
  a.tokenFile = root + "/token";
  if (auto t = readFile(a.tokenFile); !t) return makeError("in-cluster config: token " + t.error());
  auto ca = readFile(root + "/ca.crt");
  if (!ca) return makeError("in-cluster config: CA " + ca.error());
  a.caPem = *ca;
  if (auto ns = readFile(root + "/namespace")) a.namespaceName = trim(*ns);
  a.description = "in-cluster service account (" + a.server + ")";
  return a;
}

} // namespace kuscia_host::kube
