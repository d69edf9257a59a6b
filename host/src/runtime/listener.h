// Opening a TCP listener from a "host:port" config value, shared by every server in the host.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <memory>
#include <string>

#include "common/result.h"

namespace kuscia_host {

// Parses `address` ("localhost" means 127.0.0.1; port 0 picks a free port), then opens, binds
// and listens on an acceptor with its own strand. Errors start with `what` ("admin: ...").
Result<std::shared_ptr<boost::asio::ip::tcp::acceptor>>
openListener(boost::asio::io_context& io, const std::string& address, const std::string& what);

} // namespace kuscia_host
