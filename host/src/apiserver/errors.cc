#include "apiserver/errors.h"

namespace kuscia_host::apiserver {

using nlohmann::json;

namespace {

json objectDetails(const ResourceInfo& r, const std::string& name) {
  return {{"name", name}, {"group", r.group}, {"kind", r.plural}};
}

} // namespace

ApiError badRequest(const std::string& message) {
  return {400, "BadRequest", message, json::object()};
}

ApiError notFound(const ResourceInfo& r, const std::string& name) {
  return {404, "NotFound", r.qualifiedName() + " \"" + name + "\" not found",
          objectDetails(r, name)};
}

ApiError noSuchResource() {
  return {404, "NotFound", "the server could not find the requested resource", json::object()};
}

ApiError methodNotAllowed(const std::string& message) {
  return {405, "MethodNotAllowed", message, json::object()};
}

ApiError alreadyExists(const ResourceInfo& r, const std::string& name) {
  return {409, "AlreadyExists", r.qualifiedName() + " \"" + name + "\" already exists",
          objectDetails(r, name)};
}

ApiError conflict(const ResourceInfo& r, const std::string& name, const std::string& why) {
  return {409, "Conflict",
          "Operation cannot be fulfilled on " + r.qualifiedName() + " \"" + name + "\": " + why,
          objectDetails(r, name)};
}

ApiError invalid(const ResourceInfo& r, const std::string& name,
                 const std::vector<FieldCause>& causes) {
  std::string list;
  json jc = json::array();
  for (const auto& c : causes) {
    list += (list.empty() ? "" : ", ") + c.field + ": " + c.message;
    jc.push_back({{"reason", c.reason}, {"message", c.message}, {"field", c.field}});
  }
  std::string gk = r.group.empty() ? r.kind : r.kind + "." + r.group;
  std::string message =
      gk + " \"" + name + "\" is invalid: " + (causes.size() == 1 ? list : "[" + list + "]");
  return {422,
          "Invalid",
          message,
          {{"name", name}, {"group", r.group}, {"kind", r.kind}, {"causes", jc}}};
}

ApiError expired(const std::string& message) {
  return {410, "Expired", message, json::object()};
}

ApiError tooLargeResourceVersion(uint64_t requested, uint64_t current) {
  return {504,
          "Timeout",
          "Too large resource version: " + std::to_string(requested) +
              ", current: " + std::to_string(current),
          {{"causes", json::array({{{"reason", "ResourceVersionTooLarge"},
                                    {"message", "Too large resource version"}}})},
           {"retryAfterSeconds", 1}}};
}

ApiError unsupportedMediaType(bool builtin) {
  return {415, "UnsupportedMediaType",
          "the body of the request was in an unknown format - accepted media types include: "
          "application/json-patch+json, application/merge-patch+json, "
          "application/apply-patch+yaml" +
              std::string(builtin ? ", application/strategic-merge-patch+json" : ""),
          json::object()};
}

ApiError unsupportedBodyType(const std::string& mediaType) {
  std::string message =
      "the body of the request was in an unknown format - accepted media types include: "
      "application/json";
  if (mediaType == "application/vnd.kubernetes.protobuf")
    message += " (this API server does not decode protobuf, which kubectl's typed create "
               "commands send; `kubectl create -f` and `kubectl apply -f` send JSON)";
  return {415, "UnsupportedMediaType", message, json::object()};
}

} // namespace kuscia_host::apiserver
