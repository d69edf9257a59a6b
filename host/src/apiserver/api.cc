#include "apiserver/api.h"

#include "apiserver/review.h"

#include <kuscia_host/kube_text.hpp>
#include <random>
#include <variant>
#include <yaml-cpp/yaml.h>

#include "apimachinery/paths.h"
#include "apimachinery/values.h"
#include "apiserver/patch.h"
#include "apiserver/table.h"
#include "common/yaml_json.h"
#include "httpd/tls.h"

namespace kuscia_host::apiserver {

using nlohmann::json;

namespace {

// The Kubernetes verb of a request, as RBAC and audit events name it.
std::string auditVerb(const std::string& method, bool watch, bool named) {
  if (method == "GET") return watch ? "watch" : named ? "get" : "list";
  if (method == "POST") return "create";
  if (method == "PUT") return "update";
  if (method == "PATCH") return "patch";
  if (method == "DELETE") return "delete";
  return method;
}

std::string mediaType(const std::string& contentType);

// The request body as JSON, or the error to answer: 415 for a body in another encoding (kubectl's
// typed create commands and client-go's typed clients send protobuf, which this server does not
// decode), 400 for one that is not JSON.
std::variant<json, ApiResponse> parseBody(const ApiRequest& req) {
  if (const std::string type = mediaType(req.contentType);
      !type.empty() && type != "application/json")
    return errorResponse(unsupportedBodyType(type));
  try {
    return json::parse(req.body);
  } catch (const json::exception& e) {
    return errorResponse(
        badRequest(std::string("the body of the request is not valid JSON: ") + e.what()));
  }
}

// A query parameter, or `fallback` when absent.
std::string param(const ApiRequest& req, const std::string& name,
                  const std::string& fallback = "") {
  auto it = req.query.find(name);
  return it == req.query.end() ? fallback : it->second;
}

// Pruned-field warnings, as upstream sends them: `Warning: 299 - "unknown field ..."`.
ApiResponse withWarnings(ApiResponse resp, const std::vector<std::string>& warnings) {
  for (const auto& w : warnings)
    resp.headers.emplace_back("Warning", "299 - \"" + w + "\"");
  return resp;
}

const char* const kTableContentType = "application/json;as=Table;v=v1;g=meta.k8s.io";

// A Table, with the content type kubectl expects of one.
ApiResponse tableResponse(const json& table) {
  ApiResponse r = jsonResponse(200, table);
  r.contentType = kTableContentType;
  return r;
}

ApiResponse storedResponse(int status, const StoredObject& o) {
  ApiResponse r;
  r.status = status;
  r.body = *o.text;
  return r;
}

std::string mediaType(const std::string& contentType) {
  auto semi = contentType.find(';');
  std::string t = contentType.substr(0, semi);
  while (!t.empty() && t.back() == ' ')
    t.pop_back();
  return t;
}

std::string newUid() {
  std::string h = httpd::randomHex(32);
  h[12] = '4';
  h[16] = "89ab"[h[16] % 4];
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) +
         "-" + h.substr(20);
}

std::string randomSuffix() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* chars = "bcdfghjklmnpqrstvwxz2456789";
  std::string s;
  for (int i = 0; i < 5; ++i)
    s += chars[rng() % 27];
  return s;
}

bool validName(const std::string& n) {
  return sdk::isDnsSubdomain(n);
}

// Everything but metadata and status: what "spec changed" means for generation.
json specPart(const json& o) {
  json c = o;
  if (c.is_object()) {
    c.erase("metadata");
    c.erase("status");
  }
  return c;
}

} // namespace

