#include "otel_spans.h"

#include <kuscia_host/kube_text.hpp>
#include <kuscia_model/json_member.h>
#include <kuscia_model/timeline_summary.h>

#include <algorithm>
#include <set>
#include <utility>

namespace kuscia_host::plugins::otel {

using nlohmann::json;

namespace {

using model::objectOf;
using model::textOf;
using model::timeIn;

bool running(std::string_view phase) {
  return phase == "Running" || phase == "Succeeded";
}

} // namespace

TaskFacts taskFactsOf(const std::string& name, const std::string& namespaceName,
                      const json& fields) {
  TaskFacts t;
  t.name = name;
  t.namespaceName = namespaceName;
  auto str = [&](std::size_t i) {
    return i < fields.size() && fields[i].is_string() ? fields[i].get<std::string>()
                                                      : std::string();
  };
  t.initiator = str(kTaskInitiator);
  t.phase = str(kTaskPhase);
  t.job = str(kTaskJob);
  t.alias = str(kTaskAlias);
  if (fields.size() > kTaskParties && fields[kTaskParties].is_array())
    for (const auto& p : fields[kTaskParties])
      if (std::string d = textOf(p, "domainID"); !d.empty()) t.parties.push_back(d);
  bool allParties = false;
  if (fields.size() > kTaskPartyStatus && fields[kTaskPartyStatus].is_array() &&
      !fields[kTaskPartyStatus].empty()) {
    allParties = true;
    std::set<std::string> seen;
    for (const auto& p : fields[kTaskPartyStatus]) {
      allParties = allParties && running(textOf(p, "phase"));
      seen.insert(textOf(p, "domainID"));
    }
    for (const auto& d : t.parties)
      allParties = allParties && seen.count(d) > 0;
  }
  t.partiesRunning = allParties || running(t.phase);
  if (t.partiesRunning && fields.size() > kTaskConditions && fields[kTaskConditions].is_array())
    for (const auto& c : fields[kTaskConditions])
      if (textOf(c, "type") == "Running" && textOf(c, "status") == "True")
        t.runningSince = timeIn(c, "lastTransitionTime");
  return t;
}

namespace {

namespace tl = model::timeline;

// How long a root waits for its job's phases to settle (otel_spans.h, planSpans).
constexpr int64_t kJobSettleNanos = int64_t{10} * 1000000000;

// What planSpans works out once and every span reads: the task's ids, its summary, the critical
// path and the blame; and the plan it fills.
class SpanPlanner {
public:
  SpanPlanner(const json& doc, const TaskFacts& task, const std::string& domain, int64_t nowNanos,
              int64_t stuckAfterNanos, bool p2p, const JobContext& jobContext)
      : doc_(doc), task_(task), domain_(domain), now_(nowNanos), stuckAfter_(stuckAfterNanos),
        p2p_(p2p), jobContext_(jobContext), trace_(traceIdOf(task.name)),
        summary_(tl::summarize(doc, nowNanos, stuckAfterNanos)),
        complete_(summary_.value("complete", false)), taskCreate_(timeIn(doc, "createTime")),
        rootId_(spanIdOf(trace_, "", "", "", "task")),
        partyId_(spanIdOf(trace_, domain, "", "", "party")) {
    if (summary_.contains("failure")) {
      failure_ = summary_["failure"];
      ended_ = timeIn(doc, "completionTime").value_or(nowNanos);
    }
    if (!complete_) return;
    for (const auto& p : summary_.value("criticalPath", json::array()))
      critical_.emplace(textOf(p, "entry"), textOf(p, "phase"));
    if (summary_.contains("blame"))
      blame_ = {textOf(summary_["blame"], "entry"), textOf(summary_["blame"], "phase")};
  }

  Plan plan() {
    const bool initiator = task_.initiator == domain_;
    const bool party =
        std::find(task_.parties.begin(), task_.parties.end(), domain_) != task_.parties.end();
    const json empty = json::object();
    const json& entries =
        doc_.contains("entries") && doc_["entries"].is_object() ? doc_["entries"] : empty;
    bool hasEntries = false;
    for (const auto& [key, entry] : entries.items()) {
      if (tl::detail::partyOf(key) != domain_) continue;
      hasEntries = true;
      entrySpans(key, entry);
    }
    // A party owes its span once its entries are ready; a task that ended before its party had
    // any (a pre-check failed it before the pods) owes none.
    if (!partySpan(hasEntries) && (hasEntries || (party && !ended_))) owed_ = false;
    if (initiator && taskCreate_ && !taskSpan()) owed_ = false;
    plan_.finished = owed_ && (party || hasEntries || initiator);
    for (const auto& s : plan_.spans)
      plan_.finished = plan_.finished && !s.pending;
    return std::move(plan_);
  }

private:
  void add(SpanData s) {
    s.traceId = trace_;
    s.attributes.insert(s.attributes.begin(), Attribute{"kuscia.task.name", task_.name});
    plan_.finishedAt = std::max(plan_.finishedAt.value_or(s.endNanos), s.endNanos);
    plan_.spans.push_back(std::move(s));
  }

