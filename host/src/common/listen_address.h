// "host:port" listen addresses, as the config file and the command line give them.
#pragma once

#include <string>

namespace kuscia_host {

// Parses "host:port" / "[v6]:port" (port 0..65535); false when malformed.
bool parseListenAddress(const std::string& text, std::string& host, unsigned short& port);

} // namespace kuscia_host
