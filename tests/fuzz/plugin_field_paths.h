// The JSON pointers the bundled plugins declare, for the harnesses of the watch hot path (they
// link the host; fuzz_support.h does not need it).
#pragma once

#include "kube/projection.h"

namespace kh_fuzz {

// What task-timeline, gateway-ready-time, scheduler-time and sim-agent subscribe to.
inline constexpr const char* kPointers[] = {
    "/status/phase",
    "/status/conditions",
    "/status/startTime",
    "/status/podStatuses",
    "/status/serviceStatuses",
    "/spec/parties",
    "/spec/initiator",
    "/metadata/creationTimestamp",
    "/metadata/deletionTimestamp",
    "/metadata/annotations/kuscia.secretflow~1task-id",
    "/metadata/annotations/kuscia.secretflow~1ready-time",
    "/metadata/labels/kuscia.secretflow~1port-name",
    "/subsets",
    "/spec/type",
    "/spec/externalName",
    "/status/containerStatuses",
    "/status/podIP",
    "/status/reason",
    "/status/message",
    "/involvedObject/kind",
    "/involvedObject/name",
    "/involvedObject/uid",
    "/reason",
    "/message",
    "/eventTime",
    "/lastTimestamp",
    "/firstTimestamp",
};

// The pointers above, compiled once for the process.
inline const kuscia_host::kube::FieldPaths& pluginFieldPaths() {
  static const auto* paths = [] {
    auto* p = new kuscia_host::kube::FieldPaths();
    for (const char* ptr : kPointers)
      (void)p->add(ptr);
    return p;
  }();
  return *paths;
}

} // namespace kh_fuzz
