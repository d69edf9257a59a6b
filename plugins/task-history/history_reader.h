// task-history's admin API off the host's threads: callbacks must not block, and a history query
// can take milliseconds on a big SQLite file, a round trip to PostgreSQL, or seconds while the
// database is down. onHttpRequest defers its answer (ABI 1.4) and hands the request to this
// reader, whose one thread answers requests in order from its own connection, opened when first
// asked and again after the database dropped it. A bounded number of requests waits; beyond it,
// or while stopping, a request is answered 503 at once.
#pragma once

#include <kuscia_host/plugin.hpp>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "history_store.h"

namespace kuscia_host::plugins::history {

// Answers one request from `store`, opening it first if needed, and once again when the
// connection was lost since the last request (the database restarted). `open` throws StoreError.
void answerFromStore(std::unique_ptr<HistoryStore>& store,
                     const std::function<std::unique_ptr<HistoryStore>()>& open,
                     const sdk::HttpRequest& request, sdk::HttpResponse& response,
                     int64_t nowNanos);

class HistoryReader {
public:
  using Open = std::function<std::unique_ptr<HistoryStore>()>;
  using Now = std::function<int64_t()>; // wall time, ns
  HistoryReader(Open open, Now now, std::size_t maxWaiting = 64);
  // Answers what still waits 503, and joins the thread.
  ~HistoryReader();
  HistoryReader(const HistoryReader&) = delete;
  HistoryReader& operator=(const HistoryReader&) = delete;

  // Queues the request; the answer goes to `answer`, from the reader's thread.
  void submit(const sdk::HttpRequest& request, sdk::DeferredResponse answer);

private:
  struct Job {
    std::string method, path, query;
    sdk::DeferredResponse answer;
  };
  void run();

  Open open_;
  Now now_;
  std::size_t maxWaiting_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::unique_ptr<HistoryStore> store_; // the reader thread's only
  std::thread thread_;
};

} // namespace kuscia_host::plugins::history
