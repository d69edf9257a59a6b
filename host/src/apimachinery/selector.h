// Label selectors (Kubernetes syntax: =, ==, !=, in, notin, exists, !exists) and the field
// selectors the embedded server supports (metadata.name, metadata.namespace; = == !=).
#pragma once

#include <kuscia_host/label_selector.hpp>

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace kuscia_host::apimachinery {

// The SDK's parser and matcher (label_selector.hpp): one meaning for the host, the embedded API
// server and the SDK's fake host.
class LabelSelector {
public:
  LabelSelector() = default; // matches everything
  static Result<LabelSelector> parse(const std::string& text);
  bool matches(const nlohmann::json& labels) const; // labels: object or null
  // A label's value by key, nullopt when the object does not have it.
  using LabelLookup = std::function<std::optional<std::string_view>(std::string_view)>;
  bool matches(const LabelLookup& label) const { return selector_.matches(label); }
  bool empty() const { return selector_.empty(); }

private:
  explicit LabelSelector(sdk::LabelSelector s) : selector_(std::move(s)) {}
  sdk::LabelSelector selector_;
};

class FieldSelector {
public:
  // The field labels every resource takes (metadata.name, metadata.namespace), and those of
  // `resource` as Kubernetes defines them (events: involvedObject.*, reason, type, source, ...).
  static Result<FieldSelector> parse(const std::string& text, const std::string& resource = "");
  bool matches(const nlohmann::json& object) const;

private:
  struct Term {
    std::string field; // a dotted path: metadata.name, involvedObject.uid, ...
    bool equal;
    std::string value;
  };
  std::vector<Term> terms_;
};

} // namespace kuscia_host::apimachinery
