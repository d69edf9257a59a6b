#include "config/config.h"

#include <boost/asio/ip/address.hpp>

#include <kuscia_host/kube_text.hpp>

#include "common/listen_address.h"

#include "common/yaml_json.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <yaml-cpp/yaml.h>

namespace kuscia_host {
namespace {

// ---------------------------------------------------------------------------------------------
// Schema: the config's shape, as data. Validation and the reference text both come from it.
// ---------------------------------------------------------------------------------------------
enum class Type { kString, kInteger, kNumber, kBoolean, kMap, kList, kAny };

struct SchemaNode {
  Type type = Type::kString;
  std::string description;
  std::string defaultText;
  std::vector<std::string> enumValues;
  std::vector<std::pair<std::string, const SchemaNode*>> fields;
  std::vector<std::string> required;
  const SchemaNode* items = nullptr;
  int64_t min = INT64_MIN;
  int64_t max = INT64_MAX;
};

const char* typeName(Type t) {
  switch (t) {
  case Type::kString: return "string";
  case Type::kInteger: return "integer";
  case Type::kNumber: return "number";
  case Type::kBoolean: return "boolean";
  case Type::kMap: return "mapping";
  case Type::kList: return "list";
  case Type::kAny: return "any";
  }
  return "?";
}

// Built once; immutable afterwards.
struct Schema {
  SchemaNode logLevel{
      Type::kString, "log level", "", {"trace", "debug", "info", "warn", "error", "off"}};
  SchemaNode mode{Type::kString,
                  "deployment mode: centralized (one cluster, many domains) or p2p (one domain)",
                  defaults::kMode,
                  {"centralized", "p2p"}};
  SchemaNode hostLogLevel{Type::kString,
                          "host log level",
                          defaults::kLogLevel,
                          {"trace", "debug", "info", "warn", "error", "off"}};
  SchemaNode logFormat{Type::kString, "log line format", defaults::kLogFormat, {"text", "json"}};
  SchemaNode listen{Type::kString, "address:port to listen on; port 0 picks a free port",
                    defaults::kAdminListen};
  SchemaNode admin{Type::kMap, "the admin HTTP server (/livez, /readyz, /metrics, plugin routes)"};
  SchemaNode certFile{Type::kString, "PEM certificate (chain) the admin server presents"};
  SchemaNode keyFile{Type::kString, "PEM private key of certFile"};
  SchemaNode selfSigned{Type::kBoolean,
                        "generate a CA and a certificate at start instead of certFile/keyFile",
                        "false"};
  SchemaNode reloadSeconds{
      Type::kInteger,
      "certFile, keyFile (and clientCAFile) are read again this often: renewed "
      "files (cert-manager) serve new connections, open ones keep theirs",
      "10",
      {},
      {},
      {},
      nullptr,
      1,
      3600};
  SchemaNode caOut{Type::kString,
                   "with selfSigned: where the generated CA certificate is written (PEM), for "
                   "clients to verify the admin server with (a command's --ca-file)"};
  SchemaNode tls{Type::kMap, "serve HTTPS: certFile and keyFile, or selfSigned: true"};
  SchemaNode auth{Type::kString,
                  "who may read everything but /livez and /readyz: none, token (tokenFile), or "
                  "kubernetes (TokenReview and SubjectAccessReview against the cluster)",
                  "none",
                  {"none", "token", "kubernetes"}};
  SchemaNode tokenFile{Type::kString,
                       "auth: token: one 'token name' pair per line (# comments), re-read when it "
                       "changes"};
  SchemaNode clientCAFile{Type::kString,
                          "PEM CA whose client certificates authenticate too (needs tls)"};
  SchemaNode allowUnauthenticated{Type::kBoolean,
                                  "the only way to serve off loopback with auth: none", "false"};
  SchemaNode metricsListen{Type::kString,
                           "also serve /metrics alone over plain HTTP, without authentication, "
                           "on this address:port (Kuscia's metric exporter scrapes it so); "
                           "metrics hold no user data"};
  SchemaNode workerThreads{Type::kInteger,
                           "threads running plugin callbacks and I/O",
                           std::to_string(defaults::kWorkerThreads),
                           {},
                           {},
                           {},
                           nullptr,
                           1,
                           64};
  SchemaNode kubeconfig{Type::kString, "path of a kubeconfig file"};
  SchemaNode inCluster{Type::kBoolean, "use the pod's service account", "false"};
  SchemaNode embeddedListen{Type::kString, "address the embedded API server listens on",
                            defaults::kEmbeddedListen};
  SchemaNode kubeconfigOut{Type::kString, "where the embedded API server writes its kubeconfig"};
  SchemaNode tokenAuthFile{Type::kString,
                           "identities for its TokenReviews and bearer tokens, as "
                           "kube-apiserver's --token-auth-file (token,user,uid,\"groups\")"};
  SchemaNode embedded{Type::kMap, "run the embedded Kubernetes-compatible API server in the host"};
  SchemaNode qps{Type::kNumber, "client-side rate limit for writes and lists, requests/s",
                 std::to_string(defaults::kQps)};
  SchemaNode watchBatch{Type::kInteger,
                        "a watch is read at most once per this many ms, the events that came "
                        "meanwhile together; 0 reads each as it comes",
                        std::to_string(defaults::kWatchBatchMillis),
                        {},
                        {},
                        {},
                        nullptr,
                        0,
                        1000};
  SchemaNode burst{Type::kInteger,
                   "client-side rate limit burst",
                   std::to_string(defaults::kBurst),
                   {},
                   {},
                   {},
                   nullptr,
                   1,
                   100000};
  SchemaNode cluster{
      Type::kMap,
      "how to reach the Kubernetes API server (one of kubeconfig, inCluster, embedded)"};
  SchemaNode dir{Type::kString, "absolute path"};
  SchemaNode pluginDirs{Type::kList, "directories searched for <plugin-name>.so, in order",
                        "the packaged plugin directory"};
  SchemaNode pluginName{Type::kString, "plugin name; the host loads <name>.so from pluginDirs"};
  SchemaNode pluginPath{Type::kString,
                        "absolute path of the plugin .so (instead of searching pluginDirs)"};
  SchemaNode required{
      Type::kBoolean,
      "true: a failing plugin stops the host; false: only this instance is disabled", "true"};
  SchemaNode pluginConfig{Type::kAny, "the plugin's own configuration, passed to it as JSON"};
  SchemaNode plugin{Type::kMap, "one plugin instance for the domain"};
  SchemaNode plugins{Type::kList, "plugins enabled for this domain"};
  SchemaNode domainId{Type::kString, "domain id (a DNS label, also the domain's namespace)"};
  SchemaNode domain{Type::kMap, "a domain served by this host"};
  SchemaNode domains{Type::kList, "the domains this host serves (exactly one in p2p mode)"};
  SchemaNode root{Type::kMap, "kuscia-host configuration"};

