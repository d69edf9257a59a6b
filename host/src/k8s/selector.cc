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

bool validKey(const std::string& k) {
  if (k.empty() || k.size() > 316) return false;
  return std::all_of(k.begin(), k.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
           c == '/';
  });
}

} // namespace

Result<LabelSelector> LabelSelector::parse(const std::string& text) {
  LabelSelector sel;
  for (const auto& t : splitTerms(text)) {
    if (t.empty()) return makeError("invalid label selector \"" + text + "\": empty term");
    Term term;
    auto lower = t;
    if (t[0] == '!') {
      term.key = trim(t.substr(1));
      term.op = Op::kNotExists;
    } else if (auto p = t.find(" notin ");
               p != std::string::npos || t.find(" in ") != std::string::npos) {
      bool notin = p != std::string::npos;
      auto pos = notin ? p : t.find(" in ");
      term.key = trim(t.substr(0, pos));
      term.op = notin ? Op::kNotIn : Op::kIn;
      auto rest = trim(t.substr(pos + (notin ? 7 : 4)));
      if (rest.size() < 2 || rest.front() != '(' || rest.back() != ')')
        return makeError("invalid label selector \"" + text +
                         "\": expected (values) after in/notin");
      for (const auto& v : splitTerms(rest.substr(1, rest.size() - 2)))
        term.values.push_back(trim(v));
    } else if (auto ne = t.find("!="); ne != std::string::npos) {
      term.key = trim(t.substr(0, ne));
      term.op = Op::kNotEq;
      term.values = {trim(t.substr(ne + 2))};
    } else if (auto eq = t.find('='); eq != std::string::npos) {
      term.key = trim(t.substr(0, eq));
      term.op = Op::kEq;
      auto v = t.substr(eq + 1);
      if (!v.empty() && v[0] == '=') v = v.substr(1);
      term.values = {trim(v)};
    } else {
      term.key = t;
      term.op = Op::kExists;
    }
    if (!validKey(term.key))
      return makeError("invalid label selector \"" + text + "\": bad key \"" + term.key + "\"");
    sel.terms_.push_back(std::move(term));
  }
  return sel;
}

bool LabelSelector::matches(const nlohmann::json& labels) const {
  return matches([&labels](std::string_view key) -> std::optional<std::string_view> {
    if (labels.is_object())
      if (auto it = labels.find(key); it != labels.end() && it->is_string())
        return std::string_view(it->get_ref<const std::string&>());
    return std::nullopt;
  });
}

bool LabelSelector::matches(const LabelLookup& label) const {
  for (const auto& t : terms_) {
    std::optional<std::string_view> v = label(t.key);
    bool in = v && std::find(t.values.begin(), t.values.end(), *v) != t.values.end();
    switch (t.op) {
    case Op::kExists:
      if (!v) return false;
      break;
    case Op::kNotExists:
      if (v) return false;
      break;
    case Op::kEq:
    case Op::kIn:
      if (!in) return false;
      break;
    case Op::kNotEq:
    case Op::kNotIn:
      if (in) return false;
      break;
    }
  }
  return true;
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
