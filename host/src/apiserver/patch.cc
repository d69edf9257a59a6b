#include "apiserver/patch.h"

#include <algorithm>

namespace kuscia_host::apiserver {
namespace {

using nlohmann::json;

// The merge key of list `field` inside `parent` (the enclosing field name), or "" when the list
// is replaced as a whole. From the patchMergeKey tags of k8s.io/api core/v1.
std::string mergeKey(const std::string& kind, const std::string& parent, const std::string& field) {
  if (field == "containers" || field == "initContainers" || field == "ephemeralContainers" ||
      field == "volumes" || field == "imagePullSecrets" || field == "env")
    return "name";
  if (field == "ports") return kind == "Service" && parent == "spec" ? "port" : "containerPort";
  if (field == "volumeMounts") return "mountPath";
  if (field == "conditions") return "type";
  if (field == "podIPs" || field == "hostAliases") return "ip";
  if (field == "ownerReferences") return "uid";
  return "";
}

bool isSetList(const std::string& field) {
  return field == "finalizers";
}

json merge(const json& original, const json& patch, const std::string& kind,
           const std::string& field);

json mergeList(const json& original, const json& patch, const std::string& key,
               const std::string& kind, const std::string& field) {
  json result = original.is_array() ? original : json::array();
  for (const auto& item : patch) {
    if (!item.is_object() || !item.contains(key)) {
      result.push_back(item);
      continue;
    }
    auto it = std::find_if(result.begin(), result.end(), [&](const json& o) {
      return o.is_object() && o.contains(key) && o[key] == item[key];
    });
    bool del = item.contains("$patch") && item["$patch"] == "delete";
    if (del) {
      if (it != result.end()) result.erase(it);
      continue;
    }
    if (it != result.end())
      *it = merge(*it, item, kind, field);
    else
      result.push_back(merge(json::object(), item, kind, field));
  }
  return result;
}

void applyOrder(json& list, const json& order, const std::string& key) {
  if (!list.is_array() || !order.is_array()) return;
  json sorted = json::array();
  for (const auto& o : order) {
    for (auto it = list.begin(); it != list.end(); ++it) {
      bool same = key.empty() ? *it == o
                              : (it->is_object() && o.is_object() && it->contains(key) &&
                                 o.contains(key) && (*it)[key] == o[key]);
      if (same) {
        sorted.push_back(*it);
        list.erase(it);
        break;
      }
    }
  }
  for (auto& rest : list)
    sorted.push_back(rest);
  list = std::move(sorted);
}

json merge(const json& original, const json& patch, const std::string& kind,
           const std::string& field) {
  if (!patch.is_object()) return patch;
  if (auto p = patch.find("$patch"); p != patch.end()) {
    if (*p == "replace") {
      json r = patch;
      r.erase("$patch");
      return r;
    }
    if (*p == "delete") return nullptr;
  }
  json result = original.is_object() ? original : json::object();
  for (const auto& [k, v] : patch.items()) {
    if (k.rfind('$', 0) == 0) continue;
    if (v.is_null()) {
      result.erase(k);
    } else if (v.is_array()) {
      std::string key = mergeKey(kind, field, k);
      if (!key.empty()) {
        result[k] = mergeList(result.contains(k) ? result[k] : json(), v, key, kind, k);
      } else if (isSetList(k)) {
        json merged = result.contains(k) && result[k].is_array() ? result[k] : json::array();
        for (const auto& item : v)
          if (std::find(merged.begin(), merged.end(), item) == merged.end()) merged.push_back(item);
        result[k] = merged;
      } else {
        result[k] = v;
      }
    } else if (v.is_object()) {
      json merged = merge(result.contains(k) ? result[k] : json(), v, kind, k);
      if (merged.is_null())
        result.erase(k);
      else
        result[k] = merged;
    } else {
      result[k] = v;
    }
  }
  for (const auto& [k, v] : patch.items()) {
    static const std::string kDelete = "$deleteFromPrimitiveList/";
    static const std::string kOrder = "$setElementOrder/";
    if (k.rfind(kDelete, 0) == 0) {
      auto f = k.substr(kDelete.size());
      if (result.contains(f) && result[f].is_array()) {
        auto& list = result[f];
        for (const auto& d : v)
          list.erase(std::remove(list.begin(), list.end(), d), list.end());
      }
    } else if (k.rfind(kOrder, 0) == 0) {
      auto f = k.substr(kOrder.size());
      if (result.contains(f)) applyOrder(result[f], v, mergeKey(kind, field, f));
    } else if (k == "$retainKeys" && v.is_array()) {
      for (auto it = result.begin(); it != result.end();) {
        if (std::find(v.begin(), v.end(), it.key()) == v.end() && !patch.contains(it.key()))
          it = result.erase(it);
        else
          ++it;
      }
    }
  }
  return result;
}

} // namespace

Result<json> applyMergePatch(const json& original, const json& patch) {
  json result = original;
  result.merge_patch(patch);
  return result;
}

Result<json> applyJsonPatch(const json& original, const json& patch) {
  if (!patch.is_array()) return makeError("json patch must be an array of operations");
  try {
    return original.patch(patch);
  } catch (const json::exception& e) {
    return makeError(e.what());
  }
}

Result<json> applyStrategicMergePatch(const json& original, const json& patch,
                                      const std::string& kind) {
  if (!patch.is_object()) return makeError("strategic merge patch must be a JSON object");
  return merge(original, patch, kind, "");
}

} // namespace kuscia_host::apiserver