  Schema() {
    tls.fields = {{"certFile", &certFile},
                  {"keyFile", &keyFile},
                  {"selfSigned", &selfSigned},
                  {"reloadSeconds", &reloadSeconds},
                  {"caOut", &caOut}};
    admin.fields = {{"listen", &listen},
                    {"tls", &tls},
                    {"auth", &auth},
                    {"tokenFile", &tokenFile},
                    {"clientCAFile", &clientCAFile},
                    {"allowUnauthenticated", &allowUnauthenticated},
                    {"metricsListen", &metricsListen}};
    embedded.fields = {{"listen", &embeddedListen},
                       {"kubeconfigOut", &kubeconfigOut},
                       {"tokenAuthFile", &tokenAuthFile}};
    cluster.fields = {{"kubeconfig", &kubeconfig}, {"inCluster", &inCluster},
                      {"embedded", &embedded},     {"qps", &qps},
                      {"burst", &burst},           {"watchBatchMillis", &watchBatch}};
    pluginDirs.items = &dir;
    plugin.fields = {{"name", &pluginName},
                     {"path", &pluginPath},
                     {"required", &required},
                     {"logLevel", &logLevel},
                     {"config", &pluginConfig}};
    plugin.required = {"name"};
    plugins.items = &plugin;
    domain.fields = {{"id", &domainId}, {"plugins", &plugins}};
    domain.required = {"id"};
    domains.items = &domain;
    root.fields = {{"mode", &mode},
                   {"logLevel", &hostLogLevel},
                   {"logFormat", &logFormat},
                   {"admin", &admin},
                   {"workerThreads", &workerThreads},
                   {"cluster", &cluster},
                   {"pluginDirs", &pluginDirs},
                   {"domains", &domains}};
    root.required = {"domains"};
  }
};

const Schema& schema() {
  static const Schema s;
  return s;
}

// ---------------------------------------------------------------------------------------------
// Validation against the schema
// ---------------------------------------------------------------------------------------------
class Validator {
public:
  Validator(std::string file, std::vector<ConfigDiagnostic>& out)
      : file_(std::move(file)), out_(out) {}

