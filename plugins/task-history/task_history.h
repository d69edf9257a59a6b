// task-history: keeps every KusciaTask's timeline after Kuscia's garbage collection deletes the
// task, its pods and its services, in SQLite (the default) or PostgreSQL, and serves it on the
// admin server (history_api.h).
//
// What is recorded is this domain's recording of the task: the timeline document built from the
// task's status and this domain's pods and Events (domain_pods.h), the same document task-timeline
// serves and otel-export sends. A task is recorded recordDelaySeconds after a change (its status,
// or a fact of one of its pods), with every change made since; the store merges recordings
// (history_doc.h), so a recording is written only when it adds something.
//
// Cost follows the tasks in flight: the plugin holds a task only while a recording of it is due,
// and its pods' facts while they live. Pod and Event events are kept as they come and read
// together at the plugin's tick (a second), before anything reads the facts: one warm pass
// instead of a cold call each. At start (and after the database refused recordings the
// queue could not hold) every task the host's cache has is looked at again, a batch per second
// while the queue has room: what the store already holds costs a read, not a write.
#pragma once

#include <kuscia_host/plugin.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "history_config.h"
#include "history_reader.h"
#include "history_store.h"
#include "history_writer.h"
#include <kuscia_model/domain_pods.h>
#include <kuscia_model/job_view.h>

namespace kuscia_host::plugins::history {

class TaskHistory final : public sdk::Plugin {
public:
  TaskHistory(sdk::Host host, std::string_view domain, std::string_view configJson);
  ~TaskHistory() override;
  TaskHistory(const TaskHistory&) = delete;
  TaskHistory& operator=(const TaskHistory&) = delete;
  static void validateConfig(std::string_view configJson) { parseHistoryConfig(configJson); }
  // The routes from the database alone (ABI 1.2 offline routes: `kuscia-host history --db`),
  // read-only.
  static void serveOffline(std::string_view configJson, const sdk::HttpRequest& request,
                           sdk::HttpResponse& response);

  void onStart() override;
  void onStop() override;
  void onEvent(const sdk::Event& event) override;
  void onTimer(uint64_t timerId, uint64_t userTag) override;
  void onHttpRequest(const sdk::HttpRequest& request, sdk::HttpResponse& response) override;

  // What is held (tests): tasks with a recording due, pods with facts, names left to resync,
  // pod and Event events not read yet.
  std::size_t dueTasks() const { return due_.size(); }
  std::size_t heldPods() const { return pods_.size(); }
  std::size_t pendingEvents() const { return pending_.size(); }
  // When the task's recording is due (wall ns), 0 when none is.
  int64_t dueAt(const std::string& task) const {
    auto it = due_.find(task);
    return it == due_.end() ? 0 : it->second;
  }
  std::size_t resyncLeft() const { return resync_.size() - resyncNext_; }
  HistoryWriter::Counters counters() const { return writer_->snapshot(user_); }
  // The writer, shared with the process's other instances on the same database and settings.
  const HistoryWriter& writer() const { return *writer_; }
  // Records every due task now, and waits (at most `wait`) until the queue is written (tests).
  void flush(std::chrono::milliseconds wait);
  const HistoryConfig& config() const { return config_; }

private:
  void onTask(const sdk::Event& e);
  // A KusciaJob: kept as it is now (its view is computed from it and its tasks' history).
  void onJob(const sdk::Event& e);
  // Reads the pod and Event events kept since the last time, in the order they came.
  void readPending();
  void markDue(const std::string& task, int64_t changedNanos);
  // Queues this domain's recording of the task from its projected fields; false when the queue
  // is full (a task not this domain's is not recorded, and answers true). `finished`, when
  // given, tells whether the task's phase is final.
  // `refresh`: the look at a task that may be stuck now (Recording::refresh).
  bool record(const std::string& task, std::string_view uid, std::string_view fieldsJson,
              bool* finished = nullptr, bool refresh = false);
  bool recordCached(const std::string& task, bool refresh = false);
  // Queues the recording of a document; false when the queue is full.
  bool enqueue(const std::string& task, model::TimelineText text, const std::string& phase,
               bool refresh);
  void tick();
  void resyncSome();
  void startResync();
  void poll();

  HistoryConfig config_;
  std::string domain_;
  uint64_t taskSub_ = 0, podSub_ = 0, eventSub_ = 0, taskResourceSub_ = 0, routeSub_ = 0,
           jobSub_ = 0, timer_ = 0;
  std::set<uint64_t> synced_;
  model::DomainPods pods_;
  // A pod or Event event as it came, read at the next tick (readPending).
  struct PendingEvent {
    uint64_t subscription = 0;
    kh_event_type_t type = 0;
    std::string key, uid, fields;
    int64_t at = 0;         // when it came (wall ns)
    bool afterSync = false; // the initial lists were in
  };
  std::vector<PendingEvent> pending_;
  std::map<std::string, int64_t> due_; // task -> when its recording is due (wall ns)
  // Unfinished tasks -> when to look whether they are stuck (stuckAfterSeconds after their last
  // recording).
  std::map<std::string, int64_t> stuckChecks_;
  std::vector<std::string> resync_; // task names to look at again
  std::size_t resyncNext_ = 0;
  std::shared_ptr<HistoryWriter> writer_; // shared with the host's other instances
  HistoryWriter::User user_ = 0;          // this instance's attachment (from onStart)
  // The admin API's thread and connection, started when first asked (history_reader.h).
  std::unique_ptr<HistoryReader> reader_;
  HistoryWriter::Counters reported_;
  uint64_t loggedEpisode_ = 0;
  bool loggedFailing_ = false;
  bool droppedSinceResync_ = false;
  sdk::Metric recordings_, failures_, dropped_, pruned_, queueDepth_, inFlight_;
};

} // namespace kuscia_host::plugins::history
