// One watch response, from the API handler's side: the events a Watcher collects, written as
// one JSON event per line, BOOKMARKs every interval when asked for, an end after timeoutSeconds,
// and the unwatch when the stream is over for any reason. A watch from a compacted
// resourceVersion is one ERROR event (410 Expired) and the end. The HTTP session only moves the
// bytes (httpd::ChunkSource).
#pragma once

#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "apiserver/store.h"
#include "httpd/server.h"

namespace kuscia_host::apiserver {

class WatchStream final : public httpd::ChunkSource,
                          public std::enable_shared_from_this<WatchStream> {
public:
  // Streams `watcher` for `timeoutSeconds` (0: no limit), with BOOKMARKs every
  // `bookmarkInterval` when set.
  WatchStream(Store& store, std::shared_ptr<Watcher> watcher, int timeoutSeconds,
              std::optional<std::chrono::milliseconds> bookmarkInterval);
  // A stream that is one ERROR event with this Status, then the end.
  static std::shared_ptr<WatchStream> error(const ApiError& status);

  void started(std::shared_ptr<httpd::StreamControl> control) override;
  Next next(std::string& out) override;
  void closed() override;

  // Rewrites each event line before it is sent (Table watches); bookmarks and errors included.
  using Transform = std::function<std::string(const std::string& line)>;
  void setTransform(Transform t) { transform_ = std::move(t); }

  const std::shared_ptr<Watcher>& watcher() const { return watcher_; }
  int timeoutSeconds() const { return timeoutSeconds_; }
  bool bookmarks() const { return bookmarkInterval_.has_value(); }

private:
  WatchStream() = default;
  void scheduleBookmark();

  Store* store_ = nullptr;
  std::shared_ptr<Watcher> watcher_;
  int timeoutSeconds_ = 0;
  std::optional<std::chrono::milliseconds> bookmarkInterval_;
  std::string errorLine_; // set for an ERROR-only stream
  Transform transform_;
  std::weak_ptr<httpd::StreamControl> control_;
  std::optional<boost::asio::any_io_executor> executor_;
  std::unique_ptr<boost::asio::steady_timer> timeout_;
  std::unique_ptr<boost::asio::steady_timer> bookmark_;
  bool timedOut_ = false;
  bool closed_ = false;
};

} // namespace kuscia_host::apiserver