ApiResponse jsonResponse(int status, const json& body) {
  ApiResponse r;
  r.status = status;
  r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

ApiResponse errorResponse(const ApiError& e) {
  return jsonResponse(e.code, apimachinery::statusJson(e));
}

struct ApiHandler::Target {
  const ResourceInfo* resource = nullptr;
  std::string namespaceName;
  std::string name;
  std::string subresource;
};

ApiHandler::ApiHandler(const ResourceRegistry& registry, Store& store, const Clock& clock,
                       ApiOptions options)
    : registry_(registry), store_(store), clock_(clock), options_(std::move(options)) {}

std::string ApiHandler::now() const {
  return sdk::formatTime(clock_.wallNanos(), sdk::TimePrecision::kSeconds);
}

void ApiHandler::bootstrap() {
  const ResourceInfo* ns = registry_.find("", "v1", "namespaces");
  Target t;
  t.resource = ns;
  for (const char* name : {"default", "kube-system"}) {
    std::vector<std::string> warnings;
    auto obj = prepareCreate(t, json{{"metadata", {{"name", name}}}}, "Strict", warnings);
    // Creating a namespace that may exist cannot fail: the answer is not needed.
    (void)store_.mutate(*ns, "", name, [&](const json* current) -> ApiResult<std::optional<json>> {
      if (current != nullptr) return std::optional<json>(*current); // kept from before
      return std::optional<json>(obj.value());
    });
  }
}

ApiResponse ApiHandler::handle(const ApiRequest& req) {
  if (auto r = discovery(registry_, options_, req)) return *r;
  auto segs = apimachinery::splitPath(req.path);
  Target t;
  std::vector<std::string> rest;
  std::string group;
  std::string version;
  if (segs[0] == "api") {
    version = segs[1];
    rest.assign(segs.begin() + 2, segs.end());
  } else if (segs[0] == "apis") {
    group = segs[1];
    version = segs[2];
    rest.assign(segs.begin() + 3, segs.end());
  } else {
    return errorResponse(noSuchResource());
  }
  if (rest.size() >= 3 && rest[0] == "namespaces") {
    t.namespaceName = rest[1];
    rest.erase(rest.begin(), rest.begin() + 2);
  }
  t.resource = registry_.find(group, version, rest[0]);
  if (t.resource == nullptr || rest.size() > 3 ||
      (!t.namespaceName.empty() && !t.resource->namespaced))
    return errorResponse(noSuchResource());
  if (rest.size() >= 2) t.name = rest[1];
  if (rest.size() == 3) {
    t.subresource = rest[2];
    if (t.subresource != "status" || !t.resource->hasStatus) return errorResponse(noSuchResource());
  }
  ApiResponse r = resourceRequest(req, t);
  if (options_.audit) {
    bool watch = apimachinery::goBoolOr(req.param("watch"), false);
    AuditRecord a;
    a.verb = auditVerb(req.method, watch, !t.name.empty());
    a.group = t.resource->group;
    a.resource = t.resource->plural;
    a.subresource = t.subresource;
    a.namespaceName = t.namespaceName;
    a.name = t.name;
    a.code = r.status;
    a.userAgent = req.userAgent;
    a.user = "system:anonymous";
    constexpr std::string_view kBearer = "Bearer ";
    if (req.authorization.starts_with(kBearer))
      if (auto it = options_.tokens.find(req.authorization.substr(kBearer.size()));
          it != options_.tokens.end())
        a.user = it->second.user;
    options_.audit(a);
  }
  return r;
}

ApiResponse ApiHandler::resourceRequest(const ApiRequest& req, const Target& t) {
  for (const char* b : {"watch", "allowWatchBookmarks", "sendInitialEvents"}) {
    auto it = req.query.find(b);
    if (it != req.query.end() && !apimachinery::parseGoBool(it->second))
      return errorResponse(
          badRequest(std::string("invalid boolean value for ") + b + ": " + it->second));
  }
  bool isWatch = apimachinery::goBoolOr(req.param("watch"), false);
  if (t.resource->plural == "tokenreviews" || t.resource->plural == "subjectaccessreviews")
    return review(req, t);
  if (t.name.empty()) {
    if (req.method == "GET") return isWatch ? watch(req, t) : list(req, t);
    if (req.method == "POST") {
      auto body = parseBody(req);
      if (auto* error = std::get_if<ApiResponse>(&body)) return *error;
      return create(req, t, std::move(std::get<json>(body)));
    }
  } else {
    if (req.method == "GET") return isWatch ? watch(req, t) : get(req, t);
    if (req.method == "PUT") return update(req, t);
    if (req.method == "PATCH") return patch(req, t);
    if (req.method == "DELETE" && t.subresource.empty()) return remove(req, t);
  }
  return errorResponse(
      methodNotAllowed("the server does not allow this method on the requested resource"));
}

ApiResponse ApiHandler::review(const ApiRequest& req, const Target& t) {
  if (req.method != "POST" || !t.name.empty())
    return errorResponse(methodNotAllowed("reviews are only created (POST)"));
  auto body = parseBody(req);
  if (auto* error = std::get_if<ApiResponse>(&body)) return *error;
  const json& review = std::get<json>(body);
  Result<json> answer = makeError("");
  if (t.resource->plural == "tokenreviews") {
    answer = answerTokenReview(review, options_.tokens);
  } else {
    answer =
        answerSubjectAccessReview(review, [this](const std::string& plural, const std::string& ns) {
          std::vector<json> out;
          const ResourceInfo* r = registry_.find("rbac.authorization.k8s.io", "v1", plural);
          if (r == nullptr) return out;
          auto listed = store_.list(*r, ns, apimachinery::LabelSelector::parse("").value(),
                                    apimachinery::FieldSelector::parse("").value(), 0, "");
          if (!listed) return out;
          for (const auto& text : listed.value().items)
            out.push_back(json::parse(*text, nullptr, false));
          return out;
        });
  }
  if (!answer) return errorResponse(badRequest(answer.error()));
  return jsonResponse(201, *answer);
}

std::optional<ApiResponse> ApiHandler::tooLarge(const ApiRequest& req) {
  std::string rv = param(req, "resourceVersion");
  if (rv.empty() || rv == "0") return std::nullopt;
  uint64_t want = 0;
  try {
    std::size_t used = 0;
    want = std::stoull(rv, &used);
    if (used != rv.size()) return std::nullopt; // the store answers 400
  } catch (const std::exception&) {
    return std::nullopt;
  }
  uint64_t current = store_.currentRv();
  if (want <= current) return std::nullopt;
  ApiResponse r = errorResponse(tooLargeResourceVersion(want, current));
  r.headers.emplace_back("Retry-After", "1");
  r.waitsForRv = want;
  return r;
}

ApiResponse ApiHandler::get(const ApiRequest& req, const Target& t) {
  auto r = store_.get(*t.resource, t.namespaceName, t.name);
  if (!r.ok()) return errorResponse(r.error());
  if (wantsTable(req.accept) && t.subresource.empty())
    return tableResponse(toTable(*t.resource, {*r->object},
                                 (*r->object)["metadata"].value("resourceVersion", ""),
                                 clock_.wallNanos()));
  return storedResponse(200, r.value());
}

ApiResponse ApiHandler::list(const ApiRequest& req, const Target& t) {
  auto labels = apimachinery::LabelSelector::parse(param(req, "labelSelector"));
  if (!labels) return errorResponse(badRequest(labels.error()));
  auto fields = apimachinery::FieldSelector::parse(
      param(req, "fieldSelector"), t.resource->group.empty() ? t.resource->plural : "");
  if (!fields) return errorResponse(badRequest(fields.error()));
  int64_t limit = 0;
  if (auto it = req.query.find("limit"); it != req.query.end() && !it->second.empty()) {
    try {
      limit = std::stoll(it->second);
    } catch (const std::exception&) {
      return errorResponse(badRequest("invalid limit: " + it->second));
    }
  }
  std::string cont = param(req, "continue");
  // A resourceVersion (not older than) newer than the store: the list cannot be served yet.
  if (cont.empty())
    if (auto r = tooLarge(req)) return *r;
  auto r = store_.list(*t.resource, t.namespaceName, labels.value(), fields.value(), limit, cont);
  if (!r.ok()) return errorResponse(r.error());
  if (wantsTable(req.accept)) {
    std::vector<json> objects;
    objects.reserve(r->items.size());
    for (const auto& item : r->items)
      objects.push_back(json::parse(*item));
    json table = toTable(*t.resource, objects, std::to_string(r->rv), clock_.wallNanos());
    if (!r->continueToken.empty()) table["metadata"]["continue"] = r->continueToken;
    return tableResponse(table);
  }
  json meta = {{"resourceVersion", std::to_string(r->rv)}};
  if (!r->continueToken.empty()) {
    meta["continue"] = r->continueToken;
    meta["remainingItemCount"] = r->remaining;
  }
  // Items are written without apiVersion/kind, as real list responses do. Stored texts have
  // sorted keys, so they start with exactly this prefix, which is cut instead of re-serialising.
  const std::string prefix = R"({"apiVersion":")" + t.resource->apiVersion() + R"(","kind":")" +
                             t.resource->kind + R"(",)";
  std::size_t total = 128;
  for (const auto& item : r->items)
    total += item->size();
  std::string body;
  body.reserve(total);
  body += R"({"kind":")" + t.resource->listKind + R"(","apiVersion":")" + t.resource->apiVersion() +
          R"(","metadata":)" + meta.dump() + R"(,"items":[)";
  bool first = true;
  for (const auto& item : r->items) {
    if (!first) body += ',';
    first = false;
    if (item->compare(0, prefix.size(), prefix) == 0) {
      body += '{';
      body.append(*item, prefix.size(), std::string::npos);
    } else {
      body += *item;
    }
  }
  body += "]}";
  ApiResponse resp;
  resp.body = std::move(body);
  return resp;
}

