// Reading a member of a JSON document that comes from elsewhere (a status, a pod, a timeline
// document), whatever it holds.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace kuscia_host::model {

// obj[key] when `obj` is an object and that member a string, else "".
inline std::string textOf(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return {};
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

} // namespace kuscia_host::model
