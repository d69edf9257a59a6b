#include "history_writer.h"

#include <algorithm>

namespace kuscia_host::plugins::history {

using Clock = std::chrono::steady_clock;

HistoryWriter::HistoryWriter(Open open, Options options, std::function<int64_t()> wallNanos)
    : open_(std::move(open)), options_(options), wallNanos_(std::move(wallNanos)) {}

HistoryWriter::~HistoryWriter() {
  stop(std::chrono::milliseconds(0));
}

void HistoryWriter::start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  pruneAt_ = Clock::now(); // retention applies at start too
  thread_ = std::thread([this] { run(); });
}

void HistoryWriter::stop(std::chrono::milliseconds drain) {
  {
    std::lock_guard lock(mu_);
    if (!thread_.joinable()) return;
    stopping_ = true;
    drainUntil_ = Clock::now() + drain;
  }
  cv_.notify_all();
  thread_.join();
}

bool HistoryWriter::enqueue(Recording r) {
  {
    std::lock_guard lock(mu_);
    auto key = std::pair{r.task, r.recorder};
    if (auto it = queued_.find(key); it != queued_.end()) {
      // The latest replaces the queued one in its place.
      it->second = std::make_shared<const Recording>(std::move(r));
      return true;
    }
    if (queued_.size() >= options_.capacity) {
      ++counters_.dropped;
      return false;
    }
    order_.push_back(key);
    queued_.emplace(std::move(key), std::make_shared<const Recording>(std::move(r)));
    counters_.depth = queued_.size();
  }
  cv_.notify_one();
  return true;
}

std::size_t HistoryWriter::room() const {
  std::lock_guard lock(mu_);
  return options_.capacity - std::min(options_.capacity, queued_.size());
}

HistoryWriter::Counters HistoryWriter::snapshot() const {
  std::lock_guard lock(mu_);
  return counters_;
}

void HistoryWriter::failed(const std::string& error) {
  ++counters_.failures;
  counters_.lastError = error;
  if (!counters_.failing) {
    counters_.failing = true;
    ++counters_.episode;
  }
  backoff_ =
      backoff_.count() == 0 ? options_.firstBackoff : std::min(options_.maxBackoff, backoff_ * 2);
  retryAt_ = Clock::now() + backoff_;
}

void HistoryWriter::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    auto now = Clock::now();
    if (stopping_ && (queued_.empty() || now >= drainUntil_ || counters_.failing)) break;
    if (now < retryAt_) {
      cv_.wait_until(lock, stopping_ ? std::min(retryAt_, drainUntil_) : retryAt_);
      continue;
    }
    if (!store_) {
      std::unique_ptr<HistoryStore> s;
      auto opened = call(lock, [&] { s = open_(); });
      if (!s) {
        failed(opened.error);
        continue;
      }
      store_ = std::move(s);
      counters_.store = store_->describe();
    }
    if (!queued_.empty()) {
      writeOne(lock);
      continue;
    }
    if (now >= pruneAt_) {
      pruneSome(lock);
      continue;
    }
    if (stopping_) break;
    cv_.wait_until(lock, pruneAt_);
  }
  lock.unlock();
  store_.reset();
}

HistoryWriter::Outcome HistoryWriter::call(std::unique_lock<std::mutex>& lock,
                                           const std::function<void()>& work) {
  lock.unlock();
  Outcome out;
  try {
    work();
  } catch (const StoreError& e) {
    out.error = e.what();
    out.transient = e.transient();
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  lock.lock();
  return out;
}

bool HistoryWriter::writeOne(std::unique_lock<std::mutex>& lock) {
  auto key = order_.front();
  std::shared_ptr<const Recording> r = queued_.at(key); // a newer one may replace it meanwhile
  bool changed = false;
  auto [error, transient] = call(lock, [&] { changed = store_->record(*r); });
  if (!error.empty() && transient) {
    failed(error); // kept at the head; the connection is opened again if it went
    return false;
  }
  // Written (or refused for good: counted, and not retried forever). A newer recording that
  // came meanwhile stays queued.
  auto it = queued_.find(key);
  if (it != queued_.end() && it->second == r) {
    queued_.erase(it);
    order_.pop_front();
  } else {
    order_.pop_front();
    order_.push_back(key);
  }
  counters_.depth = queued_.size();
  if (!error.empty()) {
    ++counters_.failures;
    counters_.lastError = error;
    return false;
  }
  changed ? ++counters_.written : ++counters_.unchanged;
  counters_.failing = false;
  backoff_ = std::chrono::milliseconds(0);
  return true;
}

void HistoryWriter::pruneSome(std::unique_lock<std::mutex>& lock) {
  std::size_t n = 0;
  auto [error, transient] = call(lock, [&] {
    n = store_->prune(wallNanos_() - options_.retentionNanos, options_.maxTasks,
                      options_.pruneBatch);
  });
  if (!error.empty()) {
    if (transient) return failed(error);
    ++counters_.failures;
    counters_.lastError = error;
    pruneAt_ = Clock::now() + options_.pruneEvery;
    return;
  }
  counters_.pruned += n;
  // A full batch: more may be due, after what waits to be written.
  pruneAt_ = n == options_.pruneBatch ? Clock::now() : Clock::now() + options_.pruneEvery;
}

} // namespace kuscia_host::plugins::history