ApiResponse ApiHandler::watch(const ApiRequest& req, const Target& t) {
  if (apimachinery::goBoolOr(req.param("sendInitialEvents"), false))
    return errorResponse(
        {422,
         "Invalid",
         "sendInitialEvents is not supported by this server: list, then watch from the list's "
         "resourceVersion",
         {{"causes", json::array({{{"reason", "FieldValueForbidden"},
                                   {"message", "Forbidden: sendInitialEvents is not supported"},
                                   {"field", "sendInitialEvents"}}})}}});
  auto labels = apimachinery::LabelSelector::parse(param(req, "labelSelector"));
  if (!labels) return errorResponse(badRequest(labels.error()));
  auto fields = apimachinery::FieldSelector::parse(
      param(req, "fieldSelector"), t.resource->group.empty() ? t.resource->plural : "");
  if (!fields) return errorResponse(badRequest(fields.error()));
  WatchFilter f{t.resource, t.namespaceName, labels.value(), fields.value()};
  if (!t.name.empty())
    f.fields = apimachinery::FieldSelector::parse("metadata.name=" + t.name).value();
  int timeoutSeconds = options_.defaultWatchTimeoutSeconds;
  if (auto v = req.param("timeoutSeconds")) {
    try {
      timeoutSeconds = std::stoi(*v);
    } catch (const std::exception&) {
      return errorResponse(badRequest("invalid timeoutSeconds: " + *v));
    }
  }
  if (auto r = tooLarge(req)) return *r;
  auto w = store_.watch(std::move(f), param(req, "resourceVersion"), options_.watchQueueCapacity);
  ApiResponse r;
  if (!w.ok()) {
    // Expired: upstream answers 200 and one ERROR event; anything else is the HTTP status.
    if (w.error().code != 410) return errorResponse(w.error());
    r.watch = WatchStream::error(w.error());
    return r;
  }
  std::optional<std::chrono::milliseconds> bookmarks;
  if (apimachinery::goBoolOr(req.param("allowWatchBookmarks"), false))
    bookmarks = options_.bookmarkInterval;
  r.watch = std::make_shared<WatchStream>(store_, w.value(), timeoutSeconds, bookmarks);
  if (wantsTable(req.accept)) {
    r.contentType = kTableContentType;
    r.watch->setTransform(
        [resource = t.resource, clock = &clock_, first = true](const std::string& line) mutable {
          return tableWatchLine(*resource, line, first, clock->wallNanos());
        });
  }
  return r;
}

