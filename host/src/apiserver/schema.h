// CRD structural schemas: parsed from a CustomResourceDefinition manifest, used by the embedded
// API server to prune undeclared fields and validate custom objects as a real API server does.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"

namespace kuscia_host::apiserver {

struct SchemaNode {
  std::string type; // object, array, string, integer, number, boolean; "" = any
  std::string format;
  std::map<std::string, std::unique_ptr<SchemaNode>> properties;
  std::unique_ptr<SchemaNode> items;
  std::unique_ptr<SchemaNode> additionalProperties;
  std::vector<std::string> required;
  std::vector<nlohmann::json> enumValues;
  bool preserveUnknownFields = false;
  bool nullable = false;
};

struct PrinterColumn {
  std::string name;
  std::string type;
  std::string jsonPath; // ".status.phase"
};

// A field-level problem, as in metav1.StatusCause.
struct FieldCause {
  std::string reason; // FieldValueRequired, FieldValueInvalid, FieldValueNotSupported
  std::string message;
  std::string field;
};

struct CrdDefinition {
  std::string group, version, plural, singular, kind, listKind;
  std::vector<std::string> shortNames;
  bool namespaced = true;
  bool hasStatus = false;
  std::vector<PrinterColumn> printerColumns;
  std::shared_ptr<const SchemaNode> schema;
};

// Parses a CRD manifest (YAML or JSON); takes the first served version.
Result<CrdDefinition> parseCrd(const std::string& manifest);

// Drops fields the schema does not declare (metadata, apiVersion and kind at the root are left
// alone) and null values of non-nullable fields; appends the dotted path of each dropped field.
void pruneObject(const SchemaNode& root, nlohmann::json& object, std::vector<std::string>& pruned);

// Checks types, formats, enums and required fields; one cause per problem.
std::vector<FieldCause> validateObject(const SchemaNode& root, const nlohmann::json& object);

// RFC 3339 date-time (what `format: date-time` accepts).
bool isRfc3339(const std::string& s);

} // namespace kuscia_host::apiserver
