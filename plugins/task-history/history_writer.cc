#include "history_writer.h"

#include <pthread.h>

#include <algorithm>
#include <optional>
#include <vector>

namespace kuscia_host::plugins::history {

using Clock = std::chrono::steady_clock;

namespace {
// How long the thread sleeps when nothing is due (it is woken for anything new).
constexpr std::chrono::hours kIdle{1};
} // namespace

HistoryWriter::HistoryWriter(Open open, Options options)
    : open_(std::move(open)), options_(options) {}

HistoryWriter::~HistoryWriter() {
  std::unique_lock lock(mu_);
  stopThread(lock, std::chrono::milliseconds(0));
}

HistoryWriter::User HistoryWriter::attach(std::function<int64_t()> wallNanos,
                                          std::string recorder) {
  std::unique_lock lock(mu_);
  // A thread the last user's detach is stopping ends first.
  cv_.wait(lock, [this] { return !joining_; });
  const User user = nextUser_++;
  PerUser& u = users_[user];
  u.wallNanos = std::move(wallNanos);
  u.recorder = std::move(recorder);
  u.attached = true;
  if (!thread_.joinable()) {
    stopping_ = false;
    pruneAt_ = Clock::now(); // retention applies at start too
    thread_ = std::thread([this] { run(); });
  }
  return user;
}

void HistoryWriter::detach(User user, std::chrono::milliseconds drain) {
  std::unique_lock lock(mu_);
  auto it = users_.find(user);
  if (it == users_.end() || !it->second.attached) return;
  it->second.attached = false;
  it->second.wallNanos = nullptr;
  if (attachedUsers() == 0)
    stopThread(lock, drain);
  else
    cv_.notify_all(); // a recording waiting for this user's goes now
}

void HistoryWriter::stopThread(std::unique_lock<std::mutex>& lock,
                               std::chrono::milliseconds drain) {
  cv_.wait(lock, [this] { return !joining_; }); // another call is stopping it
  if (!thread_.joinable()) return;
  stopping_ = true;
  drainUntil_ = Clock::now() + drain;
  joining_ = true;
  lock.unlock();
  cv_.notify_all();
  thread_.join();
  lock.lock();
  joining_ = false;
  cv_.notify_all();
}

std::size_t HistoryWriter::attachedUsers() const {
  return static_cast<std::size_t>(
      std::count_if(users_.begin(), users_.end(), [](const auto& u) { return u.second.attached; }));
}

HistoryWriter::PerUser* HistoryWriter::firstUser() {
  for (auto& [id, u] : users_)
    if (u.attached) return &u;
  return nullptr;
}

bool HistoryWriter::enqueue(User user, Recording r) {
  {
    std::lock_guard lock(mu_);
    auto countDepth = [this](User u, int by) {
      if (auto it = users_.find(u); it != users_.end())
        it->second.counts.depth =
            static_cast<std::size_t>(static_cast<int64_t>(it->second.counts.depth) + by);
    };
    Key key{r.task, r.recorder};
    if (auto it = queued_.find(key); it != queued_.end()) {
      // The latest replaces the queued one in its place.
      countDepth(it->second.user, -1);
      countDepth(user, 1);
      it->second.recording = std::make_shared<const Recording>(std::move(r));
      it->second.user = user;
      return true;
    }
    if (queued_.size() >= options_.capacity) {
      if (auto it = users_.find(user); it != users_.end()) ++it->second.counts.dropped;
      return false;
    }
    order_.push_back(key);
    const std::string task = key.first;
    queued_.emplace(std::move(key),
                    Queued{std::make_shared<const Recording>(std::move(r)), user, Clock::now()});
    countDepth(user, 1);
    // Every user has queued its recording of the task: it goes without waiting for its turn
    // (a recording at the head may be waiting for a user that records nothing of its task).
    if (const std::size_t users = attachedUsers(); users > 1 && queuedOf(task) >= users)
      complete_.push_back(task);
  }
  cv_.notify_all(); // the thread, among callers that wait for it to stop
  return true;
}

std::vector<std::string> HistoryWriter::othersRecording(User user) const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [id, u] : users_)
    if (id != user && u.attached && !u.recorder.empty()) out.push_back(u.recorder);
  return out;
}

std::size_t HistoryWriter::room() const {
  std::lock_guard lock(mu_);
  return options_.capacity - std::min(options_.capacity, queued_.size());
}

HistoryWriter::Counters HistoryWriter::snapshot(User user) const {
  std::lock_guard lock(mu_);
  auto it = users_.find(user);
  Counters c = it == users_.end() ? Counters{} : it->second.counts;
  c.failing = counters_.failing;
  c.episode = counters_.episode;
  c.lastError = counters_.lastError;
  c.store = counters_.store;
  return c;
}

void HistoryWriter::failed(const std::string& error, PerUser* user) {
  if (user != nullptr) ++user->counts.failures;
  counters_.lastError = error;
  if (!counters_.failing) {
    counters_.failing = true;
    ++counters_.episode;
  }
  backoff_ =
      backoff_.count() == 0 ? options_.firstBackoff : std::min(options_.maxBackoff, backoff_ * 2);
  retryAt_ = Clock::now() + backoff_;
}

HistoryWriter::PerUser* HistoryWriter::headUser() {
  dropWritten();
  if (!order_.empty())
    if (auto q = queued_.find(order_.front()); q != queued_.end())
      if (auto u = users_.find(q->second.user); u != users_.end()) return &u->second;
  return firstUser();
}

void HistoryWriter::dropWritten() {
  while (!order_.empty() && queued_.count(order_.front()) == 0)
    order_.pop_front();
}