  void error(const YAML::Node& at, const std::string& path, const std::string& message) {
    const auto& m = at.Mark();
    error(m, path, message);
  }
  void error(const YAML::Mark& m, const std::string& path, const std::string& message) {
    out_.push_back(
        {file_, m.line >= 0 ? m.line + 1 : 0, m.column >= 0 ? m.column + 1 : 0, path, message});
  }

  static bool isPlainScalar(const YAML::Node& n) { return n.IsScalar() && n.Tag() != "!"; }

  void validate(const YAML::Node& n, const SchemaNode& s, const std::string& path) {
    switch (s.type) {
    case Type::kAny: return;
    case Type::kMap: return validateMap(n, s, path);
    case Type::kList:
      if (!n.IsSequence()) return typeError(n, s, path);
      for (std::size_t i = 0; i < n.size(); ++i)
        validate(n[i], *s.items, path + "[" + std::to_string(i) + "]");
      return;
    case Type::kString:
      if (!n.IsScalar()) return typeError(n, s, path);
      if (!s.enumValues.empty()) {
        const auto& v = n.Scalar();
        bool found = false;
        for (const auto& e : s.enumValues)
          found = found || e == v;
        if (!found) error(n, path, "'" + v + "' is not one of: " + join(s.enumValues));
      }
      return;
    case Type::kInteger: {
      int64_t v = 0;
      if (!isPlainScalar(n) || !parseInt(n.Scalar(), v)) return typeError(n, s, path);
      if (v < s.min || v > s.max)
        error(n, path,
              std::to_string(v) + " is outside [" + std::to_string(s.min) + ", " +
                  std::to_string(s.max) + "]");
      return;
    }
    case Type::kNumber: {
      double d = 0;
      if (!isPlainScalar(n) || !YAML::convert<double>::decode(n, d)) return typeError(n, s, path);
      if (d <= 0) error(n, path, "must be greater than 0");
      return;
    }
    case Type::kBoolean: {
      if (!isPlainScalar(n) || (n.Scalar() != "true" && n.Scalar() != "false"))
        return typeError(n, s, path);
      return;
    }
    }
  }

  static bool parseInt(const std::string& s, int64_t& v) {
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    return r.ec == std::errc() && r.ptr == s.data() + s.size();
  }

private:
  void typeError(const YAML::Node& n, const SchemaNode& s, const std::string& path) {
    std::string got = n.IsMap()        ? "a mapping"
                      : n.IsSequence() ? "a list"
                      : n.IsNull()     ? "nothing"
                                       : "'" + n.Scalar() + "'";
    error(n, path, std::string("expected ") + typeName(s.type) + ", got " + got);
  }

  void validateMap(const YAML::Node& n, const SchemaNode& s, const std::string& path) {
    if (!n.IsMap()) return typeError(n, s, path);
    std::map<std::string, int> seen;
    for (auto it = n.begin(); it != n.end(); ++it) {
      const YAML::Node k = it->first; // a copy: it->first refers into a temporary
      std::string key = k.IsScalar() ? k.Scalar() : "?";
      std::string childPath = path.empty() ? key : path + "." + key;
      if (!k.IsScalar()) {
        error(k, path, "keys must be plain strings");
        continue;
      }
      if (auto [pos, inserted] = seen.emplace(key, k.Mark().line + 1); !inserted) {
        error(k, childPath, "duplicate key (first at line " + std::to_string(pos->second) + ")");
        continue;
      }
      const SchemaNode* child = nullptr;
      for (const auto& [name, node] : s.fields)
        if (name == key) child = node;
      if (child == nullptr) {
        std::vector<std::string> names;
        for (const auto& f : s.fields)
          names.push_back(f.first);
        error(k, childPath, "unknown key '" + key + "' (expected one of: " + join(names) + ")");
        continue;
      }
      const YAML::Node value = it->second;
      validate(value, *child, childPath);
    }
    for (const auto& r : s.required)
      if (seen.find(r) == seen.end())
        error(n, path.empty() ? r : path + "." + r, "missing required key '" + r + "'");
  }

