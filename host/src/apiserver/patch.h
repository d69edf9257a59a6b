// The three patch formats the API server accepts: JSON merge patch (RFC 7386), JSON patch
// (RFC 6902, including `test` as a precondition) and strategic merge patch for built-in kinds
// (merge keys and $patch/$setElementOrder/$deleteFromPrimitiveList/$retainKeys directives).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/result.h"

namespace kuscia_host::apiserver {

// The media types a PATCH names its format with (Content-Type).
inline constexpr const char* kMergePatch = "application/merge-patch+json";
inline constexpr const char* kJsonPatch = "application/json-patch+json";
inline constexpr const char* kStrategicPatch = "application/strategic-merge-patch+json";
inline constexpr const char* kApplyPatch = "application/apply-patch+yaml";

Result<nlohmann::json> applyMergePatch(const nlohmann::json& original, const nlohmann::json& patch);
Result<nlohmann::json> applyJsonPatch(const nlohmann::json& original, const nlohmann::json& patch);
Result<nlohmann::json> applyStrategicMergePatch(const nlohmann::json& original,
                                                const nlohmann::json& patch,
                                                const std::string& kind);

} // namespace kuscia_host::apiserver
