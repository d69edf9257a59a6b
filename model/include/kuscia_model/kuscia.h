// What the bundled plugins know of Kuscia's objects: resource names, annotations, status keys,
// and small helpers over the projected fields the host delivers.
#pragma once

#include <kuscia_host/config_reader.hpp>
#include <kuscia_host/kube_text.hpp>
#include <kuscia_host/plugin.hpp>
#include <kuscia_model/pod_events.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kuscia_host::model {

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

// JSON text as nlohmann::json::parse(text, nullptr, false) reads it (discarded when it is not
// JSON), in a fraction of its instructions (fields.cc).
nlohmann::json parseJson(std::string_view text);

// The projected fields of an event or cached object (a JSON array in declaration order); an
// array of nulls when the text does not parse, so every field reads as absent.
nlohmann::json parseFields(std::string_view fieldsJson, std::size_t count);

// fields[i] as a string, "" when absent or not a string.
inline std::string fieldString(const nlohmann::json& fields, std::size_t i) {
  return i < fields.size() && fields[i].is_string() ? fields[i].get<std::string>() : std::string();
}

// The projected fields of an event read one at a time, as parseFields reads them: the array is
// split by the scanner (status_entries.h), a string field is read from its text, and any other
// field becomes a JSON value only when asked for as one. For fields that are strings (a
// service's task, times and annotations) no DOM is built at all; fields that are mostly objects
// (a pod's conditions and containers) read faster in one parseFields. Text the scanner cannot
// split is parsed whole. The event's text must outlive the object.
class EventFields {
public:
  EventFields(std::string_view fieldsJson, std::size_t count);
  // Field i as a JSON value (null when absent), parsed on the first call.
  const nlohmann::json& value(std::size_t i);
  // Field i when it is a string; nullopt otherwise (absent, null or another type).
  std::optional<std::string> text(std::size_t i) const;
  // The same without a copy where the text has no escape (stringView of status_entries.h): valid
  // while the event's text and `decoded` are.
  std::optional<std::string_view> view(std::size_t i, std::string& decoded) const;
  // Field i as fieldString reads it: "" when absent or not a string.
  std::string string(std::size_t i) const { return text(i).value_or(std::string()); }
  // Whether field i is absent (null), read without parsing it.
  bool isNull(std::size_t i) const;

private:
  std::vector<std::string_view> spans_; // empty: whole_ holds the fields
  std::vector<std::optional<nlohmann::json>> values_;
  nlohmann::json whole_;
};

// splitmix64's finaliser: every bit of `h` moves every bit of the result (the plugins' digests
// of texts and values are built from it).
inline uint64_t mixBits(uint64_t h) {
  h ^= h >> 30;
  h *= 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 27;
  h *= 0x94D049BB133111EBULL;
  return h ^ (h >> 31);
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

// A subscription to a Kuscia resource (kusciatasks, kusciajobs) of `ns` with these fields.
inline sdk::Subscription kusciaSubscription(const char* resource, const std::string& ns,
                                            std::vector<std::string> fields) {
  sdk::Subscription s;
  s.group = kKusciaGroup;
  s.version = kKusciaVersion;
  s.resource = resource;
  s.scope = KH_SCOPE_NAMESPACE;
  s.namespaceName = ns;
  s.fields = std::move(fields);
  return s;
}

// A subscription to the KusciaTasks of `taskNamespace` with these fields.
inline sdk::Subscription taskSubscription(const std::string& taskNamespace,
                                          std::vector<std::string> fields) {
  return kusciaSubscription(kKusciaTasks, taskNamespace, std::move(fields));
}

// A subscription to a core (v1) resource in the instance's domain, with these fields.
inline sdk::Subscription domainSubscription(const char* resource, std::vector<std::string> fields) {
  sdk::Subscription s;
  s.version = "v1";
  s.resource = resource;
  s.scope = KH_SCOPE_DOMAIN;
  s.fields = std::move(fields);
  return s;
}

// The domain's Events, with what podEventOf reads.
inline sdk::Subscription podEventSubscription() {
  return domainSubscription("events", {"/involvedObject/kind", "/involvedObject/name",
                                       "/involvedObject/uid", "/reason", "/message", "/eventTime",
                                       "/lastTimestamp", "/firstTimestamp"});
}

// An Event about a pod: the pod's key ("<ns>/<name>"), the incarnation it names (may be empty),
// its reason and message, and its time (eventTime, else lastTimestamp, else firstTimestamp).
struct PodEvent {
  std::string key, uid, reason, message;
  int64_t at = 0;
};
// The pod Event of a podEventSubscription() event; nullopt for another kind, one without a name
// or a time, and a deletion (Events expire; what they said stays).
inline std::optional<PodEvent> podEventOf(const sdk::Event& e) {
  enum : std::size_t { kKind, kName, kUid, kReason, kMessage, kTime, kLast, kFirst, kCount };
  if (e.type == KH_EVENT_DELETED) return std::nullopt;
  nlohmann::json f = parseFields(e.fieldsJson, kCount);
  if (fieldString(f, kKind) != "Pod") return std::nullopt;
  std::string name = fieldString(f, kName);
  auto at = model::timeline::eventTimeOf(f[kTime], f[kLast], f[kFirst]);
  if (name.empty() || !at) return std::nullopt;
  return PodEvent{std::string(namespaceOf(e.key)) + "/" + name, fieldString(f, kUid),
                  fieldString(f, kReason), fieldString(f, kMessage), *at};
}

} // namespace kuscia_host::model
