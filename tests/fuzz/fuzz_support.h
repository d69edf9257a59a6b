// Shared by the fuzz harnesses: the JSON pointers the bundled plugins declare, and a failure that
// libFuzzer records as a crash with its input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

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
};

// An invariant broke: report it and abort, so that libFuzzer saves the input.
[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "invariant broken: %s\n", what.c_str());
  std::abort();
}

} // namespace kh_fuzz
