#include "k8s/selector.h"

#include <algorithm>
#include <cctype>

namespace kuscia_host::k8s {
namespace {

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// Splits on commas that are not inside parentheses.
std::vector<std::string> splitTerms(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty() || !out.empty()) out.push_back(trim(cur));
  return out;
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
