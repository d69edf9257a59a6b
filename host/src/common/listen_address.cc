#include "common/listen_address.h"

#include <charconv>
#include <cstdint>

namespace kuscia_host {

bool parseListenAddress(const std::string& text, std::string& host, unsigned short& port) {
  std::string h;
  std::string p;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return false;
    h = text.substr(1, close - 1);
    p = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string::npos || text.find(':') != colon) return false;
    h = text.substr(0, colon);
    p = text.substr(colon + 1);
  }
  int64_t v = -1;
  auto r = std::from_chars(p.data(), p.data() + p.size(), v);
  if (h.empty() || r.ec != std::errc() || r.ptr != p.data() + p.size() || v < 0 || v > 65535)
    return false;
  host = h;
  port = static_cast<unsigned short>(v);
  return true;
}

} // namespace kuscia_host