  void blameAttributes(std::vector<Attribute>& a) const {
    if (blame_.second.empty()) return;
    a.push_back({"kuscia.blame.phase", blame_.second});
    a.push_back({"kuscia.blame.entry", blame_.first});
  }

  // An entry's phases, then (once ready) the entry's own span.
  void entrySpans(const std::string& key, const json& entry) {
    const std::string incarnation = textOf(objectOf(entry, "times"), "createTime");
    const auto create = tl::detail::timeOf(entry, "createTime");
    if (!create) {
      owed_ = false;
      return;
    }
    const SpanId entryId = spanIdOf(trace_, domain_, key, incarnation, "entry");
    for (const tl::Phase& ph : tl::phasesOf(key, entry))
      if (auto s = phaseSpan(key, entry, incarnation, ph)) {
        s->parent = entryId;
        add(std::move(*s));
      }
    auto ready = tl::readyOf(entry);
    if (!ready && !ended_) {
      owed_ = false;
      return;
    }
    const bool pod = textOf(entry, "kind") == "pod";
    const std::string name = textOf(entry, "name");
    SpanData s;
    s.spanId = entryId;
    s.parent = partyId_;
    s.name = pod ? "kuscia.pod.startup" : "kuscia.service.startup";
    s.startNanos = *create;
    s.endNanos = ready ? *ready : std::max(*ended_, *create);
    if (!ready) failed(s, key);
    s.attributes = {{"kuscia.party", domain_},
                    {"kuscia.entry", key},
                    {"k8s.namespace.name", textOf(entry, "namespace")}};
    if (pod) {
      s.attributes.push_back({"k8s.pod.name", name});
      if (std::string uid = textOf(entry, "uid"); !uid.empty())
        s.attributes.push_back({"k8s.pod.uid", uid});
    } else {
      s.attributes.push_back({"kuscia.service.name", name});
    }
    add(std::move(s));
  }

  // One phase's span: ended, or open past stuckAfter (an error); nullopt while it may still end.
  std::optional<SpanData> phaseSpan(const std::string& key, const json& entry,
                                    const std::string& incarnation, const tl::Phase& ph) const {
    SpanData s;
    s.spanId = spanIdOf(trace_, domain_, key, incarnation, ph.phase);
    s.name = ph.phase;
    s.startNanos = ph.from;
    if (ph.to) {
      s.endNanos = *ph.to;
    } else if (ended_) {
      s.endNanos = std::max(*ended_, ph.from);
      failed(s, key);
    } else if (sdk::elapsed(ph.from, now_) >= stuckAfter_) {
      s.endNanos = now_;
      s.pending = true;
      s.status = StatusCode::kError;
      s.statusMessage = ph.reason.empty()
                            ? "still " + ph.phase + " after " +
                                  std::to_string(sdk::elapsed(ph.from, now_) / 1000000000) + " s"
                            : ph.reason + (ph.message.empty() ? "" : ": " + ph.message);
    } else {
      return std::nullopt;
    }
    s.attributes = {{"kuscia.party", domain_}, {"kuscia.entry", key}, {"kuscia.phase", ph.phase}};
    if (critical_.count({key, ph.phase}) > 0)
      s.attributes.push_back({"kuscia.critical_path", true});
    if (blame_ == std::pair(key, ph.phase)) s.attributes.push_back({"kuscia.blame", true});
    if (s.pending) s.attributes.push_back({"kuscia.phase.pending", true});
    if (!ph.reason.empty()) {
      s.attributes.push_back({"kuscia.phase.reason", ph.reason});
      if (!ph.message.empty()) s.attributes.push_back({"kuscia.phase.message", ph.message});
      const json& r = objectOf(objectOf(entry, "reasons"), ph.phase);
      SpanEvent ev;
      ev.timeNanos = r.contains("since") && r["since"].is_number_integer()
                         ? r["since"].get<int64_t>()
                         : ph.from;
      ev.name = ph.reason;
      if (!ph.message.empty()) ev.attributes.push_back({"kuscia.phase.message", ph.message});
      s.events.push_back(std::move(ev));
    }
    return s;
  }

