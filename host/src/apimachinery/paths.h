// Kubernetes REST paths, shared by the client (kube/) and the embedded API server (apiserver/).
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

namespace kuscia_host::apimachinery {

// The collection path of a resource: /api/v1[/namespaces/NS]/pods or /apis/G/V[/namespaces/NS]/R.
std::string resourcePath(const std::string& group, const std::string& version,
                         const std::string& namespaceName, const std::string& resource);
// The same appended to `out` (a request's target, before the object's name).
void appendResourcePath(std::string& out, const std::string& group, const std::string& version,
                        const std::string& namespaceName, const std::string& resource);

// The first of `parts` that cannot be a path segment (has '/', '?', '#', '%', ' ' or a control
// character), if any.
const std::string* badPathSegment(std::initializer_list<const std::string*> parts);

// "a/b" -> {"a", "b"}; empty segments (leading, trailing, doubled slashes) are skipped.
std::vector<std::string> splitPath(const std::string& path);

} // namespace kuscia_host::apimachinery
