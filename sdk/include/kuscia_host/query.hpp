// URL query strings (header-only; C++17, no dependencies): "a=1&b=x%20y&c" as {a: "1", b: "x y",
// c: ""}, percent-decoding names and values ('+' is a space; a malformed escape stays as it is; a
// name given twice keeps its last value). The one parser the host's HTTP servers and plugins that
// serve admin routes (kh_http_request_t.query is the raw query) both use.
#ifndef KUSCIA_HOST_QUERY_HPP
#define KUSCIA_HOST_QUERY_HPP

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

namespace kuscia_host::sdk {

inline std::string percentDecode(std::string_view s) {
  auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// The other way: every byte but RFC 3986's unreserved characters as %XX, for a query's value.
inline std::string percentEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.' || c == '~';
    if (unreserved) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

inline std::map<std::string, std::string> parseQuery(std::string_view query) {
  std::map<std::string, std::string> out;
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (part.empty()) continue;
    const std::size_t eq = part.find('=');
    out[percentDecode(part.substr(0, eq))] =
        eq == std::string_view::npos ? std::string() : percentDecode(part.substr(eq + 1));
  }
  return out;
}

} // namespace kuscia_host::sdk

#endif