std::size_t HistoryWriter::queuedOf(const std::string& task) const {
  std::size_t n = 0;
  for (auto it = queued_.lower_bound({task, std::string()});
       it != queued_.end() && it->first.first == task; ++it)
    ++n;
  return n;
}

Clock::time_point HistoryWriter::headDue() {
  dropWritten();
  if (order_.empty()) return Clock::now() + kIdle;
  const Key& head = order_.front();
  // Every user has its recording of the task queued: nothing more to wait for.
  if (queuedOf(head.first) >= attachedUsers()) return Clock::time_point::min();
  return queued_.at(head).since + options_.gather;
}

const std::string* HistoryWriter::nextComplete() {
  // Tasks written since they were noted (with the head's) are dropped.
  while (!complete_.empty() && queuedOf(complete_.front()) == 0)
    complete_.pop_front();
  return complete_.empty() ? nullptr : &complete_.front();
}

void HistoryWriter::run() {
  // Named for operators (top -H, ps -L) and for the bench, which reads this thread's CPU.
  pthread_setname_np(pthread_self(), "history-writer");
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
        failed(opened.error, headUser());
        continue;
      }
      store_ = std::move(s);
      counters_.store = store_->describe();
    }
    const auto due = queued_.empty() ? now + kIdle : headDue();
    if (!queued_.empty() && (stopping_ || now >= due)) {
      writeTask(lock, nullptr);
      continue;
    }
    if (const std::string* task = nextComplete()) {
      writeTask(lock, task);
      continue;
    }
    PerUser* first = firstUser();
    if (first != nullptr && now >= pruneAt_) {
      pruneSome(lock, first->wallNanos());
      continue;
    }
    if (stopping_) break;
    cv_.wait_until(lock, first != nullptr ? std::min(due, pruneAt_) : due);
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

void HistoryWriter::writeTask(std::unique_lock<std::mutex>& lock, const std::string* complete) {
  std::optional<Key> head; // when the head's task is written: the head's key
  std::string task;
  if (complete == nullptr) {
    dropWritten();
    if (order_.empty()) return;
    head = order_.front();
    task = head->first;
  } else {
    task = *complete;
  }
  // Every queued recording of the task, the head first (a failure is counted for the first's
  // user). A newer recording of one may replace it meanwhile.
  std::vector<std::pair<Key, Queued>> batch;
  if (head) batch.emplace_back(*head, queued_.at(*head));
  for (auto it = queued_.lower_bound({task, std::string()});
       it != queued_.end() && it->first.first == task; ++it)
    if (!head || it->first != *head) batch.emplace_back(*it);
  std::vector<const Recording*> recordings;
  recordings.reserve(batch.size());
  for (const auto& [key, q] : batch)
    recordings.push_back(q.recording.get());
  std::vector<bool> changed;
  auto [error, transient] = call(lock, [&] { changed = store_->recordTogether(recordings); });
  auto userOf = [this](User id) -> PerUser* {
    auto it = users_.find(id);
    return it == users_.end() ? nullptr : &it->second;
  };
  if (!error.empty() && transient) {
    failed(error, userOf(batch.front().second.user)); // kept queued; reopened if it went
    return;
  }
  // Written (or refused for good: counted, and not retried forever). A newer recording that
  // came meanwhile stays queued, the head's behind what is queued now. The keys written with
  // the head's, or as a complete task, are left in the order and skipped there.
  if (head)
    order_.pop_front();
  else
    complete_.pop_front();
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const auto& [key, q] = batch[i];
    auto it = queued_.find(key);
    if (it != queued_.end() && it->second.recording == q.recording) {
      if (PerUser* u = userOf(it->second.user)) --u->counts.depth;
      queued_.erase(it);
    } else if (head && key == *head) {
      order_.push_back(key);
    }
    if (!error.empty()) continue;
    if (PerUser* u = userOf(q.user))
      ++(i < changed.size() && changed[i] ? u->counts.written : u->counts.unchanged);
  }
  if (!error.empty()) {
    if (PerUser* u = userOf(batch.front().second.user)) ++u->counts.failures;
    counters_.lastError = error;
    return;
  }
  counters_.failing = false;
  backoff_ = std::chrono::milliseconds(0);
}

void HistoryWriter::pruneSome(std::unique_lock<std::mutex>& lock, int64_t wallNanos) {
  std::size_t n = 0;
  auto [error, transient] = call(lock, [&] {
    n = store_->prune(wallNanos - options_.retentionNanos, options_.maxTasks, options_.pruneBatch);
  });
  PerUser* first = firstUser();
  if (!error.empty()) {
    if (transient) return failed(error, first);
    if (first != nullptr) ++first->counts.failures;
    counters_.lastError = error;
    pruneAt_ = Clock::now() + options_.pruneEvery;
    return;
  }
  if (first != nullptr) first->counts.pruned += n;
  // A full batch: more may be due, after what waits to be written.
  pruneAt_ = n == options_.pruneBatch ? Clock::now() : Clock::now() + options_.pruneEvery;
}

std::shared_ptr<HistoryWriter>
sharedWriter(const std::string& key, const std::function<std::unique_ptr<HistoryWriter>()>& make) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<HistoryWriter>> writers;
  std::lock_guard lock(mu);
  auto& slot = writers[key];
  if (auto w = slot.lock()) return w;
  for (auto it = writers.begin(); it != writers.end();) // the writers no instance holds
    it = it->second.expired() && &it->second != &slot ? writers.erase(it) : std::next(it);
  std::shared_ptr<HistoryWriter> w = make();
  slot = w;
  return w;
}

} // namespace kuscia_host::plugins::history
