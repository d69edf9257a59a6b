// task-history's worker: storage never blocks event handling. Recordings wait in a bounded queue
// (one place per task and recorder: a newer recording of a queued task replaces the queued one)
// and one thread writes them, in order, to its own connection. A failing store (database down,
// disk full) is retried with exponential backoff, the recording kept at the head of the queue;
// what does not fit in the queue meanwhile is dropped and counted, and the plugin recovers it
// with a resync once writes work again (the tasks' statuses still hold it). Retention runs on the
// same thread: a few hundred tasks per transaction, so no lock is held for long.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "history_store.h"

namespace kuscia_host::plugins::history {

class HistoryWriter {
public:
  using Open = std::function<std::unique_ptr<HistoryStore>()>;
  struct Options {
    std::size_t capacity = 10000;
    int64_t retentionNanos = int64_t{90} * 86400 * 1000000000;
    std::size_t maxTasks = 0;
    std::chrono::milliseconds pruneEvery{std::chrono::minutes(10)};
    std::size_t pruneBatch = 500;
    std::chrono::milliseconds firstBackoff{500};
    std::chrono::milliseconds maxBackoff{std::chrono::seconds(30)};
  };
  struct Counters {
    uint64_t written = 0, unchanged = 0, failures = 0, dropped = 0, pruned = 0;
    std::size_t depth = 0;
    bool failing = false;
    uint64_t episode = 0; // bumped when writes start failing
    std::string lastError, store;
  };

  // `wallNanos`: the clock retention is measured by.
  HistoryWriter(Open open, Options options, std::function<int64_t()> wallNanos);
  ~HistoryWriter();
  HistoryWriter(const HistoryWriter&) = delete;
  HistoryWriter& operator=(const HistoryWriter&) = delete;

  void start();
  // Writes what is queued (for at most `drain`), then stops the thread.
  void stop(std::chrono::milliseconds drain = std::chrono::seconds(5));
  // False when the queue is full (the recording is dropped and counted).
  bool enqueue(Recording r);
  std::size_t room() const;
  Counters snapshot() const;

private:
  void run();
  struct Outcome {
    std::string error; // empty: it worked
    bool transient = false;
  };
  // Runs a storage call with the lock released; what it threw.
  static Outcome call(std::unique_lock<std::mutex>& lock, const std::function<void()>& work);
  bool writeOne(std::unique_lock<std::mutex>& lock);
  void pruneSome(std::unique_lock<std::mutex>& lock);
  void failed(const std::string& error);

  Open open_;
  Options options_;
  std::function<int64_t()> wallNanos_;
  std::unique_ptr<HistoryStore> store_; // the worker's only
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<std::string, std::string>> order_; // (task, recorder), FIFO
  // The latest of each, shared with the write under way: a newer one replaces the pointer, so
  // the writer knows by identity whether what it wrote is still the latest.
  std::map<std::pair<std::string, std::string>, std::shared_ptr<const Recording>> queued_;
  Counters counters_;
  std::chrono::milliseconds backoff_{0};
  std::chrono::steady_clock::time_point retryAt_{}, pruneAt_{};
  bool stopping_ = false;
  std::chrono::steady_clock::time_point drainUntil_{};
  std::thread thread_;
};

} // namespace kuscia_host::plugins::history
