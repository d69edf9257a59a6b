#include "otel_spans.h"

#include <kuscia_host/kube_text.hpp>
#include <kuscia_model/timeline_summary.h>

#include <openssl/evp.h>

#include <algorithm>
#include <set>
#include <utility>

namespace kuscia_host::plugins::otel {

using nlohmann::json;

namespace {

std::array<uint8_t, 32> sha256(std::string_view text) {
  std::array<uint8_t, 32> out{};
  unsigned int n = 0;
  EVP_Digest(text.data(), text.size(), out.data(), &n, EVP_sha256(), nullptr);
  return out;
}

template <std::size_t N> std::array<uint8_t, N> firstBytes(std::string_view text) {
  auto digest = sha256(text);
  std::array<uint8_t, N> id{};
  std::copy_n(digest.begin(), N, id.begin());
  if (std::all_of(id.begin(), id.end(), [](uint8_t b) { return b == 0; })) id[N - 1] = 1;
  return id;
}

std::string textOf(const json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<int64_t> timeIn(const json& j, const char* key) {
  std::string t = textOf(j, key);
  return t.empty() ? std::nullopt : sdk::parseTime(t);
}

// j[key] when both are objects, else an empty object: documents may hold anything.
const json& objectAt(const json& j, const std::string& key) {
  static const json kEmpty = json::object();
  if (!j.is_object()) return kEmpty;
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : kEmpty;
}

bool running(std::string_view phase) {
  return phase == "Running" || phase == "Succeeded";
}

} // namespace

std::string hex(const uint8_t* data, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(kDigits[data[i] >> 4]);
    out.push_back(kDigits[data[i] & 15]);
  }
  return out;
}

TraceId traceIdOf(std::string_view task) {
  return firstBytes<16>("kuscia-host/trace/v1\n" + std::string(task));
}

SpanId spanIdOf(const TraceId& trace, std::string_view party, std::string_view entry,
                std::string_view incarnation, std::string_view kind) {
  std::string text = "kuscia-host/span/v1\n" + hex(trace);
  for (std::string_view part : {party, entry, incarnation, kind})
    text.append("\n").append(part);
  return firstBytes<8>(text);
}

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

Plan planSpans(const json& doc, const TaskFacts& task, const std::string& domain, int64_t nowNanos,
               int64_t stuckAfterNanos, bool p2p) {
  namespace tl = model::timeline;
  Plan plan;
  const TraceId trace = traceIdOf(task.name);
  const bool initiator = task.initiator == domain;
  const bool party =
      std::find(task.parties.begin(), task.parties.end(), domain) != task.parties.end();
  const json summary = tl::summarize(doc, nowNanos);
  const bool complete = summary.value("complete", false);
  std::set<std::pair<std::string, std::string>> critical;
  std::pair<std::string, std::string> blame;
  if (complete) {
    for (const auto& p : summary.value("criticalPath", json::array()))
      critical.emplace(textOf(p, "entry"), textOf(p, "phase"));
    if (summary.contains("blame"))
      blame = {textOf(summary["blame"], "entry"), textOf(summary["blame"], "phase")};
  }
  const auto taskCreate = timeIn(doc, "createTime");
  const SpanId rootId = spanIdOf(trace, "", "", "", "task");
  const SpanId partyId = spanIdOf(trace, domain, "", "", "party");
  bool owed = true; // every span owed has ended
  auto add = [&](SpanData s) {
    s.traceId = trace;
    s.attributes.insert(s.attributes.begin(), Attribute{"kuscia.task.name", task.name});
    plan.finishedAt = std::max(plan.finishedAt.value_or(s.endNanos), s.endNanos);
    plan.spans.push_back(std::move(s));
  };
  auto blameAttributes = [&](std::vector<Attribute>& a) {
    if (blame.second.empty()) return;
    a.push_back({"kuscia.blame.phase", blame.second});
    a.push_back({"kuscia.blame.entry", blame.first});
  };

  const json empty = json::object();
  const json& entries =
      doc.contains("entries") && doc["entries"].is_object() ? doc["entries"] : empty;
  bool hasEntries = false;
  for (const auto& [key, entry] : entries.items()) {
    if (tl::detail::partyOf(key) != domain) continue;
    hasEntries = true;
    const bool pod = textOf(entry, "kind") == "pod";
    const std::string incarnation = textOf(objectAt(entry, "times"), "createTime");
    const auto create = tl::detail::timeOf(entry, "createTime");
    if (!create) {
      owed = false;
      continue;
    }
    const SpanId entryId = spanIdOf(trace, domain, key, incarnation, "entry");
    const std::string name = textOf(entry, "name");
    for (const tl::Phase& ph : tl::phasesOf(key, entry)) {
      SpanData s;
      s.spanId = spanIdOf(trace, domain, key, incarnation, ph.phase);
      s.parent = entryId;
      s.name = ph.phase;
      s.startNanos = ph.from;
      if (ph.to) {
        s.endNanos = *ph.to;
      } else if (sdk::elapsed(ph.from, nowNanos) >= stuckAfterNanos) {
        s.endNanos = nowNanos;
        s.pending = true;
        s.status = StatusCode::kError;
        s.statusMessage = ph.reason.empty()
                              ? "still " + ph.phase + " after " +
                                    std::to_string(sdk::elapsed(ph.from, nowNanos) / 1000000000) +
                                    " s"
                              : ph.reason + (ph.message.empty() ? "" : ": " + ph.message);
      } else {
        continue;
      }
      s.attributes = {{"kuscia.party", domain}, {"kuscia.entry", key}, {"kuscia.phase", ph.phase}};
      if (critical.count({key, ph.phase}) > 0)
        s.attributes.push_back({"kuscia.critical_path", true});
      if (blame == std::pair(key, ph.phase)) s.attributes.push_back({"kuscia.blame", true});
      if (s.pending) s.attributes.push_back({"kuscia.phase.pending", true});
      if (!ph.reason.empty()) {
        s.attributes.push_back({"kuscia.phase.reason", ph.reason});
        if (!ph.message.empty()) s.attributes.push_back({"kuscia.phase.message", ph.message});
        const json& r = objectAt(objectAt(entry, "reasons"), ph.phase);
        SpanEvent ev;
        ev.timeNanos = r.contains("since") && r["since"].is_number_integer()
                           ? r["since"].get<int64_t>()
                           : ph.from;
        ev.name = ph.reason;
        if (!ph.message.empty()) ev.attributes.push_back({"kuscia.phase.message", ph.message});
        s.events.push_back(std::move(ev));
      }
      add(std::move(s));
    }
    auto ready = tl::readyOf(entry);
    if (!ready) {
      owed = false;
      continue;
    }
    SpanData s;
    s.spanId = entryId;
    s.parent = partyId;
    s.name = pod ? "kuscia.pod.startup" : "kuscia.service.startup";
    s.startNanos = *create;
    s.endNanos = *ready;
    s.attributes = {{"kuscia.party", domain},
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

  const json& parties = objectAt(summary, "parties");
  const json& partySummary = objectAt(parties, domain);
  const auto partyReady = timeIn(partySummary, "readyTime");
  if (hasEntries && taskCreate && partyReady &&
      partySummary.value("readyEntries", 0) == partySummary.value("entries", -1)) {
    SpanData s;
    s.spanId = partyId;
    s.parent = rootId;
    s.parentRemote = p2p && !initiator;
    s.name = "kuscia.party.startup";
    s.startNanos = *taskCreate;
    s.endNanos = *partyReady;
    s.attributes = {{"kuscia.party", domain},
                    {"kuscia.party.entries", int64_t{partySummary.value("entries", 0)}}};
    if (blame.first.rfind(domain + "/", 0) == 0) blameAttributes(s.attributes);
    add(std::move(s));
  } else if (party || hasEntries) {
    owed = false;
  }

  if (initiator && taskCreate) {
    // The exact end when this host sees every party's entries (centralized); else (p2p, where
    // the other parties' pods are in their own clusters) the coarser one the task's own status
    // gives: every party runs.
    bool seesEveryParty = true;
    for (const auto& p : task.parties) {
      seesEveryParty = seesEveryParty && objectAt(parties, p).value("entries", 0) > 0;
    }
    std::optional<int64_t> end;
    std::string how;
    if (seesEveryParty && complete) {
      end = timeIn(summary, "allReadyTime");
      how = "all_ready";
    } else if (!seesEveryParty && task.partiesRunning) {
      end = task.runningSince.value_or(nowNanos);
      if (auto seen = timeIn(summary, "allReadyTime"); complete && seen)
        end = std::max(*end, *seen);
      how = "parties_running";
    }
    if (end) {
      SpanData s;
      s.spanId = rootId;
      s.name = "kuscia.task.startup";
      s.startNanos = *taskCreate;
      s.endNanos = std::max(*end, *taskCreate);
      std::string partyList;
      for (const auto& p : task.parties)
        partyList += (partyList.empty() ? "" : ",") + p;
      s.attributes = {{"k8s.namespace.name", task.namespaceName},
                      {"kuscia.task.initiator", task.initiator},
                      {"kuscia.task.parties", partyList},
                      {"kuscia.task.root_end", how}};
      if (!task.uid.empty()) s.attributes.push_back({"kuscia.task.uid", task.uid});
      if (!task.job.empty()) s.attributes.push_back({"kuscia.job.id", task.job});
      if (!task.alias.empty()) s.attributes.push_back({"kuscia.task.alias", task.alias});
      if (std::string last = textOf(summary, "lastParty"); !last.empty() && how == "all_ready")
        s.attributes.push_back({"kuscia.task.last_party", last});
      blameAttributes(s.attributes);
      add(std::move(s));
    } else {
      owed = false;
    }
  }
  plan.finished = owed && (party || hasEntries || initiator);
  for (const auto& s : plan.spans)
    plan.finished = plan.finished && !s.pending;
  return plan;
}

} // namespace kuscia_host::plugins::otel
