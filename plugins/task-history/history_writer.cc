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
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    auto countDepth = [this](User u, int by) {
      if (PerUser* p = userOf(u))
        p->counts.depth = static_cast<std::size_t>(static_cast<int64_t>(p->counts.depth) + by);
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
      if (PerUser* p = userOf(user)) ++p->counts.dropped;
      return false;
    }
    // The thread sleeps until the first ready task's linger ends: it needs waking only when the
    // queue was empty, or when this is the first task ready (or a full batch).
    wake = queued_.empty();
    const auto now = Clock::now();
    order_.emplace_back(key, now);
    const std::string task = key.first;
    queued_.emplace(std::move(key),
                    Queued{std::make_shared<const Recording>(std::move(r)), user, now});
    countDepth(user, 1);
    // Every user has queued its recording of the task: it is ready without waiting for its turn
    // (a recording at the head may be waiting for a user that records nothing of its task).
    if (const std::size_t users = attachedUsers(); users > 1 && queuedOf(task) >= users) {
      wake = wake || nextComplete() == nullptr || complete_.size() + 1 >= options_.batch;
      complete_.emplace_back(task, now);
    }
  }
  if (wake) cv_.notify_all(); // the thread, among callers that wait for it to stop
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

HistoryWriter::PerUser* HistoryWriter::userOf(User user) {
  auto it = users_.find(user);
  return it == users_.end() ? nullptr : &it->second;
}

HistoryWriter::PerUser* HistoryWriter::headUser() {
  dropWritten();
  if (!order_.empty())
    if (PerUser* u = userOf(queued_.at(order_.front().first).user)) return u;
  return firstUser();
}

void HistoryWriter::dropWritten() {
  while (!order_.empty()) {
    auto q = queued_.find(order_.front().first);
    if (q != queued_.end() && q->second.since == order_.front().second) return;
    order_.pop_front();
  }
}

std::size_t HistoryWriter::queuedOf(const std::string& task) const {
  std::size_t n = 0;
  for (auto it = queued_.lower_bound({task, std::string()});
       it != queued_.end() && it->first.first == task; ++it)
    ++n;
  return n;
}

const std::string* HistoryWriter::nextComplete() {
  // Tasks written since they were noted are dropped.
  while (!complete_.empty() && queuedOf(complete_.front().first) == 0)
    complete_.pop_front();
  return complete_.empty() ? nullptr : &complete_.front().first;
}

Clock::time_point HistoryWriter::readySince() {
  dropWritten();
  auto ready = Clock::time_point::max();
  if (!order_.empty()) {
    const auto& [head, since] = order_.front();
    // Every user has its recording of the task queued: nothing more to wait for.
    ready = queuedOf(head.first) >= attachedUsers() ? since : since + options_.gather;
  }
  if (nextComplete() != nullptr) ready = std::min(ready, complete_.front().second);
  return ready;
}

void HistoryWriter::enqueueJob(JobRecord job) {
  std::lock_guard lock(mu_);
  const bool wake = jobs_.empty();
  std::string name = job.job;
  jobs_.insert_or_assign(std::move(name), std::move(job));
  if (wake) cv_.notify_all();
}

bool HistoryWriter::writeJobs(std::unique_lock<std::mutex>& lock) {
  if (jobs_.empty()) return false;
  std::vector<JobRecord> batch;
  for (auto& [name, job] : jobs_)
    batch.push_back(std::move(job));
  jobs_.clear();
  auto [error, transient] = call(lock, [&] { store_->recordJobs(batch); });
  if (error.empty()) return true;
  if (transient) { // kept, unless a newer one came meanwhile; retried after the backoff
    for (auto& job : batch) {
      std::string name = job.job;
      jobs_.try_emplace(std::move(name), std::move(job));
    }
  }
  failed(error, firstUser());
  return true;
}

