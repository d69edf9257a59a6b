// Label selectors (Kubernetes syntax: =, ==, !=, in, notin, exists, !exists) and the field
// selectors the embedded server supports (metadata.name, metadata.namespace; = == !=).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace kuscia_host::k8s {

class LabelSelector {
public:
  static Result<LabelSelector> parse(const std::string& text);
  bool matches(const nlohmann::json& labels) const; // labels: object or null
  // A label's value by key, nullopt when the object does not have it.
  using LabelLookup = std::function<std::optional<std::string_view>(std::string_view)>;
  bool matches(const LabelLookup& label) const;
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

} // namespace kuscia_host::k8s
