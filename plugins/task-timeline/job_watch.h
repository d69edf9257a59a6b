// task-timeline's view of the KusciaJobs (kuscia_model/job_view.h): it watches the jobs of the
// task namespace, observes what Kuscia writes no time for (a job's approval), keeps those
// observations on the job (annotation kuscia-host/observed: one merge patch of its metadata, by
// the instance that counts the job's initiator) so that a restarted host reads them, observes the
// job phases' histograms once, and answers /api/v1/jobs and /api/v1/jobs/<job> from the host's
// cache and the tasks' timeline documents.
#pragma once

#include <kuscia_host/plugin.hpp>
#include <kuscia_model/control_plane.h>
#include <kuscia_model/job_view.h>

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

namespace kuscia_host::plugins::timeline {

class JobWatch {
public:
  // `writes(initiator)`: whether this instance keeps the observations of a job of that
  // initiator (one instance of the host does); `taskDoc(task)`: the task's timeline document.
  using Writes = std::function<bool(const std::string& initiator)>;
  using TaskDoc = std::function<std::optional<nlohmann::json>(const std::string& task)>;
  JobWatch(sdk::Host host, std::string taskNamespace, Writes writes, TaskDoc taskDoc);

  uint64_t subscription() const { return sub_; }
  void onEvent(const sdk::Event& e);
  // Whether the result was one of its writes.
  bool onKubeResult(const sdk::KubeResult& r);
  // The job's document (nullopt: unknown, or another instance of the host answers for it).
  std::optional<nlohmann::json> document(const std::string& job) const;
  // What came before the task in its job (model::job::jobContext); nullopt when no job this
  // instance answers for lists it.
  std::optional<nlohmann::json> context(const std::string& task) const;
  // The jobs this instance answers for, the newest `limit`: {"jobs": {"<job>": {"phase",
  // "initiator", "createTime"}}} (an object: the answers of a host's instances merge).
  nlohmann::json list(std::size_t limit) const;
  static constexpr uint64_t kWriteTag = 2;

private:
  struct Held {
    model::job::Observations observed;
    bool sawAwaiting = false; // this run saw it awaiting approval (its end is then dated)
    std::string kept;         // the annotation as the job last showed it
    bool approvalCounted = false;
    std::set<std::string> queuedCounted; // tasks whose queued phase was observed
  };
  std::optional<model::control::Job> jobOf(const std::string& name, std::string* kept) const;
  void observeHistograms(const model::control::Job& job, Held& h);

  sdk::Host host_;
  std::string namespace_;
  Writes writes_;
  TaskDoc taskDoc_;
  uint64_t sub_ = 0;
  std::map<std::string, Held> jobs_;             // the jobs this instance answers for
  std::map<std::string, std::string> jobOfTask_; // their tasks (spec taskIDs) -> the job
  sdk::Metric approval_, queued_, failedWrites_;
  bool loggedFailure_ = false;
  int64_t startedNanos_ = 0;
};

} // namespace kuscia_host::plugins::timeline
