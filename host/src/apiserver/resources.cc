#include "apiserver/resources.h"

#include <algorithm>
#include <stdexcept>

namespace kuscia_host::apiserver {

ResourceRegistry ResourceRegistry::withDefaults() {
  ResourceRegistry r;
  auto core = [&](std::string plural, std::string singular, const std::string& kind,
                  std::vector<std::string> shorts, bool namespaced, bool status) {
    ResourceInfo i;
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
  core("namespaces", "namespace", "Namespace", {"ns"}, false, false);
  core("pods", "pod", "Pod", {"po"}, true, true);
  core("services", "service", "Service", {"svc"}, true, true);
  core("endpoints", "endpoints", "Endpoints", {"ep"}, true, false);
  core("events", "event", "Event", {"ev"}, true, false);
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
