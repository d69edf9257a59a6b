// The resources the embedded API server serves: core/v1 namespaces, pods, services, endpoints,
// events, and the Kuscia custom resources defined by the CRD manifests in config/crds.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "apiserver/schema.h"

namespace kuscia_host::apiserver {

struct ResourceInfo {
  std::string group; // "" for core
  std::string version;
  std::string plural;
  std::string singular;
  std::string kind;
  std::string listKind;
  std::vector<std::string> shortNames;
  bool namespaced = true;
  bool hasStatus = false;
  bool builtin = true;                       // built-in kinds accept strategic merge patches
  std::shared_ptr<const SchemaNode> schema;  // CRDs only
  std::vector<PrinterColumn> printerColumns; // CRDs only

  std::string apiVersion() const { return group.empty() ? version : group + "/" + version; }
  std::string groupVersion() const { return apiVersion(); }
  // "pods", "deployments.apps", "<plural>.<group>": how messages name the resource.
  std::string qualifiedName() const { return group.empty() ? plural : plural + "." + group; }
};

class ResourceRegistry {
public:
  // Built-in kinds plus the CRDs embedded in the binary (config/crds).
  static ResourceRegistry withDefaults();

  void add(ResourceInfo info) {
    resources_.push_back(std::make_shared<ResourceInfo>(std::move(info)));
  }
  const ResourceInfo* find(const std::string& group, const std::string& version,
                           const std::string& plural) const;
  const std::vector<std::shared_ptr<ResourceInfo>>& all() const { return resources_; }
  // Distinct group/versions, core first.
  std::vector<std::string> groupVersions() const;

private:
  std::vector<std::shared_ptr<ResourceInfo>> resources_;
};

// The CRD manifests compiled into the binary.
const std::vector<std::string>& embeddedCrdManifests();

} // namespace kuscia_host::apiserver
