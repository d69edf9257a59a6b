#include <kuscia_model/status_writer.h>

#include <algorithm>

#include <kuscia_model/kuscia.h>
#include <kuscia_model/kuscia_model.h>

namespace kuscia_host::model {

using nlohmann::json;

std::vector<sdk::ConfigKey> statusWriterKeys() {
  return {taskNamespaceKey(),
          {"coalesceMillis", "integer", "150",
           "changes to one task within this window make one status write (0..60000; 0: at once)"},
          {"yieldAfterOverwrites", "integer", "2",
           "another writer replacing a field this plugin wrote this many times within 60 s makes "
           "the plugin stop writing that field of that entry (1..100)"}};
}

void readStatusWriterConfig(const sdk::ConfigReader& r, StatusWriterConfig& c) {
  c.taskNamespace = readTaskNamespace(r);
  c.coalesceMillis = r.integer("coalesceMillis", c.coalesceMillis, 0, 60000);
  c.yieldAfterOverwrites = static_cast<int>(r.integer("yieldAfterOverwrites", 2, 1, 100));
}

StatusWriter::StatusWriter(sdk::Host host, const StatusWriterConfig& config,
                           std::string metricPrefix, Diff diff, Written written)
    : StatusWriter(host,
                   Options{config.taskNamespace, config.coalesceMillis, config.deferMillis,
                           std::move(metricPrefix), config.yieldAfterOverwrites},
                   std::move(diff), std::move(written)) {}

StatusWriter::StatusWriter(sdk::Host host, Options options, Diff diff, Written written)
    : host_(host), options_(std::move(options)), diff_(std::move(diff)),
      written_(std::move(written)),
      writes_(host.counter(options_.metricPrefix + "_status_writes_total",
                           "KusciaTask status merge patches, by result (ok; conflict: 409, decided "
                           "again; gone: 404; failed: refused by the server; unsent: the instance "
                           "stopped first)",
                           {"result"})),
      bytes_(host.counter(options_.metricPrefix + "_status_patch_bytes_total",
                          "Bytes of KusciaTask status merge patches sent")),
      contest_(host, options_.metricPrefix, options_.yieldAfter) {}

void StatusWriter::forget(const std::string& task) {
  contest_.forget(task);
  auto it = tasks_.find(task);
  if (it != tasks_.end() && it->second.request == 0 && it->second.timer == 0) tasks_.erase(it);
}

void StatusWriter::changed(const std::string& task, bool deferrable) {
  TaskState& st = tasks_[task];
  st.dirty = true;
  st.owed = false;
  st.urgent = st.urgent || !deferrable;
  if (st.request != 0) return; // scheduled again when it completes
  if (st.timer != 0) {
    if (!st.deferred || !st.urgent) return; // flushed when it fires
    // A deferred write now holds a change that cannot wait: sooner.
    host_.cancelTimer(st.timer);
    timers_.erase(st.timer);
    st.timer = 0;
  }
  scheduleDue(task, st);
}

void StatusWriter::scheduleDue(const std::string& task, TaskState& st) {
  if (st.urgent) return schedule(task, st, options_.coalesceMillis);
  schedule(task, st, std::max(options_.coalesceMillis, options_.deferMillis), true);
}

void StatusWriter::schedule(const std::string& task, TaskState& st, int64_t delayMillis,
                            bool deferred) {
  st.deferred = deferred;
  if (delayMillis <= 0) return flush(task);
  try {
    st.timer = host_.startTimer(static_cast<uint64_t>(delayMillis));
  } catch (const sdk::HostError&) {
    return; // the instance is stopping: nothing more is written
  }
  timers_[st.timer] = task;
}

void StatusWriter::flush(const std::string& task) {
  TaskState& st = tasks_[task];
  st.timer = 0;
  if (st.request != 0) return;
  if (int64_t hold = contest_.holdMillis(task); hold > 0) {
    st.dirty = true; // another writer keeps removing what was written: not at once
    return schedule(task, st, hold);
  }
  const bool urgent = st.urgent;
  st.dirty = false;
  st.urgent = false;
  StatusPatch status = diff_(task);
  contest_.filter(task, status);
  if (status.empty()) return;
  sdk::KubeRequest r = taskStatusPatch(options_.taskNamespace, task, status);
  try {
    st.request = host_.kubeRequest(r);
  } catch (const sdk::HostError& e) {
    st.dirty = true; // not sent (the instance is stopping, or no cluster): nothing is lost
    st.urgent = urgent;
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
  if (settled_ && settled(task)) settled_(task, 0);
  return true;
}

bool StatusWriter::onKubeResult(const sdk::KubeResult& result) {
  auto it = requests_.find(result.requestId);
  if (it == requests_.end()) return false;
  Sent sent = std::move(it->second);
  requests_.erase(it);
  const std::string& task = sent.task;
  TaskState& st = tasks_[task];
  st.request = 0;
  const int code = result.httpCode;
  if (code >= 200 && code < 300) {
    writes_.add(1, {"ok"});
    const uint64_t version = responseVersion(result.body);
    contest_.wrote(task, sent.status, version);
    written_(task, sent.status, version);
    if (st.dirty) scheduleDue(task, st);
    if (settled_ && settled(task)) settled_(task, version);
    return true;
  }
  if (code == 404) { // the task is gone: its next appearance calls changed() again
    writes_.add(1, {"gone"});
    st.dirty = false;
    st.owed = true;
    return true;
  }
  if (code == 409) { // the task changed under the write: decide again from what it holds now
    writes_.add(1, {"conflict"});
    st.dirty = true;
    st.urgent = true; // what did not land is decided again within the coalescing window
    if (st.timer == 0) scheduleDue(task, st);
    return true;
  }
  if (code == 0 || code == 429 || code >= 500) {
    // The host retries these until the answer is final; one reaches here only when the instance
    // stops first. Nothing more is written by this instance.
    writes_.add(1, {"unsent"});
    st.dirty = true;
    st.owed = true;
    host_.debug("status patch of task " + task + " not completed (" +
                (code == 0 ? std::string("no answer") : std::to_string(code)) +
                "): " + std::string(result.message));
    return true;
  }
  // Refused as it is (400, 403, 415, 422, ...): the same patch cannot succeed; the next change
  // tries again.
  writes_.add(1, {"failed"});
  st.owed = true;
  host_.error("status patch of task " + task + " refused (" + std::to_string(code) +
              "): " + std::string(result.message));
  return true;
}

} // namespace kuscia_host::model
