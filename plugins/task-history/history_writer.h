// task-history's worker: storage never blocks event handling. Recordings wait in a bounded queue
// (one place per task and recorder: a newer recording of a queued task replaces the queued one)
// and one thread writes them, in order, to its own connection. A failing store (database down,
// disk full) is retried with exponential backoff, the recording kept at the head of the queue;
// what does not fit in the queue meanwhile is dropped and counted, and the plugin recovers it
// with a resync once writes work again (the tasks' statuses still hold it). Retention runs on the
// same thread: a few hundred tasks per transaction, so no lock is held for long.
//
// One writer serves every instance of the process that records into the same database with the
// same settings (a centralized host records each domain with an instance of its own): the
// recordings of one task by several domains are written together, in one transaction that reads
// the stored documents and summarises the task once. A recording waits up to `gather` for the
// other users' recordings of its task; it is ready at once when every user has one queued, ahead
// of a recording at the head that still waits. Each user (attach()) has its own counters.
//
// Ready tasks are written together, up to `batch` in one transaction (HistoryStore::recordTasks):
// the writer lingers `linger` after the first is ready, so that the recordings the plugins queue
// at their tick share a commit, its pages and the day's statistics rows, and the thread wakes
// once for them rather than once a task.
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
#include <vector>

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
    // How long a recording waits for the other users' recordings of its task: two of the
    // plugin's ticks, each instance queueing what is due at its own tick.
    std::chrono::milliseconds gather{2000};
    // Tasks written in one transaction at most, and how long the first ready one waits for
    // others to share it.
    std::size_t batch = 64;
    std::chrono::milliseconds linger{50};
  };
  // Of one user: its recordings written, unchanged, dropped and queued, and the failures while
  // one of its recordings was at the head of the queue; the tasks pruned count for the first user
  // attached. The rest is the writer's.
  struct Counters {
    uint64_t written = 0, unchanged = 0, failures = 0, dropped = 0, pruned = 0;
    std::size_t depth = 0;
    bool failing = false;
    uint64_t episode = 0; // bumped when writes start failing
    std::string lastError, store;
  };
  using User = uint64_t;

  explicit HistoryWriter(Open open, Options options);
  ~HistoryWriter();
  HistoryWriter(const HistoryWriter&) = delete;
  HistoryWriter& operator=(const HistoryWriter&) = delete;

  // A user from now on: its counters start at zero, and the thread runs while any user is
  // attached. `wallNanos`: the user's clock; retention is measured by the first user's.
  // `recorder`: the domain it records as (othersRecording()).
  User attach(std::function<int64_t()> wallNanos, std::string recorder = {});
  // No longer a user. The last one stops the thread after writing what is queued (for at most
  // `drain`); before that, what the user queued is written by the running thread.
  void detach(User user, std::chrono::milliseconds drain = std::chrono::seconds(5));
  // False when the queue is full (the recording is dropped and counted).
  bool enqueue(User user, Recording r);
  // Keeps a KusciaJob as it is now: written before the next recordings, the latest of a job
  // replacing one still queued (jobs are few: no bound but one place per job).
  void enqueueJob(JobRecord job);
  std::size_t room() const;
  // The domains the other attached users record as. Their entries of a task are in their own
  // recordings, written with this user's: a recording need not carry them too.
  std::vector<std::string> othersRecording(User user) const;
  Counters snapshot(User user) const;

private:
  struct Queued {
    std::shared_ptr<const Recording> recording;
    User user = 0;
    std::chrono::steady_clock::time_point since; // queued first (a replacement keeps it)
  };
  struct PerUser { // kept after detach(), for its last counters
    std::function<int64_t()> wallNanos;
    std::string recorder;
    bool attached = false;
    Counters counts; // its own: written, unchanged, failures, dropped, pruned, depth
  };
  using Key = std::pair<std::string, std::string>; // (task, recorder)

  void run();
  // Writes the queued jobs; false when none was queued.
  bool writeJobs(std::unique_lock<std::mutex>& lock);
  struct Outcome {
    std::string error; // empty: it worked
    bool transient = false;
  };
  // Runs a storage call with the lock released; what it threw.
  static Outcome call(std::unique_lock<std::mutex>& lock, const std::function<void()>& work);
  // Drops the keys at the head already written with another recording of their task.
  void dropWritten();
  // When the first task became ready to be written (its head due, or every user's recording
  // queued); max() when none is queued.
  std::chrono::steady_clock::time_point readySince();
  // Recordings queued of the task.
  std::size_t queuedOf(const std::string& task) const;
  // The first task every user has queued a recording of (nullptr: none).
  const std::string* nextComplete();
  // Writes the ready tasks, each with every recording queued of it, `batch` at most: the due
  // heads in queue order, then the complete tasks.
  // False when none was ready.
  bool writeTasks(std::unique_lock<std::mutex>& lock);
  using Group = std::vector<std::pair<Key, Queued>>; // one task's queued recordings
  // Settles what one task's write did: its recordings off the queue unless replaced meanwhile,
  // and counted (`changed`), or the failure counted when `error` is not empty.
  void settle(const Group& group, const std::vector<bool>& changed, const std::string& error);
  void pruneSome(std::unique_lock<std::mutex>& lock, int64_t wallNanos);
  // A failed call, counted for `user` (when known).
  void failed(const std::string& error, PerUser* user);
  std::size_t attachedUsers() const;
  PerUser* userOf(User user); // nullptr when unknown
  PerUser* firstUser();       // the first attached, nullptr when none
  PerUser* headUser();        // the user of the head's recording, else the first
  // With `lock` held: stops the thread, writing what is queued for at most `drain`.
  void stopThread(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds drain);

  Open open_;
  Options options_;
  std::unique_ptr<HistoryStore> store_; // the worker's only
  mutable std::mutex mu_;
  std::condition_variable cv_;
  // FIFO, with when each was queued: an entry whose key is no longer queued with that time was
  // written (with another of its task) and is skipped.
  std::deque<std::pair<Key, std::chrono::steady_clock::time_point>> order_;
  // Tasks every attached user had queued a recording of, in that order, and since when; may
  // hold tasks written since.
  std::deque<std::pair<std::string, std::chrono::steady_clock::time_point>> complete_;
  // The latest of each, shared with the write under way: a newer one replaces the pointer, so
  // the writer knows by identity whether what it wrote is still the latest.
  std::map<Key, Queued> queued_;
  std::map<std::string, JobRecord> jobs_; // queued jobs, by name
  std::map<User, PerUser> users_;
  User nextUser_ = 1;
  Counters counters_; // the writer's own: failing, episode, lastError, store
  std::chrono::milliseconds backoff_{0};
  std::chrono::steady_clock::time_point retryAt_{}, pruneAt_{};
  bool stopping_ = false;
  bool joining_ = false; // a call is joining the thread (the lock released meanwhile)
  std::chrono::steady_clock::time_point drainUntil_{};
  std::thread thread_;
};

// The writers of one host's task-history instances (sdk::Host::libraryState): the instances
// recording into one database with the same settings share a writer, so that a task's
// recordings by several domains are written together. Thread-safe.
class HistoryWriters {
public:
  // The writer for `key` (the database and the settings that shape a writer), made by `make`
  // when no instance holds one.
  std::shared_ptr<HistoryWriter> get(const std::string& key,
                                     const std::function<std::unique_ptr<HistoryWriter>()>& make);

private:
  std::mutex mu_;
  std::map<std::string, std::weak_ptr<HistoryWriter>> writers_;
};

} // namespace kuscia_host::plugins::history
