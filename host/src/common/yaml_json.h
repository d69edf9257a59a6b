// YAML -> JSON conversion with YAML 1.2 core-schema typing of plain scalars (quoted scalars stay
// strings). Used for plugin config subtrees, CRD manifests and apply patches.
#pragma once

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

namespace kuscia_host {

nlohmann::json yamlToJson(const YAML::Node& node);

} // namespace kuscia_host
