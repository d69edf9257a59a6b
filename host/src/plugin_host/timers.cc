#include "plugin_host/timers.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>

namespace kuscia_host {

struct InstanceTimers::Timer {
  Timer(const SerialExecutor& ex, uint64_t id_, uint64_t period, uint64_t tag_)
      : timer(ex), id(id_), periodMs(period), tag(tag_) {}
  boost::asio::steady_timer timer;
  uint64_t id;
  uint64_t periodMs;
  uint64_t tag;
  std::atomic<bool> cancelled{false};
};

InstanceTimers::InstanceTimers(SerialExecutor executor, Fire fire)
    : executor_(std::move(executor)), fire_(std::move(fire)) {}

InstanceTimers::~InstanceTimers() {
  try {
    stopAll();
  } catch (...) { // NOLINT(bugprone-empty-catch): only a failing mutex could throw here
  }
}

void InstanceTimers::arm(const std::shared_ptr<Timer>& t) {
  t->timer.async_wait([this, t](const boost::system::error_code& ec) {
    if (ec || t->cancelled || stopped_) return;
    fire_(t->id, t->tag);
    if (t->periodMs > 0 && !t->cancelled && !stopped_) {
      t->timer.expires_at(t->timer.expiry() + std::chrono::milliseconds(t->periodMs));
      arm(t);
    } else {
      std::lock_guard lock(mu_);
      timers_.erase(t->id);
    }
  });
}

kh_status_t InstanceTimers::start(uint64_t delayMs, uint64_t periodMs, uint64_t tag,
                                  uint64_t* outId, std::string& err) {
  if (outId == nullptr) {
    err = "timer_start: out_id is NULL";
    return KH_ERR_INVALID_ARGUMENT;
  }
  if (stopped_) {
    err = "timer_start: the instance is stopping";
    return KH_ERR_FAILED_PRECONDITION;
  }
  std::shared_ptr<Timer> t;
  {
    std::lock_guard lock(mu_);
    t = std::make_shared<Timer>(executor_, ++nextId_, periodMs, tag);
    timers_[t->id] = t;
  }
  *outId = t->id;
  boost::asio::post(executor_, [this, t, delayMs] {
    if (t->cancelled || stopped_) return;
    t->timer.expires_after(std::chrono::milliseconds(delayMs));
    arm(t);
  });
  return KH_OK;
}

kh_status_t InstanceTimers::cancel(uint64_t id) {
  std::lock_guard lock(mu_);
  auto it = timers_.find(id);
  if (it == timers_.end()) return KH_ERR_NOT_FOUND;
  auto t = it->second;
  t->cancelled = true;
  boost::asio::post(executor_, [t] { t->timer.cancel(); });
  timers_.erase(it);
  return KH_OK;
}

void InstanceTimers::stopAll() {
  stopped_ = true;
  std::lock_guard lock(mu_);
  for (auto& [id, t] : timers_) {
    t->cancelled = true;
    boost::asio::post(executor_, [t = t] { t->timer.cancel(); });
  }
  timers_.clear();
}

std::size_t InstanceTimers::active() const {
  std::lock_guard lock(mu_);
  return timers_.size();
}

} // namespace kuscia_host
