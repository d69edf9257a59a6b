// Health checks for /livez and /readyz. Each component registers named checks; /readyz is ready
// when every counted check passes, and ?verbose lists them all.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace kuscia_host {

struct HealthStatus {
  bool ok = true;
  // false: shown in ?verbose but does not fail readiness (e.g. a disabled optional plugin).
  bool counted = true;
  std::string detail;
};

class HealthRegistry {
public:
  using Check = std::function<HealthStatus()>;

  void add(std::string name, Check check) {
    std::lock_guard lock(mu_);
    checks_.emplace_back(std::move(name), std::move(check));
  }
  std::vector<std::pair<std::string, HealthStatus>> evaluate() const {
    std::vector<std::pair<std::string, Check>> copy;
    {
      std::lock_guard lock(mu_);
      copy = checks_;
    }
    std::vector<std::pair<std::string, HealthStatus>> out;
    out.reserve(copy.size());
    for (auto& [name, check] : copy)
      out.emplace_back(name, check());
    return out;
  }

private:
  mutable std::mutex mu_;
  std::vector<std::pair<std::string, Check>> checks_;
};

} // namespace kuscia_host
