// otel-export: sends each KusciaTask's startup, as this domain sees it, to an OpenTelemetry
// tracing backend over OTLP/HTTP (a Collector, Jaeger, Grafana Tempo).
//
// The timeline is the task's own (its status, as task-timeline or Kuscia's controller writes
// it), with what only this domain's pods and Events tell (the first Ready of an incarnation,
// the image pull, every container running, why a phase waited), summarised by the SDK
// (kuscia_model/timeline_summary.h): the same document task-timeline serves. Spans and their ids
// are otel_spans.h's. A span goes out once, when the task's startup ended as this domain sees it
// (its critical-path and blame attributes need the whole of it); a task that is not ready after
// stuckAfterSeconds sends what ended and its pending phase (status ERROR, its reason), then that
// phase again when it ends. A task's memory goes when its spans are out, and only its name stays
// for resendWindowSeconds: cost follows the tasks in flight.
#pragma once

#include <kuscia_host/plugin.hpp>
#include <kuscia_model/pod_events.h>

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "otel_config.h"
#include "otel_spans.h"
#include "otlp_exporter.h"
#include <kuscia_model/domain_pods.h>

namespace kuscia_host::plugins::otel {

class OtelExport final : public sdk::Plugin {
public:
  OtelExport(sdk::Host host, std::string_view domain, std::string_view configJson);
  ~OtelExport() override;
  OtelExport(const OtelExport&) = delete;
  OtelExport& operator=(const OtelExport&) = delete;
  static void validateConfig(std::string_view configJson) { parseOtelConfig(configJson); }

  void onStart() override;
  void onStop() override;
  void onEvent(const sdk::Event& event) override;
  void onTimer(uint64_t timerId, uint64_t userTag) override;

  // What is held: tasks in flight, pods of this domain, tasks sent within the resend window.
  std::size_t heldTasks() const { return tasks_.size(); }
  std::size_t heldPods() const { return pods_.size(); }
  std::size_t recentTasks() const { return recent_.size(); }
  OtlpExporter::Counters counters() const { return exporter_->snapshot(); }
  // The document the spans of `task` come from (tests; nullopt when the cache lacks the task).
  std::optional<nlohmann::json> document(const std::string& task) const;

private:
  struct TaskState {
    std::map<std::string, bool> sent; // span id (hex) -> it was a pending phase then
  };

  void onTask(const sdk::Event& e);
  void onJob(const sdk::Event& e);
  // Decides what to send for the task whose projected fields are `fields`.
  void evaluate(const std::string& name, std::string_view uid, std::string_view rv,
                const nlohmann::json& fields);
  // This instance is done with the task: the host may forget it (ABI 1.3).
  void release(const std::string& name, std::string_view rv);
  void evaluateCached(const std::string& name);
  nlohmann::json documentOf(const TaskFacts& task, const nlohmann::json& fields) const;
  // What came before `task` (its document: `doc`) in its job `job` (model::job::jobContext),
  // from the cached job and its tasks; null when the cache lacks the job or it lacks the task.
  nlohmann::json jobContext(const std::string& job, const std::string& task,
                            const nlohmann::json& doc, int64_t nowNanos) const;
  bool wanted(const std::string& task) const { return recent_.count(task) == 0; }
  bool held(const std::string& task) const { return tasks_.count(task) > 0; }
  void forgetTask(const std::string& name);
  void sweep();
  void pollExporter();

  OtelConfig config_;
  std::string domain_;
  int64_t startedNanos_ = 0;
  uint64_t taskSub_ = 0, podSub_ = 0, eventSub_ = 0, taskResourceSub_ = 0, routeSub_ = 0,
           jobSub_ = 0, timer_ = 0;
  model::DomainPods pods_;                 // this domain's task pods and their Events
  std::map<std::string, TaskState> tasks_; // in flight
  std::map<std::string, int64_t> recent_;  // sent: task -> when (wall ns)
  // Until every subscription has synced, tasks wait here: a task decided before its pods' Events
  // are known would be sent without its image pulls (a restarted host lists tasks first).
  std::set<uint64_t> synced_;
  std::set<std::string> unsynced_;
  std::unique_ptr<OtlpExporter> exporter_;
  OtlpExporter::Counters reported_; // what the metrics hold already
  uint64_t ticks_ = 0;
  uint64_t loggedEpisode_ = 0;
  uint64_t loggedPartials_ = 0;
  bool loggedFailing_ = false;
  sdk::Metric exported_, failed_, dropped_, queueDepth_, inFlight_;
};

} // namespace kuscia_host::plugins::otel
