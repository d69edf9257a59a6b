// The timers of one plugin instance (timer_start / timer_cancel): each fires on the instance's
// serial executor, once or periodically, until cancelled or until the instance stops.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <kuscia_host/abi.h>

#include "runtime/runtime.h"

namespace kuscia_host {

class InstanceTimers {
public:
  // `fire(id, tag)` runs on `executor` for every expiry.
  using Fire = std::function<void(uint64_t id, uint64_t tag)>;
  InstanceTimers(SerialExecutor executor, Fire fire);
  ~InstanceTimers();
  InstanceTimers(const InstanceTimers&) = delete;
  InstanceTimers& operator=(const InstanceTimers&) = delete;

  // Any thread. KH_ERR_FAILED_PRECONDITION once stopped.
  kh_status_t start(uint64_t delayMs, uint64_t periodMs, uint64_t tag, uint64_t* outId,
                    std::string& err);
  // Any thread; a callback already queued will not run. KH_ERR_NOT_FOUND if unknown.
  kh_status_t cancel(uint64_t id);
  // Cancels every timer; no callback runs after this returns on the executor, and start()
  // fails from now on. Any thread.
  void stopAll();
  std::size_t active() const;

private:
  struct Timer;
  void arm(const std::shared_ptr<Timer>& t);

  SerialExecutor executor_;
  Fire fire_;
  std::atomic<bool> stopped_{false};
  mutable std::mutex mu_;
  uint64_t nextId_ = 0;
  std::map<uint64_t, std::shared_ptr<Timer>> timers_;
};

} // namespace kuscia_host
