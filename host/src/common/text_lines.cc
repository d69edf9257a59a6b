#include "common/text_lines.h"

#include <cctype>

namespace kuscia_host {

std::string_view trimSpace(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0)
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0)
    s.remove_suffix(1);
  return s;
}

Result<void> forEachLine(std::string_view text,
                         const std::function<Result<void>(int, std::string_view)>& each) {
  int n = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    std::string_view line =
        trimSpace(text.substr(start, end == std::string_view::npos ? text.npos : end - start));
    ++n;
    start = end == std::string_view::npos ? text.size() + 1 : end + 1;
    if (line.empty() || line.front() == '#') continue;
    if (auto r = each(n, line); !r) return r;
  }
  return {};
}

std::string jsonText(const nlohmann::json& obj, const char* key) {
  const nlohmann::json& v = jsonMember(obj, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

bool jsonFlag(const nlohmann::json& obj, const char* key) {
  const nlohmann::json& v = jsonMember(obj, key);
  return v.is_boolean() && v.get<bool>();
}

const nlohmann::json& jsonMember(const nlohmann::json& obj, const char* key) {
  static const nlohmann::json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

} // namespace kuscia_host
