#include "k8s/selector.h"

#include <algorithm>
#include <cctype>

namespace kuscia_host::k8s {
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

Result<FieldSelector> FieldSelector::parse(const std::string& text) {
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
    if (term.field != "metadata.name" && term.field != "metadata.namespace")
      return makeError("field label not supported: " + term.field);
    sel.terms_.push_back(std::move(term));
  }
  return sel;
}

bool FieldSelector::matches(const nlohmann::json& object) const {
  for (const auto& t : terms_) {
    const auto& meta = object["metadata"];
    std::string key = t.field == "metadata.name" ? "name" : "namespace";
    std::string v = meta.is_object() && meta.contains(key) ? meta[key].get<std::string>() : "";
    if ((v == t.value) != t.equal) return false;
  }
  return true;
}

} // namespace kuscia_host::k8s