  static std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& e : v)
      s += (s.empty() ? "" : ", ") + e;
    return s;
  }

  std::string file_;
  std::vector<ConfigDiagnostic>& out_;
};

std::string describeDirProblem(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::path(dir).is_absolute()) return "plugin directory must be an absolute path";
  auto st = std::filesystem::status(dir, ec);
  if (ec || !std::filesystem::exists(st)) return "plugin directory does not exist";
  if (!std::filesystem::is_directory(st)) return "not a directory";
  if (::access(dir.c_str(), R_OK | X_OK) != 0)
    return std::string("cannot read directory: ") + std::strerror(errno);
  return "";
}

// ---------------------------------------------------------------------------------------------
// Extraction of the typed config (after schema validation) plus the checks that span keys.
// ---------------------------------------------------------------------------------------------
void checkListen(const YAML::Node& n, Validator& v, const std::string& key,
                 const std::string& value) {
  std::string h;
  unsigned short p = 0;
  if (!parseListenAddress(value, h, p)) v.error(n, key, "expected host:port, got '" + value + "'");
}

// A file the host reads at start: it must be there and readable.
void checkReadable(const YAML::Node& n, Validator& v, const std::string& key) {
  const std::string& path = n.Scalar();
  if (path.empty() || path[0] != '/') return v.error(n, key, "must be an absolute path");
  if (::access(path.c_str(), R_OK) != 0)
    v.error(n, key, "cannot read " + path + ": " + std::strerror(errno));
}

void extractAdmin(const YAML::Node& admin, Validator& v, HostConfig& c) {
  AdminAccess& a = c.adminAccess;
  if (auto n = admin["listen"]) {
    c.adminListen = n.Scalar();
    checkListen(n, v, "admin.listen", c.adminListen);
  }
  if (auto tls = admin["tls"]) {
    a.tls = true;
    a.selfSigned = tls["selfSigned"] && tls["selfSigned"].Scalar() == "true";
    bool files = tls["certFile"] || tls["keyFile"];
    if (a.selfSigned && files)
      v.error(tls, "admin.tls", "set either certFile and keyFile, or selfSigned: true");
    else if (!a.selfSigned && !(tls["certFile"] && tls["keyFile"]))
      v.error(tls, "admin.tls", "set certFile and keyFile (PEM), or selfSigned: true");
    for (const char* key : {"certFile", "keyFile"})
      if (auto n = tls[key]) checkReadable(n, v, std::string("admin.tls.") + key);
    if (auto n = tls["certFile"]) a.certFile = n.Scalar();
    if (auto n = tls["keyFile"]) a.keyFile = n.Scalar();
    if (auto n = tls["reloadSeconds"]) a.reloadSeconds = n.as<int>();
    if (auto n = tls["caOut"]) {
      a.caOut = n.Scalar();
      if (!a.selfSigned) v.error(n, "admin.tls.caOut", "only with selfSigned: true");
    }
  }
  std::string auth = admin["auth"] ? admin["auth"].Scalar() : "none";
  a.auth = auth == "token"        ? AdminAccess::Auth::kToken
           : auth == "kubernetes" ? AdminAccess::Auth::kKubernetes
                                  : AdminAccess::Auth::kNone;
  if (auto n = admin["tokenFile"]) {
    a.tokenFile = n.Scalar();
    if (a.auth != AdminAccess::Auth::kToken)
      v.error(n, "admin.tokenFile", "only read with auth: token (auth is " + auth + ")");
    else
      checkReadable(n, v, "admin.tokenFile");
  } else if (a.auth == AdminAccess::Auth::kToken) {
    v.error(admin["auth"], "admin.auth", "auth: token needs admin.tokenFile");
  }
  if (auto n = admin["clientCAFile"]) {
    a.clientCAFile = n.Scalar();
    if (!a.tls)
      v.error(n, "admin.clientCAFile", "client certificates need admin.tls");
    else
      checkReadable(n, v, "admin.clientCAFile");
  }
  if (a.auth == AdminAccess::Auth::kKubernetes && c.cluster.source == ClusterConfig::Source::kNone)
    v.error(admin["auth"], "admin.auth",
            "auth: kubernetes asks the cluster (TokenReview, SubjectAccessReview): set cluster");
  a.allowUnauthenticated =
      admin["allowUnauthenticated"] && admin["allowUnauthenticated"].Scalar() == "true";
  if (auto n = admin["metricsListen"]) {
    c.metricsListen = n.Scalar();
    checkListen(n, v, "admin.metricsListen", c.metricsListen);
  }
  std::string host;
  unsigned short port = 0;
  if (!parseListenAddress(c.adminListen, host, port)) return; // already reported
  if (std::string problem = adminExposureProblem(c.adminListen, a); !problem.empty())
    v.error(admin["listen"] ? admin["listen"] : admin, "admin.listen", problem);
}