void HistoryWriter::run() {
  // Named for operators (top -H, ps -L) and for the bench, which reads this thread's CPU.
  pthread_setname_np(pthread_self(), "history-writer");
  std::unique_lock lock(mu_);
  for (;;) {
    auto now = Clock::now();
    if (stopping_ &&
        ((queued_.empty() && jobs_.empty()) || now >= drainUntil_ || counters_.failing))
      break;
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
    if (writeJobs(lock)) continue;
    const auto ready = readySince();
    const auto due = ready == Clock::time_point::max() ? now + kIdle : ready + options_.linger;
    if (!queued_.empty() && (stopping_ || now >= due || complete_.size() >= options_.batch) &&
        writeTasks(lock))
      continue;
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

bool HistoryWriter::writeTasks(std::unique_lock<std::mutex>& lock) {
  const auto now = Clock::now();
  const std::size_t users = attachedUsers();
  std::vector<std::string> tasks;
  auto take = [&tasks](const std::string& task) {
    if (std::find(tasks.begin(), tasks.end(), task) == tasks.end()) tasks.push_back(task);
  };
  std::erase_if(complete_, [this](const auto& c) { return queuedOf(c.first) == 0; });
  // The heads that are due, in queue order (queued in time order: the first not due ends it)...
  dropWritten();
  for (const auto& [key, since] : order_) {
    if (tasks.size() >= options_.batch) break;
    auto q = queued_.find(key);
    if (q == queued_.end() || q->second.since != since) continue; // written since
    if (!stopping_ && queuedOf(key.first) < users && now < since + options_.gather) break;
    take(key.first);
  }
  // ...then the tasks every user has a recording of queued.
  for (const auto& [task, since] : complete_) {
    if (tasks.size() >= options_.batch) break;
    if (queuedOf(task) > 0) take(task);
  }
  if (tasks.empty()) return false;
  // Each task's queued recordings; a newer recording of one may replace it meanwhile.
  std::vector<Group> groups;
  std::vector<std::vector<const Recording*>> recordings;
  for (const std::string& task : tasks) {
    Group& group = groups.emplace_back();
    std::vector<const Recording*>& rs = recordings.emplace_back();
    for (auto it = queued_.lower_bound({task, std::string()});
         it != queued_.end() && it->first.first == task; ++it) {
      group.emplace_back(*it);
      rs.push_back(it->second.recording.get());
    }
  }
  std::vector<std::vector<bool>> changed;
  auto [error, transient] = call(lock, [&] { changed = store_->recordTasks(recordings); });
  if (!error.empty() && transient) {
    failed(error, userOf(groups.front().front().second.user)); // kept queued; reopened if it went
    return true;
  }
  bool wrote = error.empty();
  if (wrote) {
    for (std::size_t i = 0; i < groups.size(); ++i)
      settle(groups[i], i < changed.size() ? changed[i] : std::vector<bool>{}, {});
  } else if (groups.size() == 1) {
    settle(groups.front(), {}, error); // refused for good: counted, and not retried forever
  } else {
    // One task the store refuses does not take the batch with it: each alone.
    for (std::size_t i = 0; i < groups.size(); ++i) {
      std::vector<std::vector<bool>> one;
      auto [e, t] = call(lock, [&] { one = store_->recordTasks({recordings[i]}); });
      if (!e.empty() && t) {
        failed(e, userOf(groups[i].front().second.user));
        return true;
      }
      wrote = wrote || e.empty();
      settle(groups[i], e.empty() ? one.front() : std::vector<bool>{}, e);
    }
  }
  if (wrote) {
    counters_.failing = false;
    backoff_ = std::chrono::milliseconds(0);
  }
  return true;
}

void HistoryWriter::settle(const Group& group, const std::vector<bool>& changed,
                           const std::string& error) {
  for (std::size_t i = 0; i < group.size(); ++i) {
    const auto& [key, q] = group[i];
    // Written, unless a newer recording replaced it meanwhile: that one stays queued.
    auto it = queued_.find(key);
    if (it != queued_.end() && it->second.recording == q.recording) {
      if (PerUser* u = userOf(it->second.user)) --u->counts.depth;
      queued_.erase(it);
    }
    if (!error.empty()) continue;
    if (PerUser* u = userOf(q.user))
      ++(i < changed.size() && changed[i] ? u->counts.written : u->counts.unchanged);
  }
  if (error.empty()) return;
  if (PerUser* u = userOf(group.front().second.user)) ++u->counts.failures;
  counters_.lastError = error;
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
HistoryWriters::get(const std::string& key,
                    const std::function<std::unique_ptr<HistoryWriter>()>& make) {
  std::lock_guard lock(mu_);
  auto& slot = writers_[key];
  if (auto w = slot.lock()) return w;
  for (auto it = writers_.begin(); it != writers_.end();) // the writers no instance holds
    it = it->second.expired() && &it->second != &slot ? writers_.erase(it) : std::next(it);
  std::shared_ptr<HistoryWriter> w = make();
  slot = w;
  return w;
}

} // namespace kuscia_host::plugins::history
