// A task's place in a list served newest first (task-timeline's /api/v1/timelines, task-history's
// /api/v1/history): by creation, newest first, then by name; and the "continue" token that
// resumes a list after it, as Kubernetes lists do (keyset pagination: no offset to skip).
#pragma once

#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <kuscia_model/kuscia.h>

namespace kuscia_host::model {

struct ListKey {
  int64_t created = 0; // 0: no (readable) creation time, listed last
  std::string name;
  bool before(const ListKey& o) const {
    return created != o.created ? created > o.created : name < o.name;
  }
  // "<nanos>.<name>": digits, a dot and a DNS name, safe in a query string as it is.
  std::string token() const { return std::to_string(created) + "." + name; }
  static std::optional<ListKey> fromToken(std::string_view t) {
    auto dot = t.find('.');
    if (dot == std::string_view::npos || dot == 0 || dot > 19) return std::nullopt;
    ListKey k;
    for (char c : t.substr(0, dot)) {
      if (c < '0' || c > '9' || k.created > (INT64_MAX - (c - '0')) / 10) return std::nullopt;
      k.created = k.created * 10 + (c - '0');
    }
    k.name = std::string(t.substr(dot + 1));
    if (!isDnsSubdomain(k.name)) return std::nullopt;
    return k;
  }
};

// A list's `limit` from 1 to `max`; nullopt when it is not one.
inline std::optional<std::size_t> parseListLimit(std::string_view v, std::size_t max) {
  std::size_t n = 0;
  if (v.empty() || v.size() > 7) return std::nullopt;
  for (char c : v) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<std::size_t>(c - '0');
  }
  if (n < 1 || n > max) return std::nullopt;
  return n;
}

} // namespace kuscia_host::model
