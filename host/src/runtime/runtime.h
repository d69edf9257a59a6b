// Runtime: the io_context every component runs on, its worker threads, and the serial executors
// (strands) that guarantee one plugin instance never runs two callbacks at once.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include <thread>
#include <vector>

namespace kuscia_host {

using SerialExecutor = boost::asio::strand<boost::asio::io_context::executor_type>;

class Runtime {
public:
  explicit Runtime(int threads);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  boost::asio::io_context& io() { return io_; }
  SerialExecutor makeSerialExecutor() { return boost::asio::make_strand(io_); }

  // Starts the worker threads; idempotent.
  void start();
  // Stops the io_context and joins the workers; pending handlers are dropped. Idempotent.
  void stop();
  bool running() const { return !workers_.empty(); }

private:
  int threads_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::vector<std::thread> workers_;
};

} // namespace kuscia_host
