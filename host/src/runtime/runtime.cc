#include "runtime/runtime.h"

namespace kuscia_host {

Runtime::Runtime(int threads)
    : threads_(threads < 1 ? 1 : threads), io_(threads_),
      guard_(boost::asio::make_work_guard(io_)) {}

Runtime::~Runtime() {
  stop();
}

void Runtime::start() {
  if (!workers_.empty()) return;
  for (int i = 0; i < threads_; ++i)
    workers_.emplace_back([this] { io_.run(); });
}

void Runtime::stop() {
  guard_.reset();
  io_.stop();
  for (auto& t : workers_)
    if (t.joinable()) t.join();
  workers_.clear();
}

} // namespace kuscia_host
