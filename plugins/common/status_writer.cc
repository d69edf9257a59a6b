#include "status_writer.h"

#include <algorithm>

#include "kuscia.h"
#include "kuscia_model.h"

namespace kuscia_host::plugins {

using nlohmann::json;

std::vector<sdk::ConfigKey> statusWriterKeys() {
  return {taskNamespaceKey(),
          {"coalesceMillis", "integer", "50",
           "changes to one task within this window make one status write (0..60000; 0: at once)"},
          {"retryMaxMillis", "integer", "30000",
           "longest wait between retries of a failed status write (100..600000)"},
          {"yieldAfterOverwrites", "integer", "2",
           "another writer replacing a field this plugin wrote this many times within 60 s makes "
           "the plugin stop writing that field of that entry (1..100)"}};
}

void readStatusWriterConfig(const sdk::ConfigReader& r, StatusWriterConfig& c) {
  c.taskNamespace = readTaskNamespace(r);
  c.coalesceMillis = r.integer("coalesceMillis", c.coalesceMillis, 0, 60000);
  c.retryMaxMillis = r.integer("retryMaxMillis", c.retryMaxMillis, 100, 600000);
  c.yieldAfterOverwrites = static_cast<int>(r.integer("yieldAfterOverwrites", 2, 1, 100));
}

StatusWriter::StatusWriter(sdk::Host host, const StatusWriterConfig& config,
                           std::string metricPrefix, Diff diff, Written written)
    : StatusWriter(host,
                   Options{config.taskNamespace, config.coalesceMillis, 200, config.retryMaxMillis,
                           std::move(metricPrefix), config.yieldAfterOverwrites},
                   std::move(diff), std::move(written)) {}

StatusWriter::StatusWriter(sdk::Host host, Options options, Diff diff, Written written)
    : host_(host), options_(std::move(options)), diff_(std::move(diff)),
      written_(std::move(written)),
      writes_(host.counter(options_.metricPrefix + "_status_writes_total",
                           "KusciaTask status merge patches, by result (ok; retried: no answer, "
                           "409, 429 or 5xx; gone: 404; failed: refused by the server)",
                           {"result"})),
      bytes_(host.counter(options_.metricPrefix + "_status_patch_bytes_total",
                          "Bytes of KusciaTask status merge patches sent")),
      contest_(host, options_.metricPrefix, options_.yieldAfter) {}

void StatusWriter::forget(const std::string& task) {
  contest_.forget(task);
  auto it = tasks_.find(task);
  if (it != tasks_.end() && it->second.request == 0 && it->second.timer == 0) tasks_.erase(it);
}

StatusWriter::TaskState& StatusWriter::state(const std::string& task) {
  auto it = tasks_.find(task);
  if (it == tasks_.end())
    it =
        tasks_
            .emplace(task, TaskState{Backoff(options_.retryInitialMillis, options_.retryMaxMillis)})
            .first;
  return it->second;
}

void StatusWriter::changed(const std::string& task) {
  TaskState& st = state(task);
  st.dirty = true;
  if (st.request != 0 || st.timer != 0) return; // flushed when those complete
  schedule(task, st, options_.coalesceMillis);
}

void StatusWriter::schedule(const std::string& task, TaskState& st, int64_t delayMillis) {
  if (delayMillis <= 0) return flush(task);
  try {
    st.timer = host_.startTimer(static_cast<uint64_t>(delayMillis));
  } catch (const sdk::HostError&) {
    return; // the instance is stopping: nothing more is written
  }
  timers_[st.timer] = task;
}

void StatusWriter::flush(const std::string& task) {
  TaskState& st = state(task);
  st.timer = 0;
  if (st.request != 0) return;
  if (int64_t hold = contest_.holdMillis(task); hold > 0) {
    st.dirty = true; // another writer keeps removing what was written: not at once
    return schedule(task, st, hold);
  }
  st.dirty = false;
  json status = contest_.filter(task, diff_(task));
  if (status.is_null() || status.empty()) return;
  sdk::KubeRequest r = taskStatusPatch(options_.taskNamespace, task, status);
  try {
    st.request = host_.kubeRequest(r);
  } catch (const sdk::HostError& e) {
    st.dirty = true; // not sent (the instance is stopping, or no cluster): nothing is lost
    host_.debug("status patch of task " + task + " not sent: " + e.what());
    return;
  }
  bytes_.add(static_cast<double>(r.body.size()));
  requests_[st.request] = Sent{task, std::move(status)};
}

bool StatusWriter::onTimer(uint64_t timerId) {
  auto it = timers_.find(timerId);
  if (it == timers_.end()) return false;
  std::string task = std::move(it->second);
  timers_.erase(it);
  flush(task);
  return true;
}

bool StatusWriter::onKubeResult(const sdk::KubeResult& result) {
  auto it = requests_.find(result.requestId);
  if (it == requests_.end()) return false;
  Sent sent = std::move(it->second);
  requests_.erase(it);
  const std::string& task = sent.task;
  TaskState& st = state(task);
  st.request = 0;
  const int code = result.httpCode;
  if (code >= 200 && code < 300) {
    writes_.add(1, {"ok"});
    st.backoff.reset();
    contest_.wrote(task, sent.status, result.body);
    written_(task, sent.status);
    if (st.dirty) schedule(task, st, options_.coalesceMillis);
    return true;
  }
  if (code == 404) { // the task is gone: its next appearance calls changed() again
    writes_.add(1, {"gone"});
    st.dirty = false;
    st.backoff.reset();
    return true;
  }
  if (code == 400 || code == 403 || code == 415 || code == 422) {
    // Refused as it is: retrying the same patch cannot help; the next change tries again.
    writes_.add(1, {"failed"});
    host_.error("status patch of task " + task + " refused (" + std::to_string(code) +
                "): " + std::string(result.message));
    st.backoff.reset();
    return true;
  }
  writes_.add(1, {"retried"});
  const int64_t wait = st.backoff.next();
  host_.debug("status patch of task " + task + " failed (" +
              (code == 0 ? std::string("no answer") : std::to_string(code)) + ": " +
              std::string(result.message) + "); retrying in " + std::to_string(wait) + " ms");
  st.dirty = true;
  if (st.timer == 0) schedule(task, st, wait);
  return true;
}

} // namespace kuscia_host::plugins
