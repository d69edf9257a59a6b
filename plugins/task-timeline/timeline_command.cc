#include "timeline_command.h"

#include <kuscia_host/kube_text.hpp>
#include <kuscia_host/query.hpp>
#include <kuscia_model/control_plane.h>
#include <kuscia_model/job_view.h>
#include <kuscia_model/json_member.h>
#include <kuscia_model/kept_facts.h>
#include <kuscia_model/pod_events.h>
#include <kuscia_model/route_outage.h>
#include <kuscia_model/timeline.h>
#include <kuscia_model/timeline_render.h>
#include <kuscia_model/timeline_summary.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

namespace kuscia_host::plugins::timeline {

using nlohmann::json;
namespace tl = model::timeline;

namespace {

struct Options {
  std::vector<std::string> tasks;
  std::vector<std::string> jobs; // --job: each job's tasks, and the job view
  std::string taskNamespace = "cross-domain";
  std::vector<std::string> kubeconfigs; // none: in-cluster, else $KUBECONFIG or ~/.kube/config
  std::string server, tokenFile, caFile;
  std::string output = "table"; // table, json, gantt or full
  bool watch = false;
  int waitSeconds = 0; // wait until every task is complete
  std::size_t minEntries = 0;
  std::string saveDir;
  int stuckAfterSeconds = 300; // summary.stuck, where the command summarises
};

int64_t wallNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A GET from one reader: the JSON answer, nullopt for a 404 (the error of anything else).
std::optional<json> getJson(const sdk::CommandEnv& env, int32_t reader, const std::string& path) {
  try {
    return json::parse(env.get(reader, path));
  } catch (const sdk::HostError& e) {
    if (e.status() == KH_ERR_NOT_FOUND) return std::nullopt;
    throw;
  }
}

// The facts of one pod as task-timeline gathers them: its containers' start, its Events, and the
// reasons its containers wait for now. The pod may be gone with its finished task (its Events
// stay about an hour).
json podFacts(const sdk::CommandEnv& env, int32_t reader, const std::string& ns,
              const std::string& name) {
  json facts = json::object();
  json pod =
      getJson(env, reader, "/api/v1/namespaces/" + ns + "/pods/" + name).value_or(json::object());
  std::string uid = pod.value("metadata", json::object()).value("uid", "");
  const json containers =
      pod.value("status", json::object()).value("containerStatuses", json::array());
  if (auto t = tl::containersStartTime(containers))
    facts["containersStartTime"] = sdk::formatTime(*t, sdk::TimePrecision::kAsGiven);
  auto list = getJson(
      env, reader,
      "/api/v1/namespaces/" + ns +
          "/events?fieldSelector=involvedObject.kind%3DPod%2CinvolvedObject.name%3D" + name);
  const json items = list && list->contains("items") ? (*list)["items"] : json::array();
  auto timeOf = [](const json& e) {
    return tl::eventTimeOf(e.value("eventTime", json()), e.value("lastTimestamp", json()),
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
  tl::PodFacts events;
  for (const auto& e : items) {
    const json involved = e.value("involvedObject", json::object());
    if (!uid.empty() && involved.value("uid", uid) != uid) continue; // another incarnation
    if (auto at = timeOf(e)) events.addEvent(e.value("reason", ""), e.value("message", ""), *at);
  }
  events.addContainersWaiting(containers, wallNanos());
  events.fill(facts);
  return facts;
}

// The reservation of the task's party `ns` (its TaskResource, while Kuscia keeps it), as the
// times its pods' entries take ("reservingTime", ...); empty when there is none (no reservation,
// or no TaskResource kind on the cluster).
json reservationFacts(const sdk::CommandEnv& env, int32_t reader, const std::string& ns,
                      const std::string& task) {
  json facts = json::object();
  auto list =
      getJson(env, reader, "/apis/kuscia.secretflow/v1alpha1/namespaces/" + ns + "/taskresources");
  for (const auto& item : list ? model::arrayOf(*list, "items") : json::array()) {
    const model::control::TaskResource r = model::control::taskResourceOf(item);
    if (r.task != task) continue;
    const model::control::ReservationTimes times = model::control::reservationTimesOf(r);
    for (std::size_t i = 0; i < times.size(); ++i)
      if (times[i])
        facts[model::control::kReservationTimes[i]] =
            sdk::formatTime(*times[i], sdk::TimePrecision::kAsGiven);
  }
  return facts;
}

// The reservations of the task's parties whose pods `entries` lacks, from the stub TaskResources
// a p2p initiator's cluster keeps of its partners (as task-timeline's partnerReservations).
json stubReservations(const sdk::CommandEnv& env, int32_t reader, const std::string& task,
                      const json& entries) {
  json out = json::object();
  auto list = getJson(
      env, reader,
      "/apis/kuscia.secretflow/v1alpha1/taskresources?labelSelector=" +
          sdk::percentEncode(model::control::partnerTaskResourceSubscription().labelSelector));
  for (const auto& item : list ? model::arrayOf(*list, "items") : json::array()) {
    const model::control::TaskResource r = model::control::taskResourceOf(item);
    const model::control::ReservationTimes times = model::control::reservationTimesOf(r);
    if (r.task == task && times[0] && !tl::holdsParty(entries, r.party))
      out[r.party] = model::control::reservationJson(r.key, times);
  }
  return out;
}

// The task's document from one cluster: the status's entries, each pod's entry completed by the
// pod (containersStartTime), its Events (image pull, reasons) when they are still there, and its
// party's reservation.
json clusterTimeline(const sdk::CommandEnv& env, int32_t reader, const std::string& ns,
                     const std::string& task) {
  json obj = json::parse(env.get(reader, "/apis/kuscia.secretflow/v1alpha1/namespaces/" + ns +
                                             "/kusciatasks/" + task));
  model::applyKeptFacts(obj); // what was kept of pods that may be gone, under what is there
  json doc = tl::fromTask(obj);
  // Its job, whose view says what came before the task (Sources::timeline).
  if (std::string job =
          model::textOf(model::objectOf(model::objectOf(obj, "metadata"), "annotations"),
                        "kuscia.secretflow/job-id");
      !job.empty())
    doc["job"] = {{"job", job}};
  const json pods = obj.value("status", json::object()).value("podStatuses", json::object());
  std::map<std::string, json> reservations; // by party
  for (const auto& [key, entry] : pods.items()) {
    auto slash = key.find('/');
    if (slash == std::string::npos || !entry.is_object()) continue;
    const std::string party = key.substr(0, slash);
    json facts = podFacts(env, reader, party, key.substr(slash + 1));
    auto [held, fresh] = reservations.try_emplace(party);
    if (fresh) held->second = reservationFacts(env, reader, party, task);
    facts.update(held->second);
    if (facts.empty()) continue;
    json merged = entry;
    merged.update(facts);
    doc["entries"][key] = tl::entry(key, merged, true);
  }
  // The partners' reservations: what is kept of them (their stubs go with the group) under what
  // the cluster still has.
  const json entries = doc.value("entries", json::object());
  const json annotations = model::objectOf(model::objectOf(obj, "metadata"), "annotations");
  json partners = model::partnerReservations(
      model::textOf(annotations, model::kKeptFactsAnnotation),
      stubReservations(env, reader, task, entries),
      [&entries](std::string_view party) { return tl::holdsParty(entries, party); });
  if (!partners.empty()) doc["partnerReservations"] = std::move(partners);
  // A task failed on a route: the route's outage then, as task-timeline kept it on the route.
  const json& status = model::objectOf(obj, "status");
  if (std::string route = model::route::routeNamed(model::textOf(status, "message"));
      !route.empty())
    if (auto cdr =
            getJson(env, reader, "/apis/kuscia.secretflow/v1alpha1/clusterdomainroutes/" + route)) {
      const model::route::Route r = model::route::routeOf(*cdr);
      json outage =
          model::route::outageAt(r, model::route::outagesOf(r.observed),
                                 model::parseTime(model::textOf(status, "completionTime")));
      if (!outage.is_null()) doc["routeOutage"] = std::move(outage);
    }
  return doc;
}

// One document from the parties' clusters (p2p: each holds its own entries), with the summary
// of the whole task and each entry's phases, as of now.
json summarized(const std::vector<json>& docs, int stuckAfterSeconds) {
  json doc = tl::mergeTimelines(docs);
  int64_t now = wallNanos();
  doc["summary"] = tl::summarize(doc, now, int64_t{stuckAfterSeconds} * 1000000000);
  tl::addPhases(doc, now);
  return doc;
}

// Where the documents come from: a host's admin API, or the clusters.
class Sources {
public:
  Sources(const sdk::CommandEnv& env, const Options& o) : env_(env), o_(o) {
    if (!o.server.empty()) {
      admin_ = env.openAdmin(o.server, o.tokenFile, o.caFile);
      return;
    }
    for (const auto& k : o.kubeconfigs.empty() ? std::vector<std::string>{""} : o.kubeconfigs)
      clusters_.push_back(env.openCluster(k));
  }

  // The task's document, or nullopt with the problems in `problems`. `withJob`: with what came
  // before it in its job.
  std::optional<json> timeline(const std::string& task, std::vector<std::string>& problems,
                               bool withJob = true) {
    if (admin_ >= 0) {
      try {
        return json::parse(env_.get(admin_, "/api/v1/timelines/" + task));
      } catch (const std::exception& e) {
        problems.emplace_back(e.what());
        return std::nullopt;
      }
    }
    std::vector<json> docs;
    for (int32_t c : clusters_) {
      try {
        docs.push_back(clusterTimeline(env_, c, o_.taskNamespace, task));
      } catch (const std::exception& e) {
        problems.emplace_back(e.what());
      }
    }
    if (docs.empty()) return std::nullopt;
    json doc = summarized(docs, o_.stuckAfterSeconds);
    const std::string job = model::textOf(model::objectOf(doc, "job"), "job");
    doc.erase("job");
    std::vector<std::string> absent; // a job deleted before its task: nothing came before
    if (auto view = withJob && !job.empty() ? this->job(job, absent) : std::nullopt)
      if (json before = model::job::jobContext(view->doc, task); !before.is_null())
        doc["job"] = std::move(before);
    return doc;
  }

  // A job's view and its tasks' documents (those created), or nullopt with the problems.
  // Its members' special functions are nothrow; clang-tidy cannot see it through std::map.
  struct JobView { // NOLINT(bugprone-exception-escape)
    json doc;
    std::map<std::string, json> tasks;
  };
  std::optional<JobView> job(const std::string& name, std::vector<std::string>& problems) {
    JobView view;
    if (admin_ >= 0) {
      try {
        view.doc = json::parse(env_.get(admin_, "/api/v1/jobs/" + name));
      } catch (const std::exception& e) {
        problems.emplace_back(e.what());
        return std::nullopt;
      }
      for (const auto& t : model::arrayOf(view.doc, "tasks")) {
        std::vector<std::string> absent; // not created yet
        if (auto doc = timeline(model::textOf(t, "task"), absent, false))
          view.tasks[model::textOf(t, "task")] = std::move(*doc);
      }
      return view;
    }
    // The first cluster's copy that has it (p2p: the initiator's, when its cluster is first).
    std::optional<json> object;
    for (int32_t c : clusters_) {
      try {
        object = getJson(env_, c,
                         "/apis/kuscia.secretflow/v1alpha1/namespaces/" + o_.taskNamespace +
                             "/kusciajobs/" + name);
      } catch (const std::exception& e) {
        problems.emplace_back(e.what());
      }
      if (object) break;
    }
    if (!object) {
      problems.emplace_back("job " + name + " not found");
      return std::nullopt;
    }
    const model::control::Job job = model::control::jobOf(*object);
    const auto observed = model::job::observationsOf(
        model::textOf(model::objectOf(model::objectOf(*object, "metadata"), "annotations"),
                      model::job::kObservedAnnotation));
    for (const auto& t : job.tasks) {
      std::vector<std::string> absent; // not created yet
      if (auto doc = t.name.empty() ? std::nullopt : timeline(t.name, absent, false);
          doc && doc->contains("createTime"))
        view.tasks[t.name] = std::move(*doc);
    }
    view.doc = model::job::jobDocument(job, observed, view.tasks, wallNanos());
    for (auto& [task, doc] : view.tasks)
      if (json before = model::job::jobContext(view.doc, task); !before.is_null())
        doc["job"] = std::move(before);
    return view;
  }

private:
  const sdk::CommandEnv& env_;
  const Options& o_;
  int32_t admin_ = -1;
  std::vector<int32_t> clusters_;
};

std::string render(const json& doc, const std::string& output) {
  if (output == "json") return doc.dump(2) + "\n";
  if (output == "gantt") return tl::renderTimelineSummary(doc) + tl::renderTimelineGantt(doc);
  std::string text = tl::renderTimelineSummary(doc) + tl::renderTimelineTable(doc);
  if (output == "full") text += "\n" + tl::renderTimelineGantt(doc);
  return text;
}

bool settled(const json& doc) {
  std::string phase = doc.value("phase", "");
  return doc.value("summary", json::object()).value("complete", false) || phase == "Failed" ||
         phase == "Succeeded";
}

// Where a task stands for --wait: ready (every entry has its times, at least `minEntries` of
// them), failed or stuck (the summary says why), or still on its way ("").
std::string standing(const json& doc, std::size_t minEntries) {
  const json summary = doc.value("summary", json::object());
  if (summary.contains("failure")) return "failed";
  if (doc.contains("entries") && tl::timelineComplete(doc) && doc["entries"].size() >= minEntries)
    return "ready";
  if (summary.contains("stuck")) return "stuck";
  return "";
}

// "failed: OOMKilled in bob" / "stuck: ImagePull in bob" / "failed: RouteNotReady on route
// alice-bob (HeartBeatTimeout)" / "ready in 12.0s" of a settled task.
std::string outcome(const json& doc, const std::string& standing) {
  const json summary = doc.value("summary", json::object());
  if (standing == "ready") {
    if (!summary.contains("startupSeconds")) return "ready";
    char buf[48];
    std::snprintf(buf, sizeof buf, "ready in %.1fs", summary["startupSeconds"].get<double>());
    return buf;
  }
  const json why = summary.value(standing == "failed" ? "failure" : "stuck", json::object());
  std::string out = standing + ": " + why.value("reason", std::string("Unknown"));
  if (why.contains("pair")) out += " on route " + why.value("pair", std::string());
  if (why.contains("routeReason")) out += " (" + why.value("routeReason", std::string()) + ")";
  if (why.contains("party")) out += " in " + why.value("party", std::string());
  return out;
}

// --watch, or once: the first task's timeline, redrawn until it settles.
int watchOne(const sdk::CommandEnv& env, const Options& o, Sources& sources) {
  bool tty = env.stdoutIsTty();
  for (;;) {
    std::vector<std::string> problems;
    auto doc = sources.timeline(o.tasks.front(), problems);
    for (const auto& p : problems)
      env.err("kuscia-host: timeline: " + p + "\n");
    if (!doc) return 1;
    if (o.watch && tty) env.out("\033[H\033[2J"); // redraw in place
    env.out(render(*doc, o.output));
    if (!o.watch || settled(*doc)) return problems.empty() ? 0 : 1;
    if (!tty) env.out("---\n");
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

// What --wait shows of the tasks and jobs as they stand now.
struct Progress {
  std::vector<std::string> tasks; // the tasks named, then each job's, in order
  std::map<std::string, json> docs, jobs;
  std::map<std::string, std::string> standings;
  std::map<std::string, std::size_t> counts;

  void read(const Options& o, Sources& sources) {
    tasks = o.tasks;
    docs.clear();
    counts.clear();
    std::set<std::string> notCreated; // of a finished job: they never will be
    for (const auto& j : o.jobs) {
      std::vector<std::string> problems; // not there yet: its tasks are on their way
      auto view = sources.job(j, problems);
      jobs[j] = view ? view->doc : json::object();
      for (const auto& t : model::arrayOf(jobs[j], "tasks")) {
        const std::string name = model::textOf(t, "task");
        if (name.empty() || std::find(tasks.begin(), tasks.end(), name) != tasks.end()) continue;
        tasks.push_back(name);
        if (view && view->tasks.count(name) != 0)
          docs[name] = std::move(view->tasks[name]);
        else if (model::control::finishedJobPhase(model::textOf(jobs[j], "phase")))
          notCreated.insert(name);
      }
    }
    for (const auto& t : tasks) {
      if (docs.count(t) == 0 && notCreated.count(t) == 0) {
        std::vector<std::string> problems; // not there yet: counted as on its way
        auto doc = sources.timeline(t, problems);
        docs[t] = doc ? std::move(*doc) : json::object();
      }
      standings[t] = notCreated.count(t) != 0 ? "not created" : standing(docs[t], o.minEntries);
      ++counts[standings[t]];
    }
  }
  std::string line() {
    std::string out =
        "  tasks ready " + std::to_string(counts["ready"]) + "/" + std::to_string(tasks.size());
    for (const char* other : {"failed", "stuck", "not created"})
      if (counts[other] > 0) out += ", " + std::to_string(counts[other]) + " " + other;
    return out;
  }
};

// --wait: progress until every task is complete (or the time is up), then each task, and each
// job's view.
int waitForAll(const sdk::CommandEnv& env, const Options& o, Sources& sources) {
  const bool tty = env.stdoutIsTty();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o.waitSeconds);
  Progress p;
  for (std::string last;; std::this_thread::sleep_for(std::chrono::milliseconds(200))) {
    p.read(o, sources);
    const std::string line = p.line();
    if (tty) env.out("\r" + line);
    if (!tty && line != last) env.out(line + "\n");
    last = line;
    if (p.counts[""] == 0 || std::chrono::steady_clock::now() > deadline) break;
  }
  if (tty) env.out("\n");
  for (const auto& t : p.tasks) {
    if (p.standings[t] == "not created") continue;
    env.out("\n" + render(p.docs[t], o.output));
    if (!o.saveDir.empty()) {
      std::filesystem::create_directories(o.saveDir);
      std::ofstream(std::filesystem::path(o.saveDir) / (t + ".json")) << p.docs[t].dump(2) << "\n";
    }
  }
  for (const auto& j : o.jobs) {
    env.out("\n" +
            (o.output == "json" ? p.jobs[j].dump(2) + "\n" : model::job::renderJob(p.jobs[j])));
    if (!o.saveDir.empty())
      std::ofstream(std::filesystem::path(o.saveDir) / (j + ".job.json"))
          << p.jobs[j].dump(2) << "\n";
  }
  env.out("\n");
  if (!o.saveDir.empty())
    env.out("timelines written to " + o.saveDir + "/<task>.json" +
            (o.jobs.empty() ? "" : ", jobs to " + o.saveDir + "/<job>.job.json") + "\n");
  for (const auto& t : p.tasks) {
    const std::string& st = p.standings[t];
    env.out("  " + t + ": " +
            (st.empty()            ? "not ready"
             : st == "not created" ? st
                                   : outcome(p.docs[t], st)) +
            "\n");
  }
  if (p.counts[""] > 0) {
    env.err("kuscia-host: timeline: " + std::to_string(p.counts[""]) + " of " +
            std::to_string(p.tasks.size()) + " task(s) neither ready, failed nor stuck within " +
            std::to_string(o.waitSeconds) + " s\n");
    return 1;
  }
  return p.counts["ready"] == p.tasks.size() ? 0 : 3;
}

// --job without --wait: each job's view as it stands.
int showJobs(const sdk::CommandEnv& env, const Options& o, Sources& sources) {
  int status = 0;
  for (const auto& j : o.jobs) {
    std::vector<std::string> problems;
    auto view = sources.job(j, problems);
    for (const auto& problem : problems)
      env.err("kuscia-host: timeline: " + problem + "\n");
    if (!view) {
      status = 1;
      continue;
    }
    env.out(o.output == "json" ? view->doc.dump(2) + "\n" : model::job::renderJob(view->doc));
  }
  return status;
}

void declare(CLI::App& app, Options& o) {
  app.add_option("task", o.tasks, "The KusciaTask's name (with --wait, several)");
  app.add_option("--job", o.jobs,
                 "A KusciaJob (repeatable): its view (its approval, each task's wait in the job's "
                 "queue, startup and running time, the job's startup overhead); with --wait, its "
                 "tasks are waited for too, and the view printed after them");
  auto* kubeconfig = app.add_option(
      "--kubeconfig", o.kubeconfigs,
      "A cluster to read the task, its pods and their Events from (repeatable: p2p, one per "
      "party's cluster; merged, then summarised). Default: in-cluster, else $KUBECONFIG or "
      "~/.kube/config");
  app.add_option("--server", o.server,
                 "Ask a kuscia-host's admin server instead (http://HOST:PORT): the document it "
                 "serves at /api/v1/timelines/TASK")
      ->excludes(kubeconfig);
  app.add_option("--token-file", o.tokenFile,
                 "With --server https://...: a file holding the bearer token to send (an admin "
                 "server with auth: token or kubernetes)")
      ->check(CLI::ExistingFile);
  app.add_option("--ca-file", o.caFile,
                 "With --server https://...: the CA (PEM) to verify its certificate with")
      ->check(CLI::ExistingFile);
  app.add_option("-n,--namespace", o.taskNamespace, "The task's namespace")->capture_default_str();
  app.add_option("-o,--output", o.output, "table, json, gantt, or full (the table and the Gantt)")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json", "gantt", "full"}));
  auto* watch =
      app.add_flag("-w,--watch", o.watch,
                   "Redraw every second until the task is ready (or it failed or finished)");
  app.add_option("--wait", o.waitSeconds,
                 "Wait up to this many seconds until every task named is ready (every pod and "
                 "service with all its times), failed or stuck, showing how many are; then print "
                 "each, and each one's outcome. Exit status 0: all ready; 3: some failed or "
                 "stuck; 1: the time ran out")
      ->check(CLI::Range(1, 86400))
      ->excludes(watch);
  app.add_option(
      "--min-entries", o.minEntries,
      "With --wait: a task is complete once it has at least this many pods and services");
  app.add_option("--stuck-after", o.stuckAfterSeconds,
                 "Summarising from the clusters: a task not ready whose longest wait began this "
                 "many seconds ago is stuck, and the summary says why (task-timeline's "
                 "stuckAfterSeconds)")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_option("--save-dir", o.saveDir,
                 "With --wait: also write each task's document as "
                 "DIR/<task>.json");
}

} // namespace

int runTimelineCommand(const sdk::CommandEnv& env, const std::vector<std::string>& args) {
  CLI::App app("Print a KusciaTask's startup: the summary (startup, last party, the phase to "
               "blame, the critical path) above every pod and service of every party, each "
               "time and the durations between phases",
               "kuscia-host timeline");
  Options o;
  declare(app, o);
  if (auto code = sdk::parseArgs<CLI::ParseError>(app, env, args)) return *code;
  if (o.tasks.empty() && o.jobs.empty()) {
    env.err("kuscia-host: timeline: name a task, or a job with --job\n");
    return 2;
  }
  if (o.tasks.size() > 1 && o.waitSeconds == 0) {
    env.err("kuscia-host: timeline: several tasks need --wait\n");
    return 2;
  }
  std::optional<Sources> sources;
  try {
    sources.emplace(env, o);
  } catch (const sdk::HostError& e) {
    env.err(std::string("kuscia-host: timeline: ") + e.what() + "\n");
    return std::string_view(e.what()).rfind("--", 0) == 0 ? 2 : 1;
  }
  if (o.waitSeconds > 0) return waitForAll(env, o, *sources);
  if (!o.jobs.empty() && o.tasks.empty()) return showJobs(env, o, *sources);
  return watchOne(env, o, *sources);
}

} // namespace kuscia_host::plugins::timeline
