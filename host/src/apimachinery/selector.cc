#include "apimachinery/selector.h"

#include <algorithm>
#include <cctype>

namespace kuscia_host::apimachinery {
namespace {

std::string trim(const std::string& s) {
  return sdk::LabelSelector::trim(s);
}
std::vector<std::string> splitTerms(const std::string& s) {
  return sdk::LabelSelector::split(s);
}

} // namespace

Result<LabelSelector> LabelSelector::parse(const std::string& text) {
  std::string error;
  auto sel = sdk::LabelSelector::parse(text, &error);
  if (!sel) return makeError(error);
  return LabelSelector(std::move(*sel));
}

bool LabelSelector::matches(const nlohmann::json& labels) const {
  return selector_.matches([&labels](std::string_view key) -> std::optional<std::string_view> {
    if (labels.is_object())
      if (auto it = labels.find(key); it != labels.end() && it->is_string())
        return std::string_view(it->get_ref<const std::string&>());
    return std::nullopt;
  });
}

namespace {

bool supportedField(const std::string& field, const std::string& resource) {
  if (field == "metadata.name" || field == "metadata.namespace") return true;
  if (resource != "events") return false;
  static const char* const kEventFields[] = {"involvedObject.kind",
                                             "involvedObject.namespace",
                                             "involvedObject.name",
                                             "involvedObject.uid",
                                             "involvedObject.apiVersion",
                                             "involvedObject.fieldPath",
                                             "involvedObject.resourceVersion",
                                             "reason",
                                             "reportingComponent",
                                             "source",
                                             "type"};
  return std::find(std::begin(kEventFields), std::end(kEventFields), field) !=
         std::end(kEventFields);
}

} // namespace

Result<FieldSelector> FieldSelector::parse(const std::string& text, const std::string& resource) {
  FieldSelector sel;
  for (const auto& t : splitTerms(text)) {
    Term term;
    auto ne = t.find("!=");
    auto eq = t.find('=');
    if (ne != std::string::npos) {
      term.field = trim(t.substr(0, ne));
      term.equal = false;
      term.value = trim(t.substr(ne + 2));
    } else if (eq != std::string::npos) {
      term.field = trim(t.substr(0, eq));
      term.equal = true;
      auto v = t.substr(eq + 1);
      if (!v.empty() && v[0] == '=') v = v.substr(1);
      term.value = trim(v);
    } else {
      return makeError("invalid field selector \"" + text + "\"");
    }
    if (!supportedField(term.field, resource))
      return makeError("field label not supported: " + term.field);
    sel.terms_.push_back(std::move(term));
  }
  return sel;
}

bool FieldSelector::matches(const nlohmann::json& object) const {
  for (const auto& t : terms_) {
    // An event's "source" is its source.component.
    std::string path = t.field == "source" ? "source.component" : t.field;
    const nlohmann::json* at = &object;
    for (std::size_t start = 0; at != nullptr && start <= path.size();) {
      auto dot = path.find('.', start);
      std::string key =
          path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      at = at->is_object() && at->contains(key) ? &at->at(key) : nullptr;
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    std::string v = at != nullptr && at->is_string() ? at->get<std::string>() : "";
    if ((v == t.value) != t.equal) return false;
  }
  return true;
}

} // namespace kuscia_host::apimachinery