std::optional<ApiError> ApiHandler::pruneAndValidate(const Target& t, json& obj,
                                                     const std::string& fieldValidation,
                                                     std::vector<std::string>& warnings) {
  if (!t.resource->schema) return std::nullopt;
  std::vector<std::string> pruned;
  pruneObject(*t.resource->schema, obj, pruned);
  std::string name = obj["metadata"].value("name", t.name);
  if (!pruned.empty()) {
    if (fieldValidation == "Strict") {
      std::string msg = "strict decoding error: ";
      for (std::size_t i = 0; i < pruned.size(); ++i)
        msg += (i ? ", " : "") + std::string("unknown field \"") + pruned[i] + "\"";
      return badRequest(msg);
    }
    if (fieldValidation != "Ignore")
      for (const auto& p : pruned)
        warnings.push_back("unknown field \"" + p + "\"");
  }
  auto causes = validateObject(*t.resource->schema, obj);
  if (!causes.empty()) return invalid(*t.resource, name, causes);
  return std::nullopt;
}

ApiResult<json> ApiHandler::prepareCreate(const Target& t, json obj,
                                          const std::string& fieldValidation,
                                          std::vector<std::string>& warnings) {
  const ResourceInfo& r = *t.resource;
  if (!obj.is_object()) return badRequest("the body of the request must be a JSON object");
  if (obj.contains("apiVersion") && obj["apiVersion"] != r.apiVersion())
    return badRequest("the API version in the data (" + obj["apiVersion"].dump() +
                      ") does not match the expected API version (" + r.apiVersion() + ")");
  if (obj.contains("kind") && obj["kind"] != r.kind)
    return badRequest("the kind in the data (" + obj["kind"].dump() +
                      ") does not match the expected kind (" + r.kind + ")");
  obj["apiVersion"] = r.apiVersion();
  obj["kind"] = r.kind;
  json& meta = obj["metadata"];
  if (!meta.is_object()) meta = json::object();
  if (!meta.contains("name") && meta.contains("generateName"))
    meta["name"] = meta["generateName"].get<std::string>() + randomSuffix();
  std::string name = meta.value("name", "");
  if (name.empty())
    return invalid(r, "",
                   {{"FieldValueRequired", "Required value: name or generateName is required",
                     "metadata.name"}});
  if (!validName(name))
    return invalid(
        r, name,
        {{"FieldValueInvalid",
          "Invalid value: \"" + name +
              "\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
              "characters, '-' or '.', and must start and end with an alphanumeric character",
          "metadata.name"}});
  if (r.namespaced) {
    if (meta.contains("namespace") && meta["namespace"] != t.namespaceName)
      return badRequest(
          "the namespace of the provided object does not match the namespace sent on the request");
    meta["namespace"] = t.namespaceName;
  } else {
    meta.erase("namespace");
  }
  for (const char* k : {"uid", "resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds",
                        "managedFields", "selfLink"})
    meta.erase(k);
  meta["uid"] = newUid();
  meta["creationTimestamp"] = now();
  if (!r.builtin) meta["generation"] = 1;
  if (r.hasStatus) {
    if (!r.builtin)
      obj.erase("status");
    else if (r.kind == "Pod")
      obj["status"] = {{"phase", "Pending"}, {"qosClass", "BestEffort"}};
    else if (r.kind == "Service")
      obj["status"] = {{"loadBalancer", json::object()}};
  }
  if (r.kind == "Namespace") obj["status"] = {{"phase", "Active"}};
  if (auto e = pruneAndValidate(t, obj, fieldValidation, warnings)) return *e;
  return obj;
}

