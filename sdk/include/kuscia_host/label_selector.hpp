// Kubernetes label selectors (header-only; C++17, no dependencies): =, ==, !=, in, notin, key and
// !key, comma-separated. The one parser the host (its informers and the embedded API server) and
// the SDK's fake host both use, so a plugin's selector means in its unit tests what it means in
// the host.
#ifndef KUSCIA_HOST_LABEL_SELECTOR_HPP
#define KUSCIA_HOST_LABEL_SELECTOR_HPP

#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kuscia_host::sdk {

class LabelSelector {
public:
  // nullopt for text that is not a selector; `error` (when given) then says why.
  static std::optional<LabelSelector> parse(std::string_view text, std::string* error = nullptr) {
    LabelSelector sel;
    auto fail = [&](const std::string& why) -> std::optional<LabelSelector> {
      if (error != nullptr) *error = "invalid label selector \"" + std::string(text) + "\": " + why;
      return std::nullopt;
    };
    for (const auto& t : split(std::string(text))) {
      if (t.empty()) return fail("empty term");
      Term term;
      std::size_t p = 0;
      if (t[0] == '!') {
        term.key = trim(t.substr(1));
        term.op = Op::kNotExists;
      } else if ((p = t.find(" notin ")) != std::string::npos ||
                 (p = t.find(" in ")) != std::string::npos) {
        bool notin = t.compare(p, 7, " notin ") == 0;
        term.key = trim(t.substr(0, p));
        term.op = notin ? Op::kNotIn : Op::kIn;
        std::string rest = trim(t.substr(p + (notin ? 7 : 4)));
        if (rest.size() < 2 || rest.front() != '(' || rest.back() != ')')
          return fail("expected (values) after in/notin");
        for (auto& v : split(rest.substr(1, rest.size() - 2)))
          term.values.push_back(trim(v));
      } else if ((p = t.find("!=")) != std::string::npos) {
        term.key = trim(t.substr(0, p));
        term.op = Op::kNotEq;
        term.values = {trim(t.substr(p + 2))};
      } else if ((p = t.find('=')) != std::string::npos) {
        term.key = trim(t.substr(0, p));
        term.op = Op::kEq;
        std::string v = t.substr(p + 1);
        if (!v.empty() && v[0] == '=') v = v.substr(1);
        term.values = {trim(v)};
      } else {
        term.key = t;
        term.op = Op::kExists;
      }
      if (!validKey(term.key)) return fail("bad key \"" + term.key + "\"");
      sel.terms_.push_back(std::move(term));
    }
    return sel;
  }

  bool empty() const { return terms_.empty(); }

  // The selector syntax's pieces, shared with the host's field selectors: a term without its
  // surrounding blanks, and the comma-separated terms outside parentheses.
  static std::string trim(const std::string& s) {
    auto b = s.find_first_not_of(" \t");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t") - b + 1);
  }
  static std::vector<std::string> split(const std::string& s) {
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

  // `label(key)`: the label's value (something convertible to std::string_view), or nullopt
  // when the object does not have it.
  template <class Lookup> bool matches(Lookup&& label) const {
    for (const auto& t : terms_) {
      std::optional<std::string_view> v = label(std::string_view(t.key));
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

private:
  enum class Op { kEq, kNotEq, kIn, kNotIn, kExists, kNotExists };
  struct Term {
    std::string key;
    Op op = Op::kExists;
    std::vector<std::string> values;
  };

  static bool validKey(const std::string& k) {
    if (k.empty() || k.size() > 316) return false;
    return std::all_of(k.begin(), k.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("-_./", c) != nullptr;
    });
  }
  std::vector<Term> terms_;
};

} // namespace kuscia_host::sdk

#endif // KUSCIA_HOST_LABEL_SELECTOR_HPP
