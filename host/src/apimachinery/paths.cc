#include "apimachinery/paths.h"

namespace kuscia_host::apimachinery {

void appendResourcePath(std::string& out, const std::string& group, const std::string& version,
                        const std::string& namespaceName, const std::string& resource) {
  if (group.empty())
    out.append("/api/").append(version);
  else
    out.append("/apis/").append(group).append("/").append(version);
  if (!namespaceName.empty()) out.append("/namespaces/").append(namespaceName);
  out.append("/").append(resource);
}

std::string resourcePath(const std::string& group, const std::string& version,
                         const std::string& namespaceName, const std::string& resource) {
  std::string p;
  p.reserve(24 + group.size() + version.size() + namespaceName.size() + resource.size());
  appendResourcePath(p, group, version, namespaceName, resource);
  return p;
}

const std::string* badPathSegment(std::initializer_list<const std::string*> parts) {
  for (const std::string* part : parts)
    for (unsigned char ch : *part)
      if (ch < 0x20 || ch == 0x7f || ch == '/' || ch == '?' || ch == '#' || ch == '%' || ch == ' ')
        return part;
  return nullptr;
}

std::vector<std::string> splitPath(const std::string& path) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/')
      ++i;
    auto j = path.find('/', i);
    if (i < path.size()) out.push_back(path.substr(i, j == std::string::npos ? j : j - i));
    i = j == std::string::npos ? path.size() : j;
  }
  return out;
}

} // namespace kuscia_host::apimachinery
