// Reading a member of a JSON document that comes from elsewhere (a status, a pod, a timeline
// document), whatever it holds.
#pragma once

#include <kuscia_host/kube_text.hpp>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace kuscia_host::model {

// obj[key] when `obj` is an object and that member a string, else "".
inline std::string textOf(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return {};
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The instant obj[key] holds when it is an RFC 3339 time (Kubernetes' and Kuscia's), else none.
inline std::optional<int64_t> timeIn(const nlohmann::json& obj, const char* key) {
  const std::string text = textOf(obj, key);
  return text.empty() ? std::nullopt : sdk::parseTime(text);
}

// obj[key] when `obj` is an object and that member one too, else an empty object (a
// document's or an object's member read whatever it holds).
inline const nlohmann::json& objectOf(const nlohmann::json& obj, std::string_view key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  if (!obj.is_object()) return kEmpty;
  auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? *it : kEmpty;
}

// The same for an array member: an empty array otherwise.
inline const nlohmann::json& arrayOf(const nlohmann::json& obj, std::string_view key) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  if (!obj.is_object()) return kEmpty;
  auto it = obj.find(key);
  return it != obj.end() && it->is_array() ? *it : kEmpty;
}

} // namespace kuscia_host::model
