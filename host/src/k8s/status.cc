#include "k8s/status.h"

namespace kuscia_host::k8s {

using nlohmann::json;

json statusJson(const Status& s) {
  json out = {{"kind", "Status"},    {"apiVersion", "v1"},   {"metadata", json::object()},
              {"status", "Failure"}, {"message", s.message}, {"reason", s.reason},
              {"code", s.code}};
  if (s.details.is_object() && !s.details.empty()) out["details"] = s.details;
  return out;
}

json successJson(const std::string& message) {
  return {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
          {"status", "Success"}, {"message", message}, {"code", 200}};
}

namespace {

std::optional<std::string> stringField(const std::string& body, const char* key) {
  auto j = json::parse(body, nullptr, false);
  if (j.is_object() && j.contains(key) && j[key].is_string()) return j[key].get<std::string>();
  return std::nullopt;
}

} // namespace

std::optional<std::string> statusMessage(const std::string& body) {
  return stringField(body, "message");
}

std::optional<std::string> statusReason(const std::string& body) {
  return stringField(body, "reason");
}

} // namespace kuscia_host::k8s
