// TokenReview and SubjectAccessReview, as kube-apiserver answers them for delegated
// authentication and authorization (kube-rbac-proxy, kube-controller-manager's /metrics, and
// kuscia-host's admin server with auth: kubernetes): identities from a static token file in
// kube-apiserver's --token-auth-file format, and the RBAC objects the server stores evaluated for
// resources and non-resource URLs.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace kuscia_host::apiserver {

struct Identity {
  std::string user;
  std::string uid;
  std::vector<std::string> groups;
};

// kube-apiserver's --token-auth-file: `token,user,uid[,"group1,group2"]` per line (blank lines
// and '#' comments ignored). The error names the line, never the token.
Result<std::map<std::string, Identity>> parseTokenAuthFile(std::string_view text);

// What a SubjectAccessReview asks: non-resource (`path`) or resource attributes.
struct AccessRequest {
  std::string user;
  std::vector<std::string> groups;
  std::string verb;
  bool nonResource = false;
  std::string path; // non-resource
  std::string group, resource, subresource, namespaceName, name;
};

// The stored RBAC objects of a kind ("clusterroles", "clusterrolebindings", "roles",
// "rolebindings"), in a namespace ("" for the cluster-scoped ones, or for every namespace).
using RbacLister =
    std::function<std::vector<nlohmann::json>(const std::string& plural, const std::string& ns)>;

// Whether a binding of the RBAC objects grants the request; `reason` names the binding.
bool rbacAllows(const AccessRequest& request, const RbacLister& list, std::string& reason);

// The answers (the review with its status) to a TokenReview and a SubjectAccessReview; an error
// for a review that is not well-formed (the server's 400).
Result<nlohmann::json> answerTokenReview(const nlohmann::json& review,
                                         const std::map<std::string, Identity>& tokens);
Result<nlohmann::json> answerSubjectAccessReview(const nlohmann::json& review,
                                                 const RbacLister& list);

} // namespace kuscia_host::apiserver
