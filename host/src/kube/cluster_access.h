// How to reach a Kubernetes API server: loaded from a kubeconfig (explicit path, $KUBECONFIG list
// or ~/.kube/config), from a pod's service account (in-cluster), or taken from the embedded API
// server. Every problem is an error naming the file and the field.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/result.h"

namespace kuscia_host::kube {

struct ClusterAccess {
  std::string server; // "https://10.0.0.1:6443", "http://127.0.0.1:8080"
  std::string scheme; // "https" or "http"
  std::string host;
  std::string port;
  std::string caPem; // PEM bundle to verify the server; empty: the system's trust store
  bool insecureSkipTlsVerify = false;
  std::string tlsServerName; // SNI and name to verify, when it differs from host
  std::string token;         // static bearer token
  std::string tokenFile;     // read again once tokenReread has passed; wins over token
  // How long a token read from tokenFile is sent before the file is read again. A projected
  // service account token is rotated by the kubelet well before it expires, and client-go reads
  // the file about once a minute too; reading it on every request cost each request four system
  // calls. 0: read on every request.
  std::chrono::seconds tokenReread{60};
  std::string clientCertPem;
  std::string clientKeyPem;
  std::string namespaceName; // the context's (or the pod's) namespace, "" when unset
  std::string description;   // where this came from, for logs and errors

  // The bearer token to send now (tokenFile read again when due), or "" when none. Credentials
  // are only ever sent over https. Thread-safe.
  Result<std::string> bearerToken() const;

private:
  // What tokenFile held when it was last read, shared by the copies of this access.
  struct TokenCache {
    std::mutex mu;
    std::string path, token;
    std::chrono::steady_clock::time_point readAt;
  };
  std::shared_ptr<TokenCache> tokenCache_ = std::make_shared<TokenCache>();
};

// Reads an environment variable; injectable for tests.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup processEnv();

// `path` given: that file. Otherwise $KUBECONFIG (a ':'-separated list; for every cluster, user
// and context name and for current-context, the first file that sets it wins), else
// $HOME/.kube/config. `context` overrides current-context when not empty.
Result<ClusterAccess> loadKubeconfig(const std::string& path, const EnvLookup& env = processEnv(),
                                     const std::string& context = "");

// In-cluster: KUBERNETES_SERVICE_HOST/PORT, and token, ca.crt and namespace under `root`.
Result<ClusterAccess>
loadInCluster(const EnvLookup& env = processEnv(),
              const std::string& root = "/var/run/secrets/kubernetes.io/serviceaccount");

// Splits "https://host:port" into scheme, host and port (default port by scheme); false when
// malformed.
bool parseServerUrl(const std::string& url, std::string& scheme, std::string& host,
                    std::string& port);

} // namespace kuscia_host::kube