ApiResult<json> ApiHandler::prepareUpdate(const Target& t, const json& current, json next,
                                          const std::string& fieldValidation,
                                          std::vector<std::string>& warnings) {
  const ResourceInfo& r = *t.resource;
  if (!next.is_object()) return badRequest("the body of the request must be a JSON object");
  if (!next["metadata"].is_object()) next["metadata"] = json::object();
  const json& cm = current["metadata"];
  json& nm = next["metadata"];
  if (nm.contains("name") && nm["name"] != cm["name"])
    return badRequest("the name of the object (" + nm["name"].get<std::string>() +
                      ") does not match the name on the URL (" + t.name + ")");
  if (nm.contains("resourceVersion") && nm["resourceVersion"] != cm["resourceVersion"])
    return conflict(r, t.name,
                    "the object has been modified; please apply your changes to the latest version "
                    "and try again");
  if (nm.contains("uid") && !nm["uid"].get<std::string>().empty() && nm["uid"] != cm["uid"])
    return conflict(r, t.name,
                    "Precondition failed: UID in precondition: " + nm["uid"].get<std::string>() +
                        ", UID in object meta: " + cm["uid"].get<std::string>());
  if (t.subresource == "status") {
    json merged = current;
    if (next.contains("status"))
      merged["status"] = next["status"];
    else
      merged.erase("status");
    next = std::move(merged);
  } else if (r.hasStatus) {
    if (current.contains("status"))
      next["status"] = current["status"];
    else
      next.erase("status");
  }
  json& meta = next["metadata"];
  for (const char* k : {"name", "namespace", "uid", "creationTimestamp", "generation"}) {
    if (cm.contains(k))
      meta[k] = cm[k];
    else
      meta.erase(k);
  }
  meta["resourceVersion"] = cm["resourceVersion"];
  next["apiVersion"] = r.apiVersion();
  next["kind"] = r.kind;
  if (!r.builtin && specPart(next) != specPart(current))
    meta["generation"] = cm.value("generation", 1) + 1;
  if (auto e = pruneAndValidate(t, next, fieldValidation, warnings)) return *e;
  return next;
}