void extractCluster(const YAML::Node& cl, Validator& v, ClusterConfig& c) {
  int sources = 0;
  if (auto n = cl["kubeconfig"]) {
    ++sources;
    c.source = ClusterConfig::Source::kKubeconfig;
    c.kubeconfig = n.Scalar();
  }
  if (auto n = cl["inCluster"]; n && n.Scalar() == "true") {
    ++sources;
    c.source = ClusterConfig::Source::kInCluster;
  }
  if (auto n = cl["embedded"]) {
    ++sources;
    c.source = ClusterConfig::Source::kEmbedded;
    if (n["listen"]) c.embeddedListen = n["listen"].Scalar();
    if (auto out = n["kubeconfigOut"]) {
      c.embeddedKubeconfigOut = out.Scalar();
      auto parent = std::filesystem::path(c.embeddedKubeconfigOut).parent_path();
      if (!std::filesystem::path(c.embeddedKubeconfigOut).is_absolute())
        v.error(out, "cluster.embedded.kubeconfigOut", "must be an absolute path");
      else if (!std::filesystem::is_directory(parent) || ::access(parent.c_str(), W_OK) != 0)
        v.error(out, "cluster.embedded.kubeconfigOut",
                "cannot write into " + parent.string() +
                    " (the directory must exist and be writable)");
    }
    checkListen(n, v, "cluster.embedded.listen", c.embeddedListen);
    if (auto file = n["tokenAuthFile"]) {
      c.embeddedTokenAuthFile = file.Scalar();
      checkReadable(file, v, "cluster.embedded.tokenAuthFile");
    }
  }
  if (sources > 1) v.error(cl, "cluster", "set only one of kubeconfig, inCluster and embedded");
  if (auto n = cl["qps"]) c.qps = n.as<double>();
  if (auto n = cl["burst"]) c.burst = n.as<int>();
  if (auto n = cl["watchBatchMillis"]) c.watchBatchMillis = n.as<int>();
}

// --plugin-dir first, then the file's pluginDirs, else the defaults that exist.
void extractPluginDirs(const YAML::Node& root, Validator& v, const ConfigLoadOptions& options,
                       std::vector<std::string>& out) {
  for (const auto& d : options.extraPluginDirs)
    out.push_back(d);
  auto dirs = root["pluginDirs"];
  if (!dirs) {
    for (const auto& d : options.defaultPluginDirs)
      if (describeDirProblem(d).empty()) out.push_back(d);
    return;
  }
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    std::string dir = dirs[i].Scalar();
    if (auto problem = describeDirProblem(dir); !problem.empty()) {
      v.error(dirs[i], "pluginDirs[" + std::to_string(i) + "]", problem + ": " + dir);
      continue;
    }
    out.push_back(dir);
  }
}

// The plugin's settings as JSON, with where each key is for messages about them.
void extractPluginConfig(const YAML::Node& n, Validator& v, const std::string& ppath,
                         PluginEntry& pe) {
  pe.configMark = {n.Mark().line + 1, n.Mark().column + 1};
  if (n.IsMap())
    for (const auto& kv : n)
      pe.configKeyMarks[kv.first.Scalar()] = {kv.first.Mark().line + 1, kv.first.Mark().column + 1};
  nlohmann::json j;
  try {
    j = yamlToJson(n);
  } catch (const YAML::ParserException& e) {
    // The plugin's config is JSON text, which must be UTF-8; YAML scalars are bytes.
    v.error(n, ppath + ".config", e.msg);
  }
  if (!j.is_null() && !j.is_object())
    v.error(n, ppath + ".config", "expected a mapping of plugin settings");
  pe.configJson = j.is_object() ? j.dump() : "{}";
}

