#include "apiserver/review.h"

#include "common/text_lines.h"

#include <algorithm>
#include <cctype>

namespace kuscia_host::apiserver {

using nlohmann::json;

namespace {

// One CSV line: fields separated by commas, a field in double quotes may hold commas ("" is a
// quote). False when a quote is not closed.
bool splitCsv(std::string_view line, std::vector<std::string>& out) {
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back(trimSpace(field));
      field.clear();
    } else {
      field += c;
    }
  }
  out.emplace_back(trimSpace(field));
  return !quoted;
}

bool listHas(const json& list, const std::string& value) {
  if (!list.is_array()) return false;
  return std::any_of(list.begin(), list.end(), [&](const json& v) {
    return v.is_string() && (v.get<std::string>() == value || v.get<std::string>() == "*");
  });
}

bool subjectMatches(const json& subject, const AccessRequest& r) {
  std::string kind = jsonText(subject, "kind"), name = jsonText(subject, "name");
  if (kind == "User") return name == r.user;
  if (kind == "Group") return std::find(r.groups.begin(), r.groups.end(), name) != r.groups.end();
  if (kind == "ServiceAccount")
    return r.user == "system:serviceaccount:" + jsonText(subject, "namespace") + ":" + name;
  return false;
}

bool ruleMatches(const json& rule, const AccessRequest& r, bool clusterWide) {
  if (!listHas(jsonMember(rule, "verbs"), r.verb)) return false;
  if (r.nonResource) {
    // Non-resource URLs are granted by cluster roles bound cluster-wide only.
    if (!clusterWide) return false;
    const json& urls = jsonMember(rule, "nonResourceURLs");
    if (!urls.is_array()) return false;
    return std::any_of(urls.begin(), urls.end(), [&](const json& u) {
      if (!u.is_string()) return false;
      const auto& url = u.get_ref<const std::string&>();
      if (!url.empty() && url.back() == '*')
        return r.path.compare(0, url.size() - 1, url, 0, url.size() - 1) == 0;
      return url == r.path;
    });
  }
  if (!listHas(jsonMember(rule, "apiGroups"), r.group)) return false;
  std::string resource = r.subresource.empty() ? r.resource : r.resource + "/" + r.subresource;
  if (!listHas(jsonMember(rule, "resources"), resource)) return false;
  const json& names = jsonMember(rule, "resourceNames");
  return !names.is_array() || names.empty() || listHas(names, r.name);
}

// The rules of the role a binding refers to (a ClusterRole, or a Role of `ns`).
std::vector<json> rulesOf(const json& binding, const std::string& ns, const RbacLister& list) {
  const json& ref = jsonMember(binding, "roleRef");
  std::string kind = jsonText(ref, "kind"), name = jsonText(ref, "name");
  std::vector<json> out;
  for (const auto& role :
       list(kind == "ClusterRole" ? "clusterroles" : "roles", kind == "ClusterRole" ? "" : ns))
    if (jsonText(jsonMember(role, "metadata"), "name") == name &&
        jsonMember(role, "rules").is_array())
      for (const auto& rule : role["rules"])
        out.push_back(rule);
  return out;
}

bool bindingGrants(const json& binding, const AccessRequest& r, const std::string& ns,
                   bool clusterWide, const RbacLister& list) {
  const json& subjects = jsonMember(binding, "subjects");
  if (!subjects.is_array() || std::none_of(subjects.begin(), subjects.end(),
                                           [&](const json& s) { return subjectMatches(s, r); }))
    return false;
  for (const auto& rule : rulesOf(binding, ns, list))
    if (ruleMatches(rule, r, clusterWide)) return true;
  return false;
}

} // namespace

