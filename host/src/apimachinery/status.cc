#include "apimachinery/status.h"

namespace kuscia_host::apimachinery {

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

std::optional<std::string> statusMessage(const std::string& body) {
  auto j = json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("message") && j["message"].is_string())
    return j["message"].get<std::string>();
  return std::nullopt;
}

} // namespace kuscia_host::apimachinery
