// Shared by the bundled plugins' unit tests: Kuscia objects from tests/fixtures, and delivery of
// whole objects through the fake host exactly as the host would (key, uid and resourceVersion
// from the metadata; the declared JSON pointers projected into the fields array).
#pragma once

#include <kuscia_host/testing/fake_host.hpp>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>

namespace kuscia_host::test {

using nlohmann::json;

inline json fixture(const std::string& name) {
  std::ifstream in(std::string(KH_FIXTURE_DIR) + "/" + name);
  if (!in) throw std::runtime_error("no fixture " + name);
  std::stringstream s;
  s << in.rdbuf();
  return json::parse(s.str());
}

// The subscription the plugin declared for `resource` (its first one).
inline const testing::FakeHost::SubscriptionRecord& subscription(const testing::FakeHost& host,
                                                                 const std::string& resource) {
  for (const auto& s : host.subscriptions())
    if (s.resource == resource) return s;
  throw std::runtime_error("the plugin has no subscription to " + resource);
}

inline std::string key(const json& obj) {
  const auto& m = obj["metadata"];
  return m.value("namespace", "") + "/" + m.value("name", "");
}

// The fields array the host would deliver for `obj` through `sub`.
inline std::string project(const testing::FakeHost::SubscriptionRecord& sub, const json& obj) {
  json fields = json::array();
  for (const auto& f : sub.fields) {
    json::json_pointer p(f);
    fields.push_back(obj.contains(p) ? obj.at(p) : json());
  }
  return fields.dump();
}

// Delivers `obj` to the plugin as an event of the subscription to `resource`, and keeps the
// fake host's cache in step.
inline kh_status_t deliver(testing::FakeHost& host, const std::string& resource,
                           kh_event_type_t type, const json& obj) {
  const auto& sub = subscription(host, resource);
  std::string k = key(obj);
  std::string fields = project(sub, obj);
  const auto& m = obj["metadata"];
  if (type == KH_EVENT_DELETED)
    host.removeObject(sub.id, k);
  else
    host.putObject(sub.id, {k, m.value("uid", ""), m.value("resourceVersion", ""), fields, {}});
  return host.deliver(sub.id, type, k, m.value("uid", ""), m.value("resourceVersion", ""), fields);
}

// The fixture's task with every entry ready in its status (bob's pod at 08:00:09, the services
// at 08:00:10): a task whose startup is over.
inline json readyTask() {
  json task = fixture("kusciatask.json");
  task["status"]["podStatuses"]["bob/secretflow-task-psi-0"]["readyTime"] = "2024-05-20T08:00:09Z";
  for (auto& [k, s] : task["status"]["serviceStatuses"].items())
    s["readyTime"] = "2024-05-20T08:00:10Z";
  return task;
}

inline void synced(testing::FakeHost& host) {
  for (const auto& s : host.subscriptions())
    host.deliver(s.id, KH_EVENT_SYNCED, "", "", "", "");
}

} // namespace kuscia_host::test