  // A span that ended with the failed task: ERROR, with the reason where its entry is the
  // failure's evidence.
  void failed(SpanData& s, const std::string& entry) const {
    s.status = StatusCode::kError;
    s.statusMessage = textOf(failure_, "entry") == entry
                          ? textOf(failure_, "reason")
                          : "ended with the task (" + textOf(failure_, "reason") + ")";
  }

  // This domain's span, once every entry of it is ready (or the task failed); whether it was
  // added.
  bool partySpan(bool hasEntries) {
    const json& partySummary = objectOf(objectOf(summary_, "parties"), domain_);
    auto partyReady = timeIn(partySummary, "readyTime");
    const bool allReady =
        partyReady && partySummary.value("readyEntries", 0) == partySummary.value("entries", -1);
    if (!hasEntries || !taskCreate_ || (!allReady && !ended_)) return false;
    if (!allReady) partyReady = std::max(*ended_, *taskCreate_);
    SpanData s;
    s.spanId = partyId_;
    s.parent = rootId_;
    s.parentRemote = p2p_ && task_.initiator != domain_;
    s.name = "kuscia.party.startup";
    s.startNanos = *taskCreate_;
    s.endNanos = *partyReady;
    s.attributes = {{"kuscia.party", domain_},
                    {"kuscia.party.entries", int64_t{partySummary.value("entries", 0)}}};
    if (blame_.first.rfind(domain_ + "/", 0) == 0) blameAttributes(s.attributes);
    if (!allReady) {
      s.status = StatusCode::kError;
      s.statusMessage = textOf(failure_, "reason");
    }
    add(std::move(s));
    return true;
  }

  // The reason of a failed or stuck task on its root span: the status, its attributes, and the
  // excerpt as the "kuscia.failure" event.
  static void whyAttributes(SpanData& s, const json& why) {
    s.status = StatusCode::kError;
    s.statusMessage = textOf(why, "reason");
    s.attributes.push_back({"kuscia.failure.reason", textOf(why, "reason")});
    for (auto [field, key] :
         {std::pair{"party", "kuscia.failure.party"}, std::pair{"entry", "kuscia.failure.entry"},
          std::pair{"cause", "kuscia.failure.cause"}, std::pair{"pair", "kuscia.failure.route"},
          std::pair{"routeReason", "kuscia.failure.route_reason"},
          std::pair{"lastHeartbeatTime", "kuscia.failure.route_last_heartbeat"}})
      if (std::string v = textOf(why, field); !v.empty()) s.attributes.push_back({key, v});
    if (std::string down = textOf(objectOf(why, "routeDown"), "since"); !down.empty())
      s.attributes.push_back({"kuscia.failure.route_down_since", down});
    SpanEvent ev;
    ev.timeNanos = timeIn(why, "since").value_or(s.endNanos);
    ev.name = "kuscia.failure";
    ev.attributes.push_back({"kuscia.failure.reason", textOf(why, "reason")});
    if (std::string excerpt = textOf(why, "excerpt"); !excerpt.empty())
      ev.attributes.push_back({"kuscia.failure.excerpt", excerpt});
    s.events.push_back(std::move(ev));
  }

