// Label selectors (Kubernetes syntax: =, ==, !=, in, notin, exists, !exists) and the field
// selectors the embedded server supports (metadata.name, metadata.namespace; = == !=).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"

namespace kuscia_host::apiserver {

class LabelSelector {
public:
  static Result<LabelSelector> parse(const std::string& text);
  bool matches(const nlohmann::json& labels) const; // labels: object or null
  bool empty() const { return terms_.empty(); }

private:
  enum class Op { kEq, kNotEq, kIn, kNotIn, kExists, kNotExists };
  struct Term {
    std::string key;
    Op op;
    std::vector<std::string> values;
  };
  std::vector<Term> terms_;
};

class FieldSelector {
public:
  static Result<FieldSelector> parse(const std::string& text);
  bool matches(const nlohmann::json& object) const;

private:
  struct Term {
    std::string field; // metadata.name / metadata.namespace
    bool equal;
    std::string value;
  };
  std::vector<Term> terms_;
};

} // namespace kuscia_host::apiserver
