#include "common/yaml_json.h"

#include <charconv>

#include "common/text_lines.h"

namespace kuscia_host {
namespace {

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