  // The task's root span (the initiator's), once its end is known; whether it was added. The
  // exact end when this host sees every party's entries (centralized); else (p2p, where the
  // other parties' pods are in their own clusters) the coarser one the task's own status gives:
  // every party runs.
  bool taskSpan() {
    const json& parties = objectOf(summary_, "parties");
    bool seesEveryParty = true;
    for (const auto& p : task_.parties)
      seesEveryParty = seesEveryParty && objectOf(parties, p).value("entries", 0) > 0;
    std::optional<int64_t> end;
    std::string how;
    const json* why = nullptr;
    bool pending = false;
    if (ended_) {
      end = ended_;
      how = "failed";
      why = &failure_;
    } else if (summary_.contains("stuck")) {
      end = now_;
      how = "stuck";
      why = &summary_["stuck"];
      pending = true;
    } else if (seesEveryParty && complete_) {
      end = timeIn(summary_, "allReadyTime");
      how = "all_ready";
    } else if (!seesEveryParty && task_.partiesRunning) {
      end = task_.runningSince.value_or(now_);
      if (auto seen = timeIn(summary_, "allReadyTime"); complete_ && seen)
        end = std::max(*end, *seen);
      how = "parties_running";
    }
    if (!end) return false;
    SpanData s;
    s.spanId = rootId_;
    s.name = "kuscia.task.startup";
    s.startNanos = *taskCreate_;
    s.endNanos = std::max(*end, *taskCreate_);
    std::string partyList;
    for (const auto& p : task_.parties)
      partyList += (partyList.empty() ? "" : ",") + p;
    s.attributes = {{"k8s.namespace.name", task_.namespaceName},
                    {"kuscia.task.initiator", task_.initiator},
                    {"kuscia.task.parties", partyList},
                    {"kuscia.task.root_end", how}};
    if (!task_.uid.empty()) s.attributes.push_back({"kuscia.task.uid", task_.uid});
    if (!task_.job.empty()) s.attributes.push_back({"kuscia.job.id", task_.job});
    if (!task_.alias.empty()) s.attributes.push_back({"kuscia.task.alias", task_.alias});
    if (std::string last = textOf(summary_, "lastParty"); !last.empty() && how == "all_ready")
      s.attributes.push_back({"kuscia.task.last_party", last});
    blameAttributes(s.attributes);
    if (why != nullptr) whyAttributes(s, *why);
    s.pending = pending;
    std::vector<SpanData> job;
    if (!pending && !jobSpans(s.endNanos, job)) return false;
    add(std::move(s));
    for (auto& j : job)
      add(std::move(j));
    return !pending;
  }

  // What came before the task in its job (jobContext_: kuscia_model/job_view.h), under the root:
  // its job's approval and its wait in the job's queue, each once it ended. They start before the
  // root (the task's creation), as they came before it. Whether they can go out with the root
  // that ends at `rootEnd`: a phase the job view has without its start or end (the observation
  // of the approval's end not yet in the cached job: task-timeline writes it beside) holds the
  // root for kJobSettleNanos after its end, then the root goes without it (never guessed).
  bool jobSpans(int64_t rootEnd, std::vector<SpanData>& out) const {
    if (!jobContext_) return true;
    const json job = jobContext_();
    bool settled = true;
    for (const char* phase : {"approval", "queued"}) {
      if (!job.is_object() || !job.contains(phase)) continue;
      const json& p = objectOf(job, phase);
      auto from = timeIn(p, "from");
      auto to = timeIn(p, "to");
      if (!from || !to || p.value("ongoing", false)) {
        settled = false;
        continue;
      }
      SpanData s;
      s.spanId = spanIdOf(trace_, "", "", "", std::string("job.") + phase);
      s.parent = rootId_;
      s.name = std::string("kuscia.job.") + phase;
      s.startNanos = *from;
      s.endNanos = std::max(*to, *from);
      s.attributes = {{"kuscia.job.id", textOf(job, "job")}, {"kuscia.phase", phase}};
      if (std::string party = textOf(p, "party"); !party.empty())
        s.attributes.push_back({"kuscia.party", party});
      if (std::string reason = textOf(p, "reason"); !reason.empty())
        s.attributes.push_back({"kuscia.phase.reason", reason});
      if (std::string after = textOf(p, "after"); !after.empty())
        s.attributes.push_back({"kuscia.job.after", after});
      if (p.value("observed", false)) {
        s.attributes.push_back({"kuscia.phase.observed", true});
        s.attributes.push_back(
            {"kuscia.phase.precision_seconds", int64_t{p.value("precisionSeconds", 1)}});
      }
      out.push_back(std::move(s));
    }
    return settled || sdk::elapsed(rootEnd, now_) >= kJobSettleNanos;
  }

  const json& doc_;
  const TaskFacts& task_;
  const std::string& domain_;
  const int64_t now_, stuckAfter_;
  const bool p2p_;
  const JobContext& jobContext_;
  const TraceId trace_;
  const json summary_;
  const bool complete_;
  const std::optional<int64_t> taskCreate_;
  const SpanId rootId_, partyId_;
  std::set<std::pair<std::string, std::string>> critical_;
  std::pair<std::string, std::string> blame_;
  json failure_;                 // summary.failure, when the task failed
  std::optional<int64_t> ended_; // then: when it ended
  bool owed_ = true;             // every span owed has ended
  Plan plan_;
};

} // namespace

Plan planSpans(const json& doc, const TaskFacts& task, const std::string& domain, int64_t nowNanos,
               int64_t stuckAfterNanos, bool p2p, const JobContext& jobContext) {
  return SpanPlanner(doc, task, domain, nowNanos, stuckAfterNanos, p2p, jobContext).plan();
}

} // namespace kuscia_host::plugins::otel
