// Shared by the benchmarks: a blocking keep-alive HTTP/1.1 connection to a local server.
#pragma once

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <string>

namespace kuscia_host::bench {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

class Connection {
public:
  explicit Connection(unsigned short port) : stream_(io_) {
    stream_.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
    stream_.socket().set_option(tcp::no_delay(true));
  }
  // Returns the status; the body lands in body().
  int request(http::verb verb, const std::string& target, const std::string& body = "",
              const std::string& contentType = "application/json") {
    http::request<http::string_body> req(verb, target, 11);
    req.set(http::field::host, "127.0.0.1");
    if (!body.empty()) req.set(http::field::content_type, contentType);
    req.body() = body;
    req.prepare_payload();
    http::write(stream_, req);
    http::response_parser<http::string_body> parser;
    parser.body_limit(boost::none);
    http::read(stream_, buffer_, parser);
    body_ = std::move(parser.get().body());
    return static_cast<int>(parser.get().result_int());
  }
  const std::string& body() const { return body_; }

private:
  boost::asio::io_context io_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::string body_;
};

// Follows a watch on its own thread, counting events until `expected` arrived.

} // namespace kuscia_host::bench
