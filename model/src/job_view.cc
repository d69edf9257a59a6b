#include <kuscia_model/job_view.h>

#include <kuscia_host/kube_text.hpp>
#include <kuscia_model/json_member.h>
#include <kuscia_model/kept_facts.h>
#include <kuscia_model/kuscia.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <vector>

namespace kuscia_host::model::job {

using control::Job;
using nlohmann::json;

namespace {

double seconds(int64_t from, int64_t to) {
  return std::round(static_cast<double>(to - from) / 1e6) / 1e3; // to the millisecond
}

std::string timeText(int64_t ns) {
  return sdk::formatTime(ns, sdk::TimePrecision::kAsGiven);
}

// A phase from `from` to `to` (ongoing until `now` when `to` is unknown and `ongoing`).
json phaseOf(const char* name, std::optional<int64_t> from, std::optional<int64_t> to, bool ongoing,
             int64_t now) {
  json p = {{"phase", name}};
  if (from) p["from"] = timeText(*from);
  if (to) p["to"] = timeText(*to);
  if (from && to) p["seconds"] = seconds(*from, *to);
  if (from && !to && ongoing) {
    p["ongoing"] = true;
    p["seconds"] = seconds(*from, std::max(*from, now));
  }
  return p;
}

// The approval: job created -> it left AwaitingApproval; the party that accepted last (or is
// awaited, or rejected). Null when the job did not await approval.
json approvalOf(const Job& job, const Observations& o, int64_t now, std::optional<int64_t>& end) {
  bool partners = false;
  for (const auto& [party, answer] : job.approvals)
    partners = partners || party != job.initiator;
  if (!o.awaiting && !partners && job.phase != "AwaitingApproval") {
    end = job.created; // no approval: the queue starts with the job
    return nullptr;
  }
  if (job.phase == "AwaitingApproval") {
    json p = phaseOf("approval", job.created, std::nullopt, true, now);
    const auto waiting = job.awaitingApproval();
    if (!waiting.empty()) p["party"] = waiting.back();
    p["awaiting"] = waiting;
    p["reason"] = "awaiting the partners' approval";
    return p;
  }
  if (job.phase == "ApprovalReject") {
    end = job.completion ? job.completion : o.approved;
    json p = phaseOf("approval", job.created, end, false, now);
    p["party"] = job.rejectedBy();
    p["reason"] = "rejected";
    if (!job.completion && o.approved) {
      p["observed"] = true;
      p["precisionSeconds"] = kObservedPrecisionSeconds;
    }
    return p;
  }
  end = o.approved;
  json p = phaseOf("approval", job.created, end, false, now);
  if (!o.approved) {
    p["reason"] = "not observed: the host was not watching when the job left approval";
    return p;
  }
  p["observed"] = true;
  p["precisionSeconds"] = kObservedPrecisionSeconds;
  // The partner that accepted last (ties: the later in the job's parties).
  std::string last;
  int64_t lastAt = 0;
  for (const auto& t : job.tasks)
    for (const auto& party : t.parties)
      if (auto it = o.accepted.find(party); it != o.accepted.end() && it->second >= lastAt) {
        last = party;
        lastAt = it->second;
      }
  if (!last.empty()) p["party"] = last;
  return p;
}

// A task as its timeline document has it.
struct TaskTimes {
  const json* doc = nullptr;
  std::optional<int64_t> created, completion, allReady;
};

TaskTimes timesOf(const std::map<std::string, json>& tasks, const std::string& name) {
  TaskTimes t;
  auto it = tasks.find(name);
  if (name.empty() || it == tasks.end()) return t;
  t.doc = &it->second;
  t.created = timeIn(*t.doc, "createTime");
  t.completion = timeIn(*t.doc, "completionTime");
  t.allReady = timeIn(objectOf(*t.doc, "summary"), "allReadyTime");
  return t;
}

// queued: the job left approval (or the task's last dependency finished) -> the task created.
json queuedOf(const Job& job, const Job::Task& task,
              const std::map<std::string, TaskTimes>& byAlias, std::optional<int64_t> approvalEnd,
              bool approved, const TaskTimes& mine, int64_t now) {
  std::optional<int64_t> from = approvalEnd;
  std::string after = approved ? "approval" : "";
  bool first = true;
  for (const auto& d : task.dependencies) {
    auto it = byAlias.find(d);
    if (it == byAlias.end() || !it->second.completion) {
      from.reset(); // a dependency not finished: nothing queues it yet
      after.clear();
      break;
    }
    if (first || *it->second.completion >= *from) {
      from = it->second.completion;
      after = d;
    }
    first = false;
  }
  json p = phaseOf("queued", from, mine.created, !control::finishedJobPhase(job.phase), now);
  if (!from) return p;
  if (!after.empty()) p["after"] = after;
  // Held by maxParallelism when at some moment of its wait that many of the job's other tasks
  // were unfinished: at its start, or when another task was created within it.
  auto activeAt = [&](int64_t at) {
    int n = 0;
    for (const auto& [alias, t] : byAlias)
      n += alias != task.alias && t.created && *t.created <= at &&
           (!t.completion || *t.completion > at);
    return n;
  };
  bool held = activeAt(*from) >= job.maxParallelism;
  for (const auto& [alias, t] : byAlias)
    held = held || (alias != task.alias && t.created && *t.created >= *from &&
                    (!mine.created || *t.created < *mine.created) &&
                    activeAt(*t.created) >= job.maxParallelism);
  if (held)
    p["reason"] = "maxParallelism";
  else if (!task.dependencies.empty())
    p["reason"] = "dependencies";
  return p;
}

// Seconds of [from, to) not covered by any of the intervals.
double uncovered(int64_t from, int64_t to, std::vector<std::pair<int64_t, int64_t>> running) {
  std::sort(running.begin(), running.end());
  int64_t at = from, idle = 0;
  for (const auto& [a, b] : running) {
    if (b <= at) continue;
    if (a >= to) break;
    if (a > at) idle += a - at;
    at = std::max(at, b);
  }
  if (to > at) idle += to - at;
  return seconds(0, idle);
}

} // namespace

Observations observationsOf(std::string_view annotation) {
  Observations o;
  if (annotation.empty()) return o;
  json j = json::parse(annotation, nullptr, false);
  if (!j.is_object() || j.value("v", 0) != 1) return o;
  o.awaiting = timeIn(j, "awaiting");
  o.approved = timeIn(j, "approved");
  for (const auto& [party, at] : objectOf(j, "accepted").items())
    if (at.is_string())
      if (auto t = sdk::parseTime(at.get<std::string>())) o.accepted[party] = *t;
  return o;
}

std::string observationsText(const Observations& o) {
  json j = {{"v", 1}};
  if (o.awaiting) j["awaiting"] = timeText(*o.awaiting);
  if (o.approved) j["approved"] = timeText(*o.approved);
  json accepted = json::object();
  for (const auto& [party, at] : o.accepted)
    accepted[boundedText(party, 253)] = timeText(at);
  if (!accepted.empty()) j["accepted"] = accepted;
  return j.dump();
}

std::string observationsPatch(const Observations& o) {
  return json{{"metadata", {{"annotations", {{kObservedAnnotation, observationsText(o)}}}}}}.dump();
}

bool observe(Observations& o, const Job& job, int64_t nowNanos, bool watched) {
  const Observations before = o;
  // Whole seconds, as Kuscia writes every time the view compares it with (a task created in the
  // second the job left approval did not wait a negative time); the precision the view states.
  nowNanos -= nowNanos % 1000000000;
  if (job.phase == "AwaitingApproval") {
    if (!o.awaiting) o.awaiting = nowNanos;
    if (watched)
      for (const auto& [party, answer] : job.approvals)
        if (party != job.initiator && answer == "JobAccepted")
          o.accepted.try_emplace(party, nowNanos);
  } else if (!job.phase.empty() && o.awaiting && !o.approved && watched) {
    o.approved = nowNanos;
    for (const auto& [party, answer] : job.approvals)
      if (party != job.initiator && answer == "JobAccepted")
        o.accepted.try_emplace(party, nowNanos);
  }
  return !(o == before);
}

json jobContext(const json& jobDoc, std::string_view task) {
  for (const auto& t : arrayOf(jobDoc, "tasks"))
    if (textOf(t, "task") == task) {
      json out = {{"job", textOf(jobDoc, "job")}, {"alias", textOf(t, "alias")}};
      if (jobDoc.contains("approval")) out["approval"] = jobDoc["approval"];
      out["queued"] = objectOf(t, "queued");
      return out;
    }
  return nullptr;
}

std::vector<const Job::Task*> dependencyOrder(const Job& job) {
  std::vector<const Job::Task*> out;
  std::set<std::string> placed;
  // Repeatedly the spec's first task whose dependencies are placed; a cycle or an unknown
  // dependency keeps the spec's order for what is left.
  while (out.size() < job.tasks.size()) {
    const Job::Task* next = nullptr;
    for (const auto& t : job.tasks) {
      if (placed.count(t.alias) != 0) continue;
      if (std::all_of(t.dependencies.begin(), t.dependencies.end(),
                      [&](const std::string& d) { return placed.count(d) != 0; })) {
        next = &t;
        break;
      }
    }
    if (next == nullptr)
      for (const auto& t : job.tasks)
        if (placed.count(t.alias) == 0) {
          next = &t;
          break;
        }
    placed.insert(next->alias);
    out.push_back(next);
  }
  return out;
}

json jobDocument(const Job& job, const Observations& o, const std::map<std::string, json>& tasks,
                 int64_t nowNanos) {
  json doc = {{"job", job.name},
              {"namespace", job.namespaceName},
              {"phase", job.phase},
              {"initiator", job.initiator}};
  if (job.created) doc["createTime"] = timeText(*job.created);
  if (job.completion) doc["completionTime"] = timeText(*job.completion);
  std::optional<int64_t> approvalEnd;
  if (json approval = approvalOf(job, o, nowNanos, approvalEnd); !approval.is_null()) {
    if (approval.contains("seconds")) doc["approvalSeconds"] = approval["seconds"];
    doc["approval"] = std::move(approval);
  }
  std::map<std::string, TaskTimes> byAlias;
  for (const auto& t : job.tasks)
    byAlias[t.alias] = timesOf(tasks, t.name);
  json list = json::array();
  std::vector<std::pair<int64_t, int64_t>> running;
  json failure;
  for (const Job::Task* t : dependencyOrder(job)) {
    const TaskTimes& mine = byAlias[t->alias];
    json out = {{"alias", t->alias}, {"task", t->name}, {"dependencies", t->dependencies}};
    json queued = queuedOf(job, *t, byAlias, approvalEnd, doc.contains("approval"), mine, nowNanos);
    if (mine.doc != nullptr) {
      const json& summary = objectOf(*mine.doc, "summary");
      out["phase"] = textOf(*mine.doc, "phase");
      if (mine.created) out["createTime"] = timeText(*mine.created);
      if (mine.allReady) out["allReadyTime"] = timeText(*mine.allReady);
      if (summary.contains("startupSeconds")) out["startupSeconds"] = summary["startupSeconds"];
      for (const char* k : {"blame", "failure", "stuck"})
        if (summary.contains(k)) out[k] = summary[k];
      if (summary.contains("failure") && failure.is_null()) {
        failure = summary["failure"];
        failure["task"] = t->name;
      }
      if (queued.contains("from") && mine.allReady)
        out["overheadSeconds"] =
            seconds(*sdk::parseTime(queued["from"].get<std::string>()), *mine.allReady);
      if (mine.allReady) {
        const int64_t end = mine.completion.value_or(std::max(*mine.allReady, nowNanos));
        out["runningSeconds"] = seconds(*mine.allReady, end);
        running.emplace_back(*mine.allReady, end);
      }
    } else {
      out["phase"] = control::finishedJobPhase(job.phase) ? "NotCreated" : "";
    }
    out["queued"] = std::move(queued);
    list.push_back(std::move(out));
  }
  doc["tasks"] = std::move(list);
  // The job's wall time (creation -> end, or now) during which none of its tasks was running.
  if (job.created)
    doc["startupOverheadSeconds"] =
        uncovered(*job.created, job.completion.value_or(std::max(*job.created, nowNanos)), running);
  if (job.phase == "ApprovalReject")
    doc["failure"] = {{"reason", "ApprovalRejected"}, {"party", job.rejectedBy()}};
  else if (!failure.is_null())
    doc["failure"] = std::move(failure);
  return doc;
}

namespace {

std::string secondsText(const json& v) {
  if (!v.is_number()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fs", v.get<double>());
  return buf;
}

std::string outcomeText(const json& t) {
  for (const char* k : {"failure", "stuck"})
    if (t.contains(k)) {
      std::string out = std::string(k == std::string("failure") ? "failed: " : "stuck: ") +
                        textOf(t[k], "reason");
      if (!textOf(t[k], "party").empty()) out += " in " + textOf(t[k], "party");
      return out;
    }
  if (t.contains("allReadyTime")) {
    const json& b = objectOf(t, "blame");
    if (b.empty()) return "ready";
    return "ready; blame " + textOf(b, "entry") + " " + textOf(b, "phase");
  }
  const std::string phase = textOf(t, "phase");
  return phase.empty() ? "waiting" : phase == "NotCreated" ? "not created" : "starting";
}

} // namespace

std::string renderJob(const json& doc) {
  std::string out = "job " + textOf(doc, "job") + " (" + textOf(doc, "phase") + "), initiator " +
                    textOf(doc, "initiator");
  if (doc.contains("createTime")) out += ", created " + textOf(doc, "createTime");
  out += "\n";
  if (const json& a = objectOf(doc, "approval"); !a.empty()) {
    out += "  approval " + secondsText(a.value("seconds", json()));
    if (a.value("ongoing", false))
      out += " so far, awaiting " + textOf(a, "party");
    else if (textOf(a, "reason") == "rejected")
      out += ", rejected by " + textOf(a, "party");
    else if (!textOf(a, "party").empty())
      out += ", " + textOf(a, "party") + " accepted last";
    if (a.value("observed", false))
      out += " (observed)";
    else if (!a.contains("seconds"))
      out += " (not observed)";
    out += "\n";
  }
  char line[512];
  std::snprintf(line, sizeof line, "  %-24s %-24s %9s %9s %9s  %s\n", "TASK", "QUEUED", "STARTUP",
                "OVERHEAD", "RUNNING", "OUTCOME");
  out += line;
  for (const auto& t : arrayOf(doc, "tasks")) {
    const json& q = objectOf(t, "queued");
    std::string queued = secondsText(q.value("seconds", json()));
    if (q.value("ongoing", false)) queued += "+";
    if (!textOf(q, "reason").empty())
      queued += " (" + textOf(q, "reason") + ")";
    else if (!textOf(q, "after").empty())
      queued += " (after " + textOf(q, "after") + ")";
    std::snprintf(line, sizeof line, "  %-24s %-24s %9s %9s %9s  %s\n", textOf(t, "task").c_str(),
                  queued.c_str(), secondsText(t.value("startupSeconds", json())).c_str(),
                  secondsText(t.value("overheadSeconds", json())).c_str(),
                  secondsText(t.value("runningSeconds", json())).c_str(), outcomeText(t).c_str());
    out += line;
  }
  out += "  startup overhead " + secondsText(doc.value("startupOverheadSeconds", json())) +
         " (no task running)";
  if (doc.contains("approvalSeconds")) out += ", approval " + secondsText(doc["approvalSeconds"]);
  out += "\n";
  if (const json& f = objectOf(doc, "failure"); !f.empty())
    out += "  failed: " + textOf(f, "reason") +
           (textOf(f, "party").empty() ? "" : " in " + textOf(f, "party")) +
           (textOf(f, "task").empty() ? "" : " (task " + textOf(f, "task") + ")") + "\n";
  return out;
}

sdk::Subscription jobSubscription(const std::string& taskNamespace) {
  return kusciaSubscription(control::kKusciaJobs, taskNamespace,
                            {"/metadata", "/spec", "/status", kObservedPointer});
}

JobFields jobOfFields(std::string_view fieldsJson) {
  enum { kMeta, kSpec, kStatus, kObserved, kCount };
  const json f = parseFields(fieldsJson, kCount);
  return {control::jobOf({{"metadata", f[kMeta]}, {"spec", f[kSpec]}, {"status", f[kStatus]}}),
          fieldString(f, kObserved)};
}

} // namespace kuscia_host::model::job
