// What the bundled plugins know of Kuscia's objects: resource names, annotations, status keys,
// and small helpers over the projected fields the host delivers.
#pragma once

#include <kuscia_host/config_reader.hpp>
#include <kuscia_host/kube_text.hpp>
#include <kuscia_host/plugin.hpp>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace kuscia_host::plugins {

inline constexpr const char* kKusciaGroup = "kuscia.secretflow";
inline constexpr const char* kKusciaVersion = "v1alpha1";
inline constexpr const char* kKusciaTasks = "kusciatasks";
inline constexpr const char* kDefaultTaskNamespace = "cross-domain";

// Annotations, and their JSON-pointer tokens ('/' escaped as ~1).
inline constexpr const char* kTaskIdAnnotation = "kuscia.secretflow/task-id";
inline constexpr const char* kReadyTimeAnnotation = "kuscia.secretflow/ready-time";
inline constexpr const char* kTaskIdPointer = "/metadata/annotations/kuscia.secretflow~1task-id";
inline constexpr const char* kReadyTimePointer =
    "/metadata/annotations/kuscia.secretflow~1ready-time";

// The projected fields of an event or cached object (a JSON array in declaration order); an
// array of nulls when the text does not parse, so every field reads as absent.
inline nlohmann::json parseFields(std::string_view fieldsJson, std::size_t count) {
  auto j = nlohmann::json::parse(fieldsJson, nullptr, false);
  if (!j.is_array() || j.size() != count) return nlohmann::json::array_t(count, nullptr);
  return j;
}

// fields[i] as a string, "" when absent or not a string.
inline std::string fieldString(const nlohmann::json& fields, std::size_t i) {
  return i < fields.size() && fields[i].is_string() ? fields[i].get<std::string>() : std::string();
}

// "<namespace>/<name>" -> name (the whole key when it has no namespace).
inline std::string_view nameOf(std::string_view key) {
  auto slash = key.find('/');
  return slash == std::string_view::npos ? key : key.substr(slash + 1);
}
inline std::string_view namespaceOf(std::string_view key) {
  auto slash = key.find('/');
  return slash == std::string_view::npos ? std::string_view() : key.substr(0, slash);
}

// The condition of `type` in a status.conditions array, or nullptr.
inline const nlohmann::json* findCondition(const nlohmann::json& conditions,
                                           std::string_view type) {
  if (!conditions.is_array()) return nullptr;
  for (const auto& c : conditions)
    if (c.is_object() && c.value("type", "") == type) return &c;
  return nullptr;
}

using sdk::isDnsLabel;
using sdk::isDnsSubdomain;

// The `taskNamespace` key every bundled plugin that reads KusciaTasks takes.
inline sdk::ConfigKey taskNamespaceKey() {
  return {"taskNamespace", "string", kDefaultTaskNamespace, "namespace of the KusciaTasks"};
}
inline std::string readTaskNamespace(const sdk::ConfigReader& r) {
  std::string ns = r.string("taskNamespace", kDefaultTaskNamespace);
  if (!isDnsLabel(ns))
    throw sdk::ConfigError("taskNamespace", "config key 'taskNamespace': '" + ns +
                                                "' is not a namespace name (a DNS label)");
  return ns;
}

// The KusciaTask subscription both status-writing plugins declare: the task's timing maps.
inline sdk::Subscription taskSubscription(const std::string& taskNamespace) {
  sdk::Subscription s;
  s.group = kKusciaGroup;
  s.version = kKusciaVersion;
  s.resource = kKusciaTasks;
  s.scope = KH_SCOPE_NAMESPACE;
  s.namespaceName = taskNamespace;
  s.fields = {"/status/podStatuses", "/status/serviceStatuses"};
  return s;
}

} // namespace kuscia_host::plugins
