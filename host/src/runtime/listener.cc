#include "runtime/listener.h"

#include <boost/asio/strand.hpp>

#include "common/listen_address.h"

namespace kuscia_host {

Result<std::shared_ptr<boost::asio::ip::tcp::acceptor>>
openListener(boost::asio::io_context& io, const std::string& address, const std::string& what) {
  using boost::asio::ip::tcp;
  std::string host;
  unsigned short port = 0;
  if (!parseListenAddress(address, host, port))
    return makeError(what + ": bad listen address '" + address + "' (expected host:port)");
  if (host == "localhost") host = "127.0.0.1";
  boost::system::error_code ec;
  auto ip = boost::asio::ip::make_address(host, ec);
  if (ec) return makeError(what + ": '" + host + "' is not an IP address");
  auto acceptor = std::make_shared<tcp::acceptor>(boost::asio::make_strand(io));
  tcp::endpoint ep(ip, port);
  acceptor->open(ep.protocol(), ec);
  if (!ec) acceptor->set_option(boost::asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor->bind(ep, ec);
  if (!ec) acceptor->listen(boost::asio::socket_base::max_listen_connections, ec);
  if (ec) return makeError(what + ": cannot listen on " + address + ": " + ec.message());
  return acceptor;
}

} // namespace kuscia_host