// `path`, or <name>.so in the first plugin directory that has it.
void resolvePluginPath(const YAML::Node& p, Validator& v, const std::string& ppath,
                       const std::vector<std::string>& pluginDirs, PluginEntry& pe) {
  if (auto n = p["path"]) {
    pe.path = n.Scalar();
    std::error_code ec;
    if (!std::filesystem::path(pe.path).is_absolute())
      v.error(n, ppath + ".path", "plugin path must be absolute: " + pe.path);
    else if (!std::filesystem::is_regular_file(pe.path, ec))
      v.error(n, ppath + ".path", "no plugin file at " + pe.path);
    return;
  }
  pe.path = findPluginFile(pe.name, pluginDirs);
  if (!pe.path.empty()) return;
  std::string dirs;
  for (const auto& dir : pluginDirs)
    dirs += (dirs.empty() ? "" : ", ") + dir;
  v.error(p["name"], ppath + ".name",
          "unknown plugin '" + pe.name + "': no " + pe.name + ".so in " +
              (dirs.empty() ? std::string("any plugin directory (set pluginDirs)") : dirs));
}

PluginEntry extractPlugin(const YAML::Node& p, Validator& v, const std::string& ppath,
                          const std::vector<std::string>& pluginDirs) {
  PluginEntry pe;
  pe.name = p["name"].Scalar();
  pe.line = p["name"].Mark().line + 1;
  pe.column = p["name"].Mark().column + 1;
  pe.keyPath = ppath;
  if (auto n = p["required"]) pe.required = n.Scalar() == "true";
  if (auto n = p["logLevel"]) pe.logLevel = n.Scalar();
  if (auto n = p["config"]) extractPluginConfig(n, v, ppath, pe);
  resolvePluginPath(p, v, ppath, pluginDirs, pe);
  return pe;
}

DomainConfig extractDomain(const YAML::Node& d, Validator& v, const std::string& path,
                           const std::vector<std::string>& pluginDirs) {
  DomainConfig dc;
  dc.id = d["id"].Scalar();
  if (!sdk::isDnsLabel(dc.id))
    v.error(d["id"], path + ".id",
            "'" + dc.id +
                "' is not a valid domain id (lowercase letters, digits and '-', at most 63)");
  std::map<std::string, int> pluginLines;
  auto plugins = d["plugins"];
  for (std::size_t j = 0; plugins && j < plugins.size(); ++j) {
    std::string ppath = path + ".plugins[" + std::to_string(j) + "]";
    PluginEntry pe = extractPlugin(plugins[j], v, ppath, pluginDirs);
    if (auto [pos, inserted] = pluginLines.emplace(pe.name, pe.line); !inserted)
      v.error(plugins[j]["name"], ppath + ".name",
              "plugin '" + pe.name + "' is enabled twice for domain '" + dc.id +
                  "' (first at line " + std::to_string(pos->second) + ")");
    dc.plugins.push_back(std::move(pe));
  }
  return dc;
}

void extract(const YAML::Node& root, Validator& v, const ConfigLoadOptions& options,
             HostConfig& c) {
  if (auto n = root["mode"]) c.mode = n.Scalar();
  if (auto n = root["logLevel"]) c.logLevel = n.Scalar();
  if (auto n = root["logFormat"]) c.logFormat = n.Scalar();
  if (auto n = root["workerThreads"]) c.workerThreads = n.as<int>();
  if (auto cl = root["cluster"]) extractCluster(cl, v, c.cluster);
  if (auto admin = root["admin"]) extractAdmin(admin, v, c);
  extractPluginDirs(root, v, options, c.pluginDirs);
  auto domains = root["domains"];
  std::map<std::string, int> domainLines;
  for (std::size_t i = 0; i < domains.size(); ++i) {
    std::string path = "domains[" + std::to_string(i) + "]";
    DomainConfig dc = extractDomain(domains[i], v, path, c.pluginDirs);
    if (auto [pos, inserted] = domainLines.emplace(dc.id, domains[i]["id"].Mark().line + 1);
        !inserted)
      v.error(domains[i]["id"], path + ".id",
              "duplicate domain '" + dc.id + "' (first at line " + std::to_string(pos->second) +
                  ")");
    c.domains.push_back(std::move(dc));
  }
  if (c.domains.empty()) v.error(domains, "domains", "at least one domain is required");
  if (c.mode == "p2p" && c.domains.size() > 1)
    v.error(domains, "domains",
            "p2p mode serves exactly one domain, found " + std::to_string(c.domains.size()));
}

} // namespace

