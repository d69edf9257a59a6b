// The host services table (kh_host_api_v1_t) handed to every plugin: C trampolines, each
// forwarding to the PluginInstance behind the kh_host_ctx_t.
#pragma once

#include <kuscia_host/abi.h>

#include <cstddef>
#include <string>

namespace kuscia_host {

// The kube functions are NULL when no cluster is configured. The table is static.
const kh_host_api_v1_t* hostApiTable(bool withKube);

// Writes msg into a caller's (err, len) buffer as the ABI's errors are given: NUL-terminated,
// truncated to fit; nothing when the buffer is NULL or empty.
void copyError(char* err, std::size_t len, const std::string& msg);

} // namespace kuscia_host
