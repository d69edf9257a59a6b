// SIGINT and SIGTERM for the long-running commands (run, apiserver, a serving demo).
#pragma once

#include <csignal>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

namespace kuscia_host {

// Takes SIGINT and SIGTERM over from construction: a signal that arrives before wait() is kept
// for it (Asio queues it) instead of killing the process, which the default action would do. So
// construct it before anything starts, and a stop during startup is still an orderly one.
class StopSignals {
public:
  StopSignals() : signals_(io_, SIGINT, SIGTERM) {}

  // Blocks until SIGINT or SIGTERM (or one already received); returns its number.
  int wait() {
    int got = 0;
    signals_.async_wait([&got](const boost::system::error_code& ec, int sig) {
      if (!ec) got = sig;
    });
    io_.run();
    io_.restart();
    return got;
  }

private:
  boost::asio::io_context io_;
  boost::asio::signal_set signals_;
};

} // namespace kuscia_host
