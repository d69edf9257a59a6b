// gateway-ready-time: the domain gateway's post-cluster hook. Once a service of this domain is
// programmed (config `source`: its Endpoints have an address, or Envoy's admin API lists the
// cluster service-<name>), it writes the annotation kuscia.secretflow/ready-time, once, only if
// absent, with a merge patch guarded by the service's resourceVersion: a 409 means the service
// changed, and the write is decided again from the new state, so a value someone else wrote is
// never overwritten. Failures are retried with backoff. A service is held only while its annotation
// is due; its Endpoints are read from the host's cache, never kept here.
#pragma once

#include <kuscia_host/plugin.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "envoy_admin.h"
#include "gateway_config.h"
#include <kuscia_model/kuscia_model.h>

namespace kuscia_host::plugins::gateway {

class GatewayReadyTime final : public sdk::Plugin {
public:
  GatewayReadyTime(sdk::Host host, std::string_view domain, std::string_view configJson);
  ~GatewayReadyTime() override;
  static void validateConfig(std::string_view configJson) { parseGatewayConfig(configJson); }

  void onStart() override;
  void onStop() override;
  void onEvent(const sdk::Event& event) override;
  void onTimer(uint64_t timerId, uint64_t userTag) override;
  void onKubeResult(const sdk::KubeResult& result) override;

  // Services held (tests): those whose annotation is still due or being written.
  std::size_t heldServices() const { return services_.size(); }

private:
  struct Service {
    std::string uid, resourceVersion, name;
    std::optional<int64_t> create;
    bool annotated = false;
    bool externalName = false; // an ExternalName service with a valid name
    uint64_t request = 0;      // the write in flight
    uint64_t retryTimer = 0;
    model::Backoff backoff;
    bool observed = false;
  };
  bool programmed(const std::string& key, const Service& s) const;
  // Writes the annotation when the service is programmed, unannotated and idle.
  void consider(const std::string& key);
  void retry(const std::string& key, Service& s);
  // Lets go of the service once it is annotated and nothing of it is in flight.
  void settle(std::map<std::string, Service>::iterator it);

  GatewayConfig config_;
  uint64_t serviceSub_ = 0, endpointsSub_ = 0;
  uint64_t pollTimer_ = 0;
  std::map<std::string, Service> services_; // those whose annotation is still due
  std::map<uint64_t, std::string> requests_, timers_;
  std::unique_ptr<EnvoyAdminPoller> poller_;
  std::optional<std::set<std::string>> clusters_;
  sdk::Metric programmedSeconds_, writes_;
};

} // namespace kuscia_host::plugins::gateway