Result<std::map<std::string, Identity>> parseTokenAuthFile(std::string_view text) {
  std::map<std::string, Identity> tokens;
  auto read = forEachLine(text, [&](int n, std::string_view line) -> Result<void> {
    std::string at = "line " + std::to_string(n) + ": ";
    std::vector<std::string> fields;
    if (!splitCsv(line, fields)) return makeError(at + "a quote is not closed");
    if (fields.size() < 3 || fields[0].empty() || fields[1].empty())
      return makeError(at + "expected token,user,uid[,\"group1,group2\"]");
    Identity id{fields[1], fields[2], {}};
    for (std::size_t i = 3; i < fields.size(); ++i) {
      std::vector<std::string> groups;
      splitCsv(fields[i], groups);
      for (auto& g : groups)
        if (!g.empty()) id.groups.push_back(std::move(g));
    }
    if (!tokens.emplace(fields[0], std::move(id)).second)
      return makeError(at + "a token given twice");
    return {};
  });
  if (!read) return makeError(read.error());
  return tokens;
}

bool rbacAllows(const AccessRequest& r, const RbacLister& list, std::string& reason) {
  for (const auto& b : list("clusterrolebindings", ""))
    if (bindingGrants(b, r, "", true, list)) {
      reason = "RBAC: allowed by ClusterRoleBinding \"" +
               jsonText(jsonMember(b, "metadata"), "name") + "\"";
      return true;
    }
  if (!r.nonResource && !r.namespaceName.empty())
    for (const auto& b : list("rolebindings", r.namespaceName))
      if (bindingGrants(b, r, r.namespaceName, false, list)) {
        reason = "RBAC: allowed by RoleBinding \"" + jsonText(jsonMember(b, "metadata"), "name") +
                 "\" of namespace \"" + r.namespaceName + "\"";
        return true;
      }
  reason = "";
  return false;
}

Result<json> answerTokenReview(const json& review, const std::map<std::string, Identity>& tokens) {
  const json& spec = jsonMember(review, "spec");
  if (!jsonMember(spec, "token").is_string()) return makeError("spec.token: Required value");
  json out = review;
  out["apiVersion"] = "authentication.k8s.io/v1";
  out["kind"] = "TokenReview";
  out["metadata"] = {{"creationTimestamp", nullptr}};
  auto it = tokens.find(spec["token"].get<std::string>());
  if (it == tokens.end()) {
    out["status"] = {{"authenticated", false}, {"user", json::object()}};
    return out;
  }
  json groups = it->second.groups;
  groups.push_back("system:authenticated");
  out["status"] = {
      {"authenticated", true},
      {"user", {{"username", it->second.user}, {"uid", it->second.uid}, {"groups", groups}}}};
  out["spec"].erase("token"); // not echoed back
  return out;
}

Result<json> answerSubjectAccessReview(const json& review, const RbacLister& list) {
  const json& spec = jsonMember(review, "spec");
  AccessRequest r;
  r.user = jsonText(spec, "user");
  if (const json& groups = jsonMember(spec, "groups"); groups.is_array())
    for (const auto& g : groups)
      if (g.is_string()) r.groups.push_back(g.get<std::string>());
  const json& nonResource = jsonMember(spec, "nonResourceAttributes");
  const json& resource = jsonMember(spec, "resourceAttributes");
  if (nonResource.is_object() == resource.is_object())
    return makeError("spec: exactly one of resourceAttributes and nonResourceAttributes");
  if (r.user.empty() && r.groups.empty())
    return makeError("spec.user: at least one of user or group");
  if (nonResource.is_object()) {
    r.nonResource = true;
    r.path = jsonText(nonResource, "path");
    r.verb = jsonText(nonResource, "verb");
  } else {
    r.verb = jsonText(resource, "verb");
    r.group = jsonText(resource, "group");
    r.resource = jsonText(resource, "resource");
    r.subresource = jsonText(resource, "subresource");
    r.namespaceName = jsonText(resource, "namespace");
    r.name = jsonText(resource, "name");
  }
  std::string reason;
  bool allowed = rbacAllows(r, list, reason);
  json out = review;
  out["apiVersion"] = "authorization.k8s.io/v1";
  out["kind"] = "SubjectAccessReview";
  out["metadata"] = {{"creationTimestamp", nullptr}};
  out["status"] = {{"allowed", allowed}};
  if (!reason.empty()) out["status"]["reason"] = reason;
  return out;
}

} // namespace kuscia_host::apiserver