ApiResponse ApiHandler::create(const ApiRequest& req, const Target& t, json body) {
  const ResourceInfo& r = *t.resource;
  if (!t.subresource.empty())
    return errorResponse(methodNotAllowed("create is not allowed on a subresource"));
  if (r.namespaced) {
    if (t.namespaceName.empty())
      return errorResponse(badRequest("the namespace of the object must be set in the URL"));
    const ResourceInfo* ns = registry_.find("", "v1", "namespaces");
    if (!store_.get(*ns, "", t.namespaceName).ok())
      return errorResponse(notFound(*ns, t.namespaceName));
  }
  std::vector<std::string> warnings;
  std::string fv = param(req, "fieldValidation", "Warn");
  auto prepared = prepareCreate(t, std::move(body), fv, warnings);
  if (!prepared.ok()) return errorResponse(prepared.error());
  std::string name = (prepared.value())["metadata"]["name"];
  bool dryRun = param(req, "dryRun") == "All";
  ApiResponse resp;
  if (dryRun) {
    if (store_.get(r, t.namespaceName, name).ok()) return errorResponse(alreadyExists(r, name));
    resp = jsonResponse(201, prepared.value());
  } else {
    auto stored = store_.mutate(r, t.namespaceName, name,
                                [&](const json* current) -> ApiResult<std::optional<json>> {
                                  if (current != nullptr) return alreadyExists(r, name);
                                  return std::optional<json>(prepared.value());
                                });
    if (!stored.ok()) return errorResponse(stored.error());
    resp = storedResponse(201, stored.value());
  }
  return withWarnings(std::move(resp), warnings);
}

ApiResponse ApiHandler::update(const ApiRequest& req, const Target& t) {
  auto parsed = parseBody(req);
  if (auto* error = std::get_if<ApiResponse>(&parsed)) return *error;
  json body = std::move(std::get<json>(parsed));
  const ResourceInfo& r = *t.resource;
  if (!r.builtin && (!body.is_object() || !body["metadata"].is_object() ||
                     !body["metadata"].contains("resourceVersion")))
    return errorResponse(
        invalid(r, t.name,
                {{"FieldValueInvalid", "Invalid value: 0x0: must be specified for an update",
                  "metadata.resourceVersion"}}));
  std::vector<std::string> warnings;
  std::string fv = param(req, "fieldValidation", "Warn");
  bool dryRun = param(req, "dryRun") == "All";
  auto stored = store_.mutate(r, t.namespaceName, t.name,
                              [&](const json* current) -> ApiResult<std::optional<json>> {
                                if (current == nullptr) return notFound(r, t.name);
                                auto next = prepareUpdate(t, *current, body, fv, warnings);
                                if (!next.ok()) return next.error();
                                if (dryRun) return std::optional<json>(*current);
                                return std::optional<json>(std::move(next.value()));
                              });
  if (!stored.ok()) return errorResponse(stored.error());
  ApiResponse resp = storedResponse(200, stored.value());
  return withWarnings(std::move(resp), warnings);
}

