// The host services table (kh_host_api_v1_t) handed to every plugin: C trampolines, each
// forwarding to the PluginInstance behind the kh_host_ctx_t.
#pragma once

#include <kuscia_host/abi.h>

namespace kuscia_host {

// The kube functions are NULL when no cluster is configured. The table is static.
const kh_host_api_v1_t* hostApiTable(bool withKube);

} // namespace kuscia_host
