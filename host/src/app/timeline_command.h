// `kuscia-host timeline TASK`: a task's timeline and its summary, from the clusters (the task's
// status, completed by its pods and their Events as task-timeline does) or from a host's admin
// API (--server), printed as a table, a text Gantt chart or JSON; --watch redraws until the task
// is ready or failed.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/cluster_reader.h"
#include "common/result.h"

namespace kuscia_host {

struct TimelineOptions {
  std::string task;
  std::string taskNamespace = "cross-domain";
  std::vector<std::string> kubeconfigs; // none: in-cluster, else $KUBECONFIG or ~/.kube/config
  std::string server;                   // a host's admin server instead of the clusters
  std::string tokenFile;                // its bearer token (https only), re-read at each request
  std::string caFile;                   // the CA its certificate is verified with
  std::string output = "table";         // table, json or gantt
  bool watch = false;
  int watchIntervalMillis = 1000;
};

// The task's document from one cluster: the status's entries, each pod's entry completed by the
// pod (containersStartTime) and its Events (image pull, reasons) when they are still there.
Result<nlohmann::json> clusterTimeline(ClusterReader& reader, const std::string& taskNamespace,
                                       const std::string& task);

// One document from the parties' clusters (p2p: each holds its own entries), with the summary of
// the whole task and each entry's phases, as of now.
nlohmann::json summarizedTimeline(const std::vector<nlohmann::json>& docs);

// Runs the command; the exit status (0 ok, 1 a source failed or the task is unknown, 2 usage).
int runTimeline(const TimelineOptions& options, std::ostream& out, std::ostream& err);

} // namespace kuscia_host
