#include "apiserver/schema.h"

#include <kuscia_host/kube_text.hpp>
#include <yaml-cpp/yaml.h>

#include "common/yaml_json.h"

namespace kuscia_host::apiserver {
namespace {

using nlohmann::json;

std::unique_ptr<SchemaNode> parseNode(const json& j) {
  auto n = std::make_unique<SchemaNode>();
  if (!j.is_object()) return n;
  n->type = j.value("type", "");
  n->format = j.value("format", "");
  n->nullable = j.value("nullable", false);
  n->preserveUnknownFields = j.value("x-kubernetes-preserve-unknown-fields", false);
  if (auto it = j.find("properties"); it != j.end() && it->is_object())
    for (const auto& [k, v] : it->items())
      n->properties[k] = parseNode(v);
  if (auto it = j.find("items"); it != j.end()) n->items = parseNode(*it);
  if (auto it = j.find("additionalProperties"); it != j.end() && it->is_object())
    n->additionalProperties = parseNode(*it);
  if (auto it = j.find("required"); it != j.end() && it->is_array())
    for (const auto& r : *it)
      n->required.push_back(r.get<std::string>());
  if (auto it = j.find("enum"); it != j.end() && it->is_array())
    n->enumValues.assign(it->begin(), it->end());
  return n;
}

std::string child(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

void prune(const SchemaNode& s, json& v, const std::string& path, std::vector<std::string>& out,
           bool root) {
  if (s.preserveUnknownFields && s.properties.empty() && !s.additionalProperties) return;
  if (v.is_object() && (s.type == "object" || s.type.empty())) {
    for (auto it = v.begin(); it != v.end();) {
      const std::string key = it.key();
      if (root && (key == "metadata" || key == "apiVersion" || key == "kind")) {
        ++it;
        continue;
      }
      const SchemaNode* c = nullptr;
      if (auto p = s.properties.find(key); p != s.properties.end())
        c = p->second.get();
      else if (s.additionalProperties)
        c = s.additionalProperties.get();
      if (c == nullptr) {
        if (s.preserveUnknownFields) {
          ++it;
          continue;
        }
        out.push_back(child(path, key));
        it = v.erase(it);
        continue;
      }
      if (it->is_null() && !c->nullable) {
        it = v.erase(it);
        continue;
      }
      prune(*c, *it, child(path, key), out, false);
      ++it;
    }
  } else if (v.is_array() && s.items) {
    for (std::size_t i = 0; i < v.size(); ++i)
      prune(*s.items, v[i], path + "[" + std::to_string(i) + "]", out, false);
  }
}

std::string jsonTypeName(const json& v) {
  if (v.is_number_integer()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_boolean()) return "boolean";
  if (v.is_array()) return "array";
  if (v.is_object()) return "object";
  return "null";
}

bool typeMatches(const std::string& type, const json& v) {
  if (type.empty()) return true;
  if (type == "integer") return v.is_number_integer();
  if (type == "number") return v.is_number();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "array") return v.is_array();
  if (type == "object") return v.is_object();
  return true;
}

void validate(const SchemaNode& s, const json& v, const std::string& path,
              std::vector<FieldCause>& out) {
  if (v.is_null()) {
    if (!s.nullable && !s.type.empty())
      out.push_back(
          {"FieldValueInvalid",
           "Invalid value: \"null\": " + path + " in body must be of type " + s.type + ": \"null\"",
           path});
    return;
  }
  if (!typeMatches(s.type, v)) {
    out.push_back({"FieldValueInvalid",
                   "Invalid value: \"" + jsonTypeName(v) + "\": " + path +
                       " in body must be of type " + s.type + ": \"" + jsonTypeName(v) + "\"",
                   path});
    return;
  }
  if (s.format == "date-time" && v.is_string() && !isRfc3339(v.get<std::string>())) {
    out.push_back({"FieldValueInvalid",
                   "Invalid value: \"" + v.get<std::string>() + "\": " + path +
                       " in body must be of type date-time: \"" + v.get<std::string>() + "\"",
                   path});
  }
  if (!s.enumValues.empty() &&
      std::find(s.enumValues.begin(), s.enumValues.end(), v) == s.enumValues.end()) {
    out.push_back({"FieldValueNotSupported", "Unsupported value: " + v.dump(), path});
  }
  if (v.is_object()) {
    for (const auto& r : s.required)
      if (!v.contains(r)) out.push_back({"FieldValueRequired", "Required value", child(path, r)});
    for (const auto& [k, c] : v.items()) {
      if (path.empty() && (k == "metadata" || k == "apiVersion" || k == "kind")) continue;
      if (auto p = s.properties.find(k); p != s.properties.end())
        validate(*p->second, c, child(path, k), out);
      else if (s.additionalProperties)
        validate(*s.additionalProperties, c, child(path, k), out);
    }
  } else if (v.is_array() && s.items) {
    for (std::size_t i = 0; i < v.size(); ++i)
      validate(*s.items, v[i], path + "[" + std::to_string(i) + "]", out);
  }
}

} // namespace

bool isRfc3339(const std::string& s) {
  return sdk::parseTime(s).has_value();
}

Result<CrdDefinition> parseCrd(const std::string& manifest) {
  json j;
  try {
    j = yamlToJson(YAML::Load(manifest));
  } catch (const YAML::Exception& e) {
    return makeError(std::string("CRD manifest is not valid YAML: ") + e.what());
  }
  try {
    CrdDefinition d;
    const auto& spec = j.at("spec");
    d.group = spec.at("group").get<std::string>();
    d.namespaced = spec.value("scope", "Namespaced") == "Namespaced";
    const auto& names = spec.at("names");
    d.plural = names.at("plural").get<std::string>();
    d.singular = names.value("singular", d.plural);
    d.kind = names.at("kind").get<std::string>();
    d.listKind = names.value("listKind", d.kind + "List");
    if (names.contains("shortNames"))
      d.shortNames = names["shortNames"].get<std::vector<std::string>>();
    const auto& version = spec.at("versions").at(0);
    d.version = version.at("name").get<std::string>();
    d.hasStatus = version.contains("subresources") && version["subresources"].contains("status");
    if (version.contains("additionalPrinterColumns"))
      for (const auto& c : version["additionalPrinterColumns"])
        d.printerColumns.push_back({c.at("name").get<std::string>(), c.value("type", "string"),
                                    c.at("jsonPath").get<std::string>()});
    d.schema = parseNode(version.at("schema").at("openAPIV3Schema"));
    return d;
  } catch (const json::exception& e) {
    return makeError(std::string("CRD manifest lacks a required field: ") + e.what());
  }
}

void pruneObject(const SchemaNode& root, json& object, std::vector<std::string>& pruned) {
  prune(root, object, "", pruned, true);
}

std::vector<FieldCause> validateObject(const SchemaNode& root, const json& object) {
  std::vector<FieldCause> out;
  validate(root, object, "", out);
  return out;
}

} // namespace kuscia_host::apiserver
