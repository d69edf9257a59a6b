#include "common/yaml_json.h"

#include <charconv>

namespace kuscia_host {
namespace {

// Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF).
bool validUtf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;                  // continuation bytes
    unsigned char lo = 0x80, hi = 0xBF; // the range of the first one
    if (c < 0x80) {
      n = 0;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      if (c == 0xE0) lo = 0xA0; // overlong
      if (c == 0xED) hi = 0x9F; // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      if (c == 0xF0) lo = 0x90; // overlong
      if (c == 0xF4) hi = 0x8F; // past U+10FFFF
    } else {
      return false;
    }
    if (s.size() - i - 1 < n) return false;
    for (std::size_t k = 1; k <= n; ++k) {
      auto b = static_cast<unsigned char>(s[i + k]);
      if (k == 1 ? (b < lo || b > hi) : (b & 0xC0) != 0x80) return false;
    }
    i += n + 1;
  }
  return true;
}

// A scalar's text, refused (as a YAML parser error at the scalar) when it is not UTF-8: JSON
// text must be, and every consumer of the result dumps it.
const std::string& text(const YAML::Node& n) {
  if (!validUtf8(n.Scalar())) throw YAML::ParserException(n.Mark(), "not valid UTF-8 text");
  return n.Scalar();
}

} // namespace

nlohmann::json yamlToJson(const YAML::Node& n) {
  switch (n.Type()) {
  case YAML::NodeType::Null:
  case YAML::NodeType::Undefined: return nullptr;
  case YAML::NodeType::Sequence: {
    auto a = nlohmann::json::array();
    for (const auto& item : n)
      a.push_back(yamlToJson(item));
    return a;
  }
  case YAML::NodeType::Map: {
    auto o = nlohmann::json::object();
    for (auto it = n.begin(); it != n.end(); ++it)
      o[text(it->first)] = yamlToJson(it->second);
    return o;
  }
  case YAML::NodeType::Scalar: break;
  }
  const std::string& s = text(n);
  if (n.Tag() != "?") return s; // quoted or explicitly tagged: a string
  if (s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  int64_t i = 0;
  auto ri = std::from_chars(s.data(), s.data() + s.size(), i);
  if (ri.ec == std::errc() && ri.ptr == s.data() + s.size()) return i;
  double d = 0;
  auto rd = std::from_chars(s.data(), s.data() + s.size(), d);
  if (rd.ec == std::errc() && rd.ptr == s.data() + s.size()) return d;
  return s;
}

} // namespace kuscia_host
