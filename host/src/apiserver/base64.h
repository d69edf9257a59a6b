// Standard base64 (RFC 4648, with padding), for continue tokens and kubeconfig *-data fields.
#pragma once

#include <string>

namespace kuscia_host::apiserver {

std::string base64Encode(const std::string& in);
// Returns "" for invalid input.
std::string base64Decode(const std::string& in);

} // namespace kuscia_host::apiserver
