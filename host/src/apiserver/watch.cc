#include "apiserver/watch.h"

#include <vector>

namespace kuscia_host::apiserver {

WatchStream::WatchStream(Store& store, std::shared_ptr<Watcher> watcher, int timeoutSeconds,
                         std::optional<std::chrono::milliseconds> bookmarkInterval)
    : store_(&store), watcher_(std::move(watcher)), timeoutSeconds_(timeoutSeconds),
      bookmarkInterval_(bookmarkInterval) {}

std::shared_ptr<WatchStream> WatchStream::error(const ApiError& status) {
  std::shared_ptr<WatchStream> s(new WatchStream());
  s->errorLine_ = R"({"type":"ERROR","object":)" + apimachinery::statusJson(status).dump() + "}\n";
  return s;
}

void WatchStream::started(std::shared_ptr<httpd::StreamControl> control) {
  // Held weakly: the session owns this stream, and a strong reference back would keep both alive
  // (a leak) if the io_context stopped before the session's abort ran.
  control_ = control;
  executor_ = control->executor();
  if (!watcher_) return;
  std::weak_ptr<httpd::StreamControl> weak = control;
  watcher_->setWake([weak] {
    if (auto c = weak.lock()) c->wake();
  });
  if (timeoutSeconds_ > 0) {
    timeout_ = std::make_unique<boost::asio::steady_timer>(*executor_,
                                                           std::chrono::seconds(timeoutSeconds_));
    timeout_->async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || self->closed_) return;
      self->timedOut_ = true;
      if (auto c = self->control_.lock()) c->wake();
    });
  }
  if (bookmarkInterval_) scheduleBookmark();
}

void WatchStream::scheduleBookmark() {
  if (!bookmark_) bookmark_ = std::make_unique<boost::asio::steady_timer>(*executor_);
  bookmark_->expires_after(*bookmarkInterval_);
  bookmark_->async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || self->closed_) return;
    self->store_->bookmark(self->watcher_); // queued after every event before it; wakes us
    self->scheduleBookmark();
  });
}

httpd::ChunkSource::Next WatchStream::next(std::string& out) {
  if (!watcher_) {
    if (errorLine_.empty()) return Next::kFinish;
    out = std::move(errorLine_);
    errorLine_.clear();
    return Next::kData;
  }
  std::vector<std::shared_ptr<const std::string>> lines;
  if (!watcher_->drain(lines)) {
    // Overflowed (too slow): end the stream as upstream does; closed by the store (dropped,
    // server stopping): cut the connection.
    return watcher_->overflowed() ? Next::kFinish : Next::kAbort;
  }
  if (lines.empty()) return timedOut_ ? Next::kFinish : Next::kIdle;
  for (const auto& l : lines)
    out += transform_ ? transform_(*l) : *l;
  return Next::kData;
}

void WatchStream::closed() {
  closed_ = true;
  if (timeout_) timeout_->cancel();
  if (bookmark_) bookmark_->cancel();
  if (watcher_) store_->unwatch(watcher_);
}

} // namespace kuscia_host::apiserver
