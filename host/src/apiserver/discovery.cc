// Discovery (/version, /api, /apis, per group-version resource lists), a minimal /openapi/v3 and
// /openapi/v2: enough for kubectl (get, describe, apply with validation, create -f of a List)
// and the official Python client.
#include <algorithm>
#include <string_view>

#include "apimachinery/paths.h"
#include "apiserver/api.h"
#include "apiserver/patch.h"

namespace kuscia_host::apiserver {

using nlohmann::json;

namespace {

json versionInfo(const ApiOptions& options) {
  // "v1.30.0-kuscia-host" -> "30"
  std::string minor = "30";
  if (options.gitVersion.rfind("v1.", 0) == 0) {
    std::size_t end = options.gitVersion.find_first_not_of("0123456789", 3);
    if (end != 3) minor = options.gitVersion.substr(3, end - 3);
  }
  return {{"major", "1"},          {"minor", minor},          {"gitVersion", options.gitVersion},
          {"gitCommit", ""},       {"gitTreeState", "clean"}, {"buildDate", "2026-01-01T00:00:00Z"},
          {"goVersion", "go1.22"}, {"compiler", "gc"},        {"platform", "linux/amd64"}};
}

std::vector<std::string> groups(const ResourceRegistry& registry) {
  std::vector<std::string> out;
  for (const auto& r : registry.all())
    if (!r->group.empty() && std::find(out.begin(), out.end(), r->group) == out.end())
      out.push_back(r->group);
  return out;
}

// One APIGroup entry: its versions, the first preferred.
json groupEntry(const ResourceRegistry& registry, const std::string& group) {
  json versions = json::array();
  for (const auto& gv : registry.groupVersions())
    if (gv.rfind(group + "/", 0) == 0)
      versions.push_back({{"groupVersion", gv}, {"version", gv.substr(group.size() + 1)}});
  return {{"name", group}, {"versions", versions}, {"preferredVersion", versions.at(0)}};
}

json resourceEntry(const ResourceInfo& r) {
  json e = {{"name", r.plural},
            {"singularName", r.singular},
            {"namespaced", r.namespaced},
            {"kind", r.kind},
            {"verbs", {"create", "delete", "get", "list", "patch", "update", "watch"}}};
  if (!r.shortNames.empty()) e["shortNames"] = r.shortNames;
  if (!r.builtin) e["categories"] = {"all", "kuscia"};
  return e;
}

// The APIResourceList of a group/version ("v1", "apps/v1", a CRD's group/version); nullopt if none.
std::optional<json> resourceList(const ResourceRegistry& registry, const std::string& gv) {
  json resources = json::array();
  for (const auto& r : registry.all()) {
    if (r->apiVersion() != gv) continue;
    resources.push_back(resourceEntry(*r));
    if (r->hasStatus)
      resources.push_back({{"name", r->plural + "/status"},
                           {"singularName", ""},
                           {"namespaced", r->namespaced},
                           {"kind", r->kind},
                           {"verbs", {"get", "patch", "update"}}});
  }
  if (resources.empty()) return std::nullopt;
  return json{{"kind", "APIResourceList"},
              {"apiVersion", "v1"},
              {"groupVersion", gv},
              {"resources", resources}};
}

// "api/v1" or "apis/<group>/<version>": how OpenAPI v3 names a group/version document.
std::string openapiPath(const ResourceInfo& r) {
  return r.group.empty() ? "api/" + r.version : "apis/" + r.apiVersion();
}

json openapiIndex(const ResourceRegistry& registry) {
  json paths = json::object();
  for (const auto& g : registry.groupVersions()) {
    std::string p = g.find('/') == std::string::npos ? "api/" + g : "apis/" + g;
    paths[p] = {{"serverRelativeURL", "/openapi/v3/" + p + "?hash=kh1"}};
  }
  return {{"paths", paths}};
}

// Adds one resource's paths and schema: each PATCH operation carries its group/version/kind and
// a fieldValidation parameter, which is what kubectl apply (1.29+) looks for.
void addOpenapiResource(const ResourceInfo& r, json& paths, json& schemas) {
  json gvk = {{"group", r.group}, {"version", r.version}, {"kind", r.kind}};
  json params =
      json::array({{{"name", "fieldValidation"}, {"in", "query"}, {"schema", {{"type", "string"}}}},
                   {{"name", "fieldManager"}, {"in", "query"}, {"schema", {{"type", "string"}}}},
                   {{"name", "dryRun"}, {"in", "query"}, {"schema", {{"type", "string"}}}}});
  std::string schemaName =
      (r.group.empty() ? "io.k8s.api.core.v1." : "secretflow.kuscia." + r.version + ".") + r.kind;
  json ref = {{"$ref", "#/components/schemas/" + schemaName}};
  json body = {{"content", {{kMergePatch, {{"schema", ref}}}, {kJsonPatch, {{"schema", ref}}}}}};
  json okResp = {
      {"200", {{"description", "OK"}, {"content", {{"application/json", {{"schema", ref}}}}}}}};
  json op = {
      {"x-kubernetes-group-version-kind", gvk}, {"parameters", params}, {"responses", okResp}};
  json patchOp = op;
  patchOp["requestBody"] = body;
  std::string collection =
      "/" + openapiPath(r) + (r.namespaced ? "/namespaces/{namespace}/" : "/") + r.plural;
  std::string item = collection + "/{name}";
  paths[item] = {{"get", op}, {"put", op}, {"patch", patchOp}, {"delete", op}};
  if (r.hasStatus) paths[item + "/status"] = {{"get", op}, {"put", op}, {"patch", patchOp}};
  paths[collection] = {{"get", op}, {"post", op}};
  schemas[schemaName] = {{"type", "object"},
                         {"x-kubernetes-group-version-kind", json::array({gvk})}};
}

// The OpenAPI v3 document of one group/version ("api/v1", ...); nullopt if unknown.
std::optional<json> openapiDocument(const ResourceRegistry& registry, const ApiOptions& options,
                                    const std::string& want) {
  json paths = json::object();
  json schemas = json::object();
  for (const auto& r : registry.all())
    if (openapiPath(*r) == want) addOpenapiResource(*r, paths, schemas);
  if (paths.empty()) return std::nullopt;
  return json{{"openapi", "3.0.0"},
              {"info", {{"title", "Kubernetes"}, {"version", options.gitVersion}}},
              {"paths", paths},
              {"components", {{"schemas", schemas}}}};
}

// The media type of the OpenAPI v2 document as protobuf (gnostic's openapi.v2.Document), which
// kubectl asks for alone when it validates a `kind: List` (client-side validation through v2).
constexpr std::string_view kOpenapiV2Protobuf = "application/com.github.proto-openapi.spec.v2";

// Appends a protobuf length-delimited field (wire type 2) holding `bytes`.
void appendField(std::string& out, unsigned field, std::string_view bytes) {
  out += static_cast<char>((field << 3) | 2);
  for (std::size_t n = bytes.size();; n >>= 7) { // the length, as a varint
    if (n < 0x80) {
      out += static_cast<char>(n);
      break;
    }
    out += static_cast<char>((n & 0x7f) | 0x80);
  }
  out += bytes;
}

// The OpenAPI v2 document: its version and info, no paths or definitions (kubectl's validation
// skips a kind it finds no schema of, as for the CRDs of a real server without one), as JSON or
// as gnostic's protobuf Document (swagger 1, info 2 {title 1, version 2}, paths 8,
// definitions 9).
ApiResponse openapiV2(const ApiOptions& options, const ApiRequest& req) {
  if (req.accept.find(kOpenapiV2Protobuf) == std::string::npos ||
      req.accept.find("json") != std::string::npos)
    return jsonResponse(200, {{"swagger", "2.0"},
                              {"info", {{"title", "Kubernetes"}, {"version", options.gitVersion}}},
                              {"paths", json::object()},
                              {"definitions", json::object()}});
  std::string info;
  appendField(info, 1, "Kubernetes");
  appendField(info, 2, options.gitVersion);
  ApiResponse r;
  appendField(r.body, 1, "2.0");
  appendField(r.body, 2, info);
  appendField(r.body, 8, "");
  appendField(r.body, 9, "");
  // As kube-openapi answers it: the media type asked for is no valid Content-Type ('@').
  r.contentType = "application/octet-stream";
  return r;
}

} // namespace

bool acceptsOpenapiV2Protobuf(const ApiRequest& req) {
  return req.path == "/openapi/v2" && req.accept.find(kOpenapiV2Protobuf) != std::string::npos;
}

std::optional<ApiResponse> discovery(const ResourceRegistry& registry, const ApiOptions& options,
                                     const ApiRequest& req) {
  auto segs = apimachinery::splitPath(req.path);
  bool isDiscovery = segs.empty() || segs[0] == "version" || segs[0] == "openapi" ||
                     (segs[0] == "api" && segs.size() <= 2) ||
                     (segs[0] == "apis" && segs.size() <= 3);
  if (!isDiscovery) return std::nullopt;
  if (req.method != "GET")
    return errorResponse(
        methodNotAllowed("the server does not allow this method on the requested resource"));
  auto found = [](const std::optional<json>& doc) {
    return doc ? jsonResponse(200, *doc) : errorResponse(noSuchResource());
  };
  auto allGroups = groups(registry);
  if (segs.size() == 1 && segs[0] == "version") return jsonResponse(200, versionInfo(options));
  if (segs.size() == 1 && segs[0] == "api")
    return jsonResponse(200, {{"kind", "APIVersions"},
                              {"versions", {"v1"}},
                              {"serverAddressByClientCIDRs", json::array()}});
  if (segs.size() == 1 && segs[0] == "apis") {
    json list = json::array();
    for (const auto& g : allGroups)
      list.push_back(groupEntry(registry, g));
    return jsonResponse(200, {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", list}});
  }
  if (segs.size() == 2 && segs[0] == "apis" &&
      std::find(allGroups.begin(), allGroups.end(), segs[1]) != allGroups.end()) {
    json g = groupEntry(registry, segs[1]);
    g["kind"] = "APIGroup";
    g["apiVersion"] = "v1";
    return jsonResponse(200, g);
  }
  if (segs.size() == 2 && segs[0] == "api") return found(resourceList(registry, segs[1]));
  if (segs.size() == 3 && segs[0] == "apis")
    return found(resourceList(registry, segs[1] + "/" + segs[2]));
  if (segs.size() == 2 && segs[0] == "openapi" && segs[1] == "v3")
    return jsonResponse(200, openapiIndex(registry));
  if (segs.size() == 2 && segs[0] == "openapi" && segs[1] == "v2") return openapiV2(options, req);
  if (segs.size() > 2 && segs[0] == "openapi" && segs[1] == "v3") {
    std::string want;
    for (std::size_t i = 2; i < segs.size(); ++i)
      want += (i > 2 ? "/" : "") + segs[i];
    return found(openapiDocument(registry, options, want));
  }
  return errorResponse(noSuchResource());
}

} // namespace kuscia_host::apiserver
