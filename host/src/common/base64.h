// Standard base64 (RFC 4648, with padding), for continue tokens and kubeconfig *-data fields.
#pragma once

#include <optional>
#include <string>

namespace kuscia_host {

std::string base64Encode(const std::string& in);
// nullopt for invalid input; white space is skipped.
std::optional<std::string> base64Decode(const std::string& in);

} // namespace kuscia_host