ApiResponse ApiHandler::patch(const ApiRequest& req, const Target& t) {
  const ResourceInfo& r = *t.resource;
  std::string type = mediaType(req.contentType);
  bool apply = type == kApplyPatch;
  if (type != kMergePatch && type != kJsonPatch && !apply &&
      !(type == kStrategicPatch && r.builtin))
    return errorResponse(unsupportedMediaType(r.builtin));
  json patchBody;
  try {
    patchBody = apply ? yamlToJson(YAML::Load(req.body)) : json::parse(req.body);
  } catch (const std::exception& e) {
    return errorResponse(
        badRequest(std::string("the body of the request could not be decoded: ") + e.what()));
  }
  if (apply && param(req, "fieldManager").empty())
    return errorResponse(
        badRequest("PATCH, application/apply-patch+yaml requires the fieldManager parameter"));
  std::vector<std::string> warnings;
  std::string fv = param(req, "fieldValidation", "Warn");
  bool dryRun = param(req, "dryRun") == "All";
  bool created = false;
  if (apply && t.subresource.empty() && r.namespaced) {
    const ResourceInfo* ns = registry_.find("", "v1", "namespaces");
    if (!store_.get(*ns, "", t.namespaceName).ok())
      return errorResponse(notFound(*ns, t.namespaceName));
  }
  auto stored = store_.mutate(
      r, t.namespaceName, t.name, [&](const json* current) -> ApiResult<std::optional<json>> {
        if (current == nullptr) {
          if (!apply || !t.subresource.empty()) return notFound(r, t.name);
          json obj = patchBody;
          if (obj.is_object()) obj["metadata"]["name"] = t.name;
          auto prepared = prepareCreate(t, std::move(obj), fv, warnings);
          if (!prepared.ok()) return prepared.error();
          created = true;
          return std::optional<json>(std::move(prepared.value()));
        }
        Result<json> patched = type == kJsonPatch ? applyJsonPatch(*current, patchBody)
                               : type == kStrategicPatch
                                   ? applyStrategicMergePatch(*current, patchBody, r.kind)
                                   : applyMergePatch(*current, patchBody);
        if (!patched.ok()) {
          std::string msg = type == kJsonPatch ? "the json patch could not be applied: "
                                               : "the patch could not be applied: ";
          return ApiError{422, "Invalid", msg + patched.error(), json::object()};
        }
        auto next = prepareUpdate(t, *current, std::move(patched.value()), fv, warnings);
        if (!next.ok()) return next.error();
        if (dryRun) return std::optional<json>(*current);
        return std::optional<json>(std::move(next.value()));
      });
  if (!stored.ok()) return errorResponse(stored.error());
  ApiResponse resp = storedResponse(created ? 201 : 200, stored.value());
  return withWarnings(std::move(resp), warnings);
}

ApiResponse ApiHandler::remove(const ApiRequest& req, const Target& t) {
  const ResourceInfo& r = *t.resource;
  json options = json::object();
  if (!req.body.empty()) {
    try {
      options = json::parse(req.body);
    } catch (const json::exception& e) {
      return errorResponse(
          badRequest(std::string("the DeleteOptions body is not valid JSON: ") + e.what()));
    }
  }
  json pre = options.is_object() && options.contains("preconditions") ? options["preconditions"]
                                                                      : json::object();
  bool dryRun = param(req, "dryRun") == "All";
  auto deleted = store_.mutate(
      r, t.namespaceName, t.name, [&](const json* current) -> ApiResult<std::optional<json>> {
        if (current == nullptr) return notFound(r, t.name);
        const json& meta = (*current)["metadata"];
        if (pre.contains("uid") && pre["uid"].is_string() && pre["uid"] != meta["uid"])
          return conflict(
              r, t.name,
              "Precondition failed: UID in precondition: " + pre["uid"].get<std::string>() +
                  ", UID in object meta: " + meta["uid"].get<std::string>());
        if (pre.contains("resourceVersion") && pre["resourceVersion"].is_string() &&
            pre["resourceVersion"] != meta["resourceVersion"])
          return conflict(r, t.name,
                          "Precondition failed: ResourceVersion in precondition: " +
                              pre["resourceVersion"].get<std::string>() +
                              ", ResourceVersion in object meta: " +
                              meta["resourceVersion"].get<std::string>());
        if (dryRun) return std::optional<json>(*current);
        return std::optional<json>();
      });
  if (!deleted.ok()) return errorResponse(deleted.error());
  if (r.kind == "Namespace" && !dryRun) store_.deleteNamespaceContents(t.name);
  return storedResponse(200, deleted.value());
}

} // namespace kuscia_host::apiserver
