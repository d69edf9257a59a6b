#include "app/timeline_command.h"
#include "app/exit_codes.h"

#include <kuscia_model/pod_events.h>
#include <kuscia_model/timeline.h>
#include <kuscia_model/timeline_summary.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "app/timeline_render.h"
#include "kube/cluster_access.h"

namespace kuscia_host {

using nlohmann::json;

namespace {

int64_t wallNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The facts of one pod as task-timeline gathers them: its containers' start, its Events, and the
// reasons its containers wait for now.
json podFacts(ClusterReader& reader, const std::string& ns, const std::string& name) {
  json facts = json::object();
  // The pod may be gone with its finished task (its Events stay about an hour).
  auto pod = reader.get("/api/v1/namespaces/" + ns + "/pods/" + name);
  json podObject = pod ? *pod : json::object();
  std::string uid = podObject.value("metadata", json::object()).value("uid", "");
  const json containers =
      podObject.value("status", json::object()).value("containerStatuses", json::array());
  if (auto t = model::timeline::containersStartTime(containers))
    facts["containersStartTime"] = sdk::formatTime(*t, sdk::TimePrecision::kAsGiven);
  auto list =
      reader.get("/api/v1/namespaces/" + ns +
                 "/events?fieldSelector=involvedObject.kind%3DPod%2CinvolvedObject.name%3D" + name);
  const json items = list && list->contains("items") ? (*list)["items"] : json::array();
  auto timeOf = [](const json& e) {
    return model::timeline::eventTimeOf(e.value("eventTime", json()),
                                        e.value("lastTimestamp", json()),
                                        e.value("firstTimestamp", json()));
  };
  if (uid.empty()) {
    // Without the pod: the Events of the latest incarnation they name.
    int64_t latest = 0;
    for (const auto& e : items)
      if (auto at = timeOf(e); at && *at >= latest) {
        latest = *at;
        uid = e.value("involvedObject", json::object()).value("uid", "");
      }
  }
  model::timeline::PodFacts events;
  for (const auto& e : items) {
    const json involved = e.value("involvedObject", json::object());
    if (!uid.empty() && involved.value("uid", uid) != uid) continue; // another incarnation
    if (auto at = timeOf(e)) events.addEvent(e.value("reason", ""), e.value("message", ""), *at);
  }
  events.addContainersWaiting(containers, wallNanos());
  events.fill(facts);
  return facts;
}

// The document from a host's admin API (it has the summary already).
Result<json> serverTimeline(const TimelineOptions& o) {
  auto reader = ClusterReader::openAdmin(o.server, o.tokenFile, o.caFile);
  if (!reader) return makeError(reader.error());
  return (*reader)->get("/api/v1/timelines/" + o.task);
}

Result<json> gather(const TimelineOptions& o, std::vector<std::string>& problems) {
  if (!o.server.empty()) return serverTimeline(o);
  std::vector<Result<kube::ClusterAccess>> sources;
  if (!o.kubeconfigs.empty()) {
    for (const auto& k : o.kubeconfigs)
      sources.push_back(kube::loadKubeconfig(k));
  } else if (kube::processEnv()("KUBERNETES_SERVICE_HOST")) {
    sources.push_back(kube::loadInCluster());
  } else {
    sources.push_back(kube::loadKubeconfig(""));
  }
  std::vector<json> docs;
  for (auto& s : sources) {
    if (!s) return makeError(s.error());
    auto reader = ClusterReader::open(*s);
    if (!reader) {
      problems.push_back(reader.error());
      continue;
    }
    auto doc = clusterTimeline(**reader, o.taskNamespace, o.task);
    if (!doc) {
      problems.push_back(doc.error());
      continue;
    }
    docs.push_back(std::move(*doc));
  }
  if (docs.empty()) return makeError("");
  return summarizedTimeline(docs);
}

std::string render(const json& doc, const std::string& output) {
  if (output == "json") return doc.dump(2) + "\n";
  if (output == "gantt") return renderTimelineSummary(doc) + renderTimelineGantt(doc);
  return renderTimelineSummary(doc) + renderTimelineTable(doc);
}

bool settled(const json& doc) {
  std::string phase = doc.value("phase", "");
  return doc.value("summary", json::object()).value("complete", false) || phase == "Failed" ||
         phase == "Succeeded";
}

} // namespace

json summarizedTimeline(const std::vector<json>& docs) {
  json doc = mergeTimelines(docs);
  int64_t now = wallNanos();
  doc["summary"] = model::timeline::summarize(doc, now);
  model::timeline::addPhases(doc, now);
  return doc;
}

Result<json> clusterTimeline(ClusterReader& reader, const std::string& taskNamespace,
                             const std::string& task) {
  auto obj = reader.get("/apis/kuscia.secretflow/v1alpha1/namespaces/" + taskNamespace +
                        "/kusciatasks/" + task);
  if (!obj) return makeError(obj.error());
  json doc = model::timeline::fromTask(*obj);
  const json pods = obj->value("status", json::object()).value("podStatuses", json::object());
  for (const auto& [key, entry] : pods.items()) {
    auto slash = key.find('/');
    if (slash == std::string::npos || !entry.is_object()) continue;
    json facts = podFacts(reader, key.substr(0, slash), key.substr(slash + 1));
    if (facts.empty()) continue;
    json merged = entry;
    merged.update(facts);
    doc["entries"][key] = model::timeline::entry(key, merged, true);
  }
  return doc;
}

int runTimeline(const TimelineOptions& o, std::ostream& out, std::ostream& err) {
  bool tty = &out == &std::cout && isatty(STDOUT_FILENO) != 0;
  for (;;) {
    std::vector<std::string> problems;
    auto doc = gather(o, problems);
    for (const auto& p : problems)
      err << "kuscia-host: timeline: " << p << "\n";
    if (!doc) {
      if (!doc.error().empty()) err << "kuscia-host: timeline: " << doc.error() << "\n";
      bool usage = doc.error().rfind("--", 0) == 0;
      return usage ? kExitUsage : kExitFailure;
    }
    std::string text = render(*doc, o.output);
    if (o.watch && tty) out << "\033[H\033[2J"; // redraw in place
    out << text << std::flush;
    if (!o.watch || settled(*doc)) return problems.empty() ? kExitOk : kExitFailure;
    if (!tty) out << "---\n";
    std::this_thread::sleep_for(std::chrono::milliseconds(o.watchIntervalMillis));
  }
}

} // namespace kuscia_host
