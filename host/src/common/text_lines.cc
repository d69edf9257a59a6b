#include "common/text_lines.h"

#include <cctype>

namespace kuscia_host {

// Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF).
bool validUtf8(std::string_view s) {
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