bool isLoopbackListen(const std::string& listen) {
  std::string host;
  unsigned short port = 0;
  if (!parseListenAddress(listen, host, port)) return false;
  if (host == "localhost") return true;
  boost::system::error_code ec;
  auto address = boost::asio::ip::make_address(host, ec);
  if (ec) return false;
  if (address.is_v6() && address.to_v6().is_v4_mapped())
    address = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, address.to_v6());
  return address.is_loopback();
}

std::string adminExposureProblem(const std::string& listen, const AdminAccess& access) {
  if (isLoopbackListen(listen)) return "";
  if (access.auth == AdminAccess::Auth::kNone && !access.allowUnauthenticated)
    return "the admin server would listen on " + listen +
           ", off loopback, with no authentication: set admin.auth (token or kubernetes), or "
           "admin.allowUnauthenticated: true to serve every client that reaches it";
  if (access.auth != AdminAccess::Auth::kNone && !access.tls)
    return "the admin server would take bearer tokens over plain HTTP on " + listen +
           ": set admin.tls (certFile and keyFile, or selfSigned: true)";
  return "";
}

std::string ConfigDiagnostic::str() const {
  std::ostringstream s;
  s << file;
  if (line > 0) s << ":" << line;
  if (column > 0) s << ":" << column;
  s << ": ";
  if (!keyPath.empty()) s << keyPath << ": ";
  s << message;
  return s.str();
}

std::string findPluginFile(const std::string& name, const std::vector<std::string>& dirs) {
  for (const auto& dir : dirs) {
    std::error_code ec;
    auto candidate = std::filesystem::path(dir) / (name + ".so");
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate.string();
  }
  return {};
}

ConfigLoadResult parseHostConfig(const std::string& text, const std::string& file,
                                 const ConfigLoadOptions& options) {
  ConfigLoadResult r;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    r.errors.push_back({file, e.mark.line + 1, e.mark.column + 1, "", "invalid YAML: " + e.msg});
    return r;
  } catch (const YAML::Exception& e) {
    r.errors.push_back({file, 0, 0, "", std::string("invalid YAML: ") + e.what()});
    return r;
  }
  Validator v(file, r.errors);
  if (!root.IsMap()) {
    r.errors.push_back(
        {file, 1, 1, "", "the config must be a mapping (see kuscia-host check-config --help)"});
    return r;
  }
  try {
    v.validate(root, schema().root, "");
    if (!r.errors.empty()) return r;
    HostConfig c;
    c.file = file;
    extract(root, v, options, c);
    if (r.errors.empty()) r.config = std::move(c);
  } catch (const YAML::Exception& e) {
    r.errors.push_back({file, e.mark.line + 1, e.mark.column + 1, "", e.msg});
  }
  return r;
}

ConfigLoadResult loadHostConfig(const std::string& path, const ConfigLoadOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ConfigLoadResult r;
    r.errors.push_back(
        {path, 0, 0, "", std::string("cannot read config file: ") + std::strerror(errno)});
    return r;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parseHostConfig(ss.str(), path, options);
}

std::string configReference() {
  std::ostringstream out;
  std::function<void(const SchemaNode&, const std::string&)> walk = [&](const SchemaNode& s,
                                                                        const std::string& path) {
    if (!path.empty()) {
      out << "  " << path << " (" << typeName(s.type) << ")";
      if (!s.defaultText.empty()) out << ", default " << s.defaultText;
      out << ": " << s.description;
      if (!s.enumValues.empty()) {
        out << " [";
        for (std::size_t i = 0; i < s.enumValues.size(); ++i)
          out << (i ? "|" : "") << s.enumValues[i];
        out << "]";
      }
      for (const auto& r : s.required)
        out << "; requires " << r;
      out << "\n";
    }
    for (const auto& [name, child] : s.fields)
      walk(*child, path.empty() ? name : path + "." + name);
    if (s.items != nullptr && s.items->type == Type::kMap) walk(*s.items, path + "[]");
  };
  walk(schema().root, "");
  return out.str();
}

} // namespace kuscia_host
