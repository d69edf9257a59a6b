// The host configuration file (YAML): its typed form, the schema it is validated against, and the
// loader that reports every problem with the file, line, column and key path.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/defaults.h"

namespace kuscia_host {

struct PluginEntry {
  std::string name;
  std::string path; // resolved absolute path of the .so
  bool required = true;
  std::string logLevel;          // empty: the host's level
  std::string configJson = "{}"; // the `config` subtree as JSON
  std::string keyPath;           // domains[i].plugins[j], for messages
  int line = 0;                  // of the name
  int column = 0;
  // Where `config` and each of its keys are (line, column), for messages about plugin settings.
  std::pair<int, int> configMark{0, 0};
  std::map<std::string, std::pair<int, int>> configKeyMarks;
};

struct DomainConfig {
  std::string id;
  std::vector<PluginEntry> plugins;
};

struct ClusterConfig {
  enum class Source { kNone, kKubeconfig, kInCluster, kEmbedded };
  Source source = Source::kNone;
  std::string kubeconfig;
  std::string embeddedListen = defaults::kEmbeddedListen;
  std::string embeddedKubeconfigOut;
  std::string embeddedTokenAuthFile; // identities for TokenReview (kube-apiserver's format)
  double qps = defaults::kQps;
  int burst = defaults::kBurst;
  int watchBatchMillis = defaults::kWatchBatchMillis;
};

// Who may read the admin server, and over what (docs/operators/admin-http.md).
struct AdminAccess {
  enum class Auth { kNone, kToken, kKubernetes };
  bool tls = false;        // admin.tls is set: serve HTTPS
  bool selfSigned = false; // a certificate generated at start (its CA written to caOut)
  std::string caOut;
  std::string certFile, keyFile;
  int reloadSeconds = 10; // certFile, keyFile and clientCAFile are read again this often
  Auth auth = Auth::kNone;
  std::string tokenFile;    // auth: token
  std::string clientCAFile; // client certificates signed by it authenticate too
  bool allowUnauthenticated = false;
};

// Whether "host:port" listens on loopback only (127.0.0.0/8, ::1, localhost).
bool isLoopbackListen(const std::string& listen);
// The refusal to serve the admin endpoints off loopback without authentication, "" when allowed.
std::string adminExposureProblem(const std::string& listen, const AdminAccess& access);

struct HostConfig {
  std::string file;
  std::string mode = defaults::kMode;
  std::string logLevel = defaults::kLogLevel;
  std::string logFormat = defaults::kLogFormat;
  std::string adminListen = defaults::kAdminListen;
  AdminAccess adminAccess;
  std::string metricsListen; // admin.metricsListen: /metrics alone, plain HTTP ("": none)
  int workerThreads = defaults::kWorkerThreads;
  ClusterConfig cluster;
  std::vector<std::string> pluginDirs;
  std::vector<DomainConfig> domains;
};

// One problem in a config file. line/column are 1-based; 0 when unknown.
struct ConfigDiagnostic {
  std::string file;
  int line = 0;
  int column = 0;
  std::string keyPath; // e.g. domains[0].plugins[1].name
  std::string message;

  std::string str() const;
};

struct ConfigLoadResult {
  std::optional<HostConfig> config; // set only when there are no errors
  std::vector<ConfigDiagnostic> errors;
};

struct ConfigLoadOptions {
  // Searched before the file's pluginDirs (e.g. from --plugin-dir). Absolute paths.
  std::vector<std::string> extraPluginDirs;
  // Used when the file has no pluginDirs; directories that do not exist are skipped silently.
  std::vector<std::string> defaultPluginDirs;
};

// <name>.so in the first of `dirs` that has it (a regular file); "" when none does. How a plugin
// named in a config is found.
std::string findPluginFile(const std::string& name, const std::vector<std::string>& dirs);

// Loads and validates a config file. Never throws.
ConfigLoadResult loadHostConfig(const std::string& path, const ConfigLoadOptions& options = {});
// Same, from text already in memory; `file` is only used in messages.
ConfigLoadResult parseHostConfig(const std::string& text, const std::string& file,
                                 const ConfigLoadOptions& options = {});

// The reference of every config key, generated from the schema (for --help and docs).
std::string configReference();

} // namespace kuscia_host
