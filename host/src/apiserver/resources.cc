#include "apiserver/resources.h"

#include <algorithm>
#include <stdexcept>

namespace kuscia_host::apiserver {

ResourceRegistry ResourceRegistry::withDefaults() {
  ResourceRegistry r;
  auto builtin = [&](std::string group, std::string plural, std::string singular,
                     const std::string& kind, std::vector<std::string> shorts, bool namespaced,
                     bool status) {
    ResourceInfo i;
    i.group = std::move(group);
    i.version = "v1";
    i.plural = std::move(plural);
    i.singular = std::move(singular);
    i.kind = kind;
    i.listKind = kind + "List";
    i.shortNames = std::move(shorts);
    i.namespaced = namespaced;
    i.hasStatus = status;
    r.add(std::move(i));
  };
  builtin("", "namespaces", "namespace", "Namespace", {"ns"}, false, false);
  builtin("", "pods", "pod", "Pod", {"po"}, true, true);
  builtin("", "services", "service", "Service", {"svc"}, true, true);
  builtin("", "endpoints", "endpoints", "Endpoints", {"ep"}, true, false);
  builtin("", "events", "event", "Event", {"ev"}, true, false);
  // Stored as given (no controllers act on them), so that the deployment manifests
  // (config/k8s: RBAC, ConfigMap, Deployment, the CRDs) apply with kubectl as on a real cluster.
  builtin("", "configmaps", "configmap", "ConfigMap", {"cm"}, true, false);
  builtin("", "serviceaccounts", "serviceaccount", "ServiceAccount", {"sa"}, true, false);
  // The Secrets the shipped Deployment mounts, and the Leases a leader election takes and renews
  // (client-go's leaderelection: an update carries the resourceVersion it read, and a stale one
  // is a conflict, as for every kind here).
  builtin("", "secrets", "secret", "Secret", {}, true, false);
  builtin("coordination.k8s.io", "leases", "lease", "Lease", {}, true, false);
  builtin("apps", "deployments", "deployment", "Deployment", {"deploy"}, true, true);
  builtin("networking.k8s.io", "networkpolicies", "networkpolicy", "NetworkPolicy", {"netpol"},
          true, false);
  for (const char* rbac : {"clusterroles", "clusterrolebindings", "roles", "rolebindings"}) {
    std::string plural = rbac;
    std::string singular = plural.substr(0, plural.size() - 1);
    std::string kind = plural.find("cluster") == 0 ? "Cluster" : "";
    kind += plural.find("binding") != std::string::npos ? "RoleBinding" : "Role";
    builtin("rbac.authorization.k8s.io", plural, singular, kind, {}, plural.find("cluster") != 0,
            false);
  }
  // Reviews for delegated authentication and authorization: created, answered, never stored.
  builtin("authentication.k8s.io", "tokenreviews", "tokenreview", "TokenReview", {}, false, false);
  builtin("authorization.k8s.io", "subjectaccessreviews", "subjectaccessreview",
          "SubjectAccessReview", {}, false, false);
  builtin("apiextensions.k8s.io", "customresourcedefinitions", "customresourcedefinition",
          "CustomResourceDefinition", {"crd", "crds"}, false, true);
  for (const auto& manifest : embeddedCrdManifests()) {
    auto crd = parseCrd(manifest);
    if (!crd) throw std::logic_error("embedded CRD is invalid: " + crd.error());
    ResourceInfo i;
    i.group = crd->group;
    i.version = crd->version;
    i.plural = crd->plural;
    i.singular = crd->singular;
    i.kind = crd->kind;
    i.listKind = crd->listKind;
    i.shortNames = crd->shortNames;
    i.namespaced = crd->namespaced;
    i.hasStatus = crd->hasStatus;
    i.builtin = false;
    i.schema = crd->schema;
    i.printerColumns = crd->printerColumns;
    r.add(std::move(i));
  }
  return r;
}

const ResourceInfo* ResourceRegistry::find(const std::string& group, const std::string& version,
                                           const std::string& plural) const {
  for (const auto& r : resources_)
    if (r->group == group && r->version == version && r->plural == plural) return r.get();
  return nullptr;
}

std::vector<std::string> ResourceRegistry::groupVersions() const {
  std::vector<std::string> out;
  for (const auto& r : resources_)
    if (std::find(out.begin(), out.end(), r->apiVersion()) == out.end())
      out.push_back(r->apiVersion());
  return out;
}

} // namespace kuscia_host::apiserver
