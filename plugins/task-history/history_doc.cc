#include "history_doc.h"

#include <kuscia_host/kube_text.hpp>
#include <kuscia_model/json_member.h>
#include <kuscia_model/timeline.h>
#include <kuscia_model/timeline_summary.h>

#include <algorithm>
#include <map>
#include <set>

#include <kuscia_model/kuscia.h>

namespace kuscia_host::plugins::history {

using nlohmann::json;

namespace {

using model::textOf;

// One entry of both: the flat fields model::timeline::entry() reads, rebuilt so that durations and
// "missing" follow the merged times.
json mergeEntry(const std::string& key, const json& stored, const json& incoming) {
  std::string was = textOf(model::objectOf(stored, "times"), "createTime");
  std::string is = textOf(model::objectOf(incoming, "times"), "createTime");
  if (!was.empty() && !is.empty() && was != is) return incoming; // a new incarnation
  json flat = model::objectOf(stored, "times");
  flat.merge_patch(model::objectOf(incoming, "times"));
  json reasons = model::objectOf(stored, "reasons");
  for (const auto& [phase, r] : model::objectOf(incoming, "reasons").items())
    reasons[phase] = r;
  if (!reasons.empty()) flat["reasons"] = std::move(reasons);
  std::string podPhase = textOf(incoming, "podPhase");
  if (podPhase.empty()) podPhase = textOf(stored, "podPhase");
  if (!podPhase.empty()) flat["podPhase"] = podPhase;
  // What the status says of the pod now: the incoming recording's (it reads the same status).
  for (const auto& [field, text] : model::objectOf(incoming, "evidence").items())
    flat[field] = text;
  bool pod = textOf(incoming, "kind") == "pod" || textOf(stored, "kind") == "pod";
  json out = model::timeline::entry(key, flat, pod);
  std::string uid = textOf(incoming, "uid");
  if (uid.empty()) uid = textOf(stored, "uid");
  if (!uid.empty()) out["uid"] = uid;
  return out;
}

// The "partnerReservations" of these documents, party by party, the later document's winning.
json mergedPartners(std::initializer_list<const json*> documents) {
  json out = json::object();
  for (const json* d : documents)
    if (const json& p = model::objectOf(*d, "partnerReservations"); !p.empty()) out.update(p);
  return out;
}

} // namespace

json mergeRecording(const json& stored, const json& incoming) {
  if (!stored.is_object()) return incoming;
  json out = incoming;
  out.erase("summary");
  json entries = json::object();
  const json& before = model::objectOf(stored, "entries");
  const json& now = model::objectOf(incoming, "entries");
  for (const auto& [key, e] : before.items())
    entries[key] = now.contains(key) ? mergeEntry(key, e, now[key]) : e;
  for (const auto& [key, e] : now.items())
    if (!entries.contains(key)) entries[key] = e;
  out["entries"] = std::move(entries);
  for (const char* field : {"phase", "createTime", "completionTime", "evidence"})
    if (!out.contains(field) && stored.contains(field)) out[field] = stored[field];
  if (json partners = mergedPartners({&stored, &incoming}); !partners.empty())
    out["partnerReservations"] = std::move(partners);
  return out;
}

CombinedView combinedView(const std::vector<RecordingRef>& recordings) {
  CombinedView view;
  if (recordings.empty()) return view;
  for (std::size_t i = 1; i < recordings.size(); ++i)
    if (recordings[i].atNanos > recordings[view.latestIndex].atNanos) view.latestIndex = i;
  if (const RecordingRef& latest = recordings[view.latestIndex]; latest.text != nullptr) {
    view.phase = latest.text->phase;
    view.createTime = latest.text->createTime;
    view.end = latest.text->end;
  } else {
    view.phase = textOf(*latest.document, "phase");
    view.createTime = textOf(*latest.document, "createTime");
    view.end = model::timeline::TaskEnd::of(*latest.document);
  }
  // Others' entries first, oldest recording first, so the latest wins; then each recorder's own.
  std::vector<std::size_t> order(recordings.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&recordings](std::size_t a, std::size_t b) {
    const RecordingRef& x = recordings[a];
    const RecordingRef& y = recordings[b];
    return x.atNanos != y.atNanos ? x.atNanos < y.atNanos : x.recorder < y.recorder;
  });
  std::map<std::string_view, CombinedView::Entry> picked;
  for (bool own : {false, true})
    for (std::size_t i : order) {
      const RecordingRef& r = recordings[i];
      if (r.text != nullptr) {
        for (const auto& e : r.text->entries)
          if ((model::namespaceOf(e.key) == r.recorder) == own)
            picked[e.key] = {e.key, nullptr, &e, i};
        continue;
      }
      if (!r.document->is_object()) continue;
      auto it = r.document->find("entries");
      if (it == r.document->end() || !it->is_object()) continue;
      for (auto e = it->begin(); e != it->end(); ++e)
        if ((model::namespaceOf(e.key()) == r.recorder) == own)
          picked[e.key()] = {e.key(), &*e, nullptr, i};
    }
  view.entries.reserve(picked.size());
  for (auto& [key, entry] : picked)
    view.entries.push_back(entry);
  // The partners' reservations, the latest recording's of each party, for a party no entry is of.
  std::map<std::string, std::pair<model::timeline::EntryTimes, std::size_t>> partners;
  for (std::size_t i : order) {
    const RecordingRef& r = recordings[i];
    for (auto& e :
         r.text != nullptr ? r.text->partners : model::timeline::partnerEntries(*r.document))
      partners[std::string(model::namespaceOf(e.key))] = {e, i};
  }
  for (auto& [party, taken] : partners) {
    const std::string prefix = party + "/";
    auto at = picked.lower_bound(prefix);
    if (at != picked.end() && at->first.starts_with(prefix)) continue;
    view.partners.push_back(std::move(taken.first));
    view.partnerFrom.push_back(taken.second);
  }
  return view;
}

json combine(std::vector<StoredRecording> recordings) {
  if (recordings.empty()) return json();
  std::vector<RecordingRef> refs;
  refs.reserve(recordings.size());
  for (const auto& r : recordings)
    refs.push_back({r.recorder, r.atNanos, &r.document});
  const CombinedView view = combinedView(refs);
  // Each entry taken is moved out of the recording it is taken from (this function owns them).
  json entries = json::object();
  for (const auto& e : view.entries) {
    std::string key(e.key);
    entries[key] = std::move(recordings[e.from].document["entries"][key]);
  }
  // The partners' reservations the view takes, each from the recording it takes it from.
  json partners = json::object();
  for (std::size_t i = 0; i < view.partners.size(); ++i) {
    const std::string party(model::namespaceOf(view.partners[i].key));
    partners[party] = model::objectOf(
        model::objectOf(recordings[view.partnerFrom[i]].document, "partnerReservations"), party);
  }
  json doc = std::move(recordings[view.latestIndex].document);
  doc.erase("summary");
  doc.erase("partnerReservations");
  if (!partners.empty()) doc["partnerReservations"] = std::move(partners);
  doc["entries"] = std::move(entries);
  return doc;
}

TaskRow taskRowOf(const json& document, int64_t nowNanos, int64_t stuckAfterNanos) {
  CombinedView view;
  view.phase = textOf(document, "phase");
  view.createTime = textOf(document, "createTime");
  view.end = model::timeline::TaskEnd::of(document);
  const json& entries = model::objectOf(document, "entries");
  view.entries.reserve(entries.size());
  for (auto e = entries.begin(); e != entries.end(); ++e)
    view.entries.push_back({e.key(), &*e, nullptr, 0});
  view.partners = model::timeline::partnerEntries(document);
  return taskRowOf(view, nowNanos, stuckAfterNanos);
}

TaskRow taskRowOf(const CombinedView& combined, int64_t nowNanos, int64_t stuckAfterNanos) {
  TaskRow row;
  row.phase = combined.phase;
  std::optional<int64_t> created = sdk::parseTime(combined.createTime);
  if (created) row.createNanos = *created;
  // The summary as values (what model::timeline::summarize(document) answers as JSON): the row's
  // columns are read from them, and the JSON is built once, to be stored.
  std::vector<model::timeline::EntryTimes> entries;
  entries.reserve(combined.entries.size());
  std::set<std::string> parties;
  for (const auto& e : combined.entries) {
    if (auto party = model::namespaceOf(e.key); !party.empty()) parties.emplace(party);
    entries.push_back(e.times != nullptr ? *e.times : model::timeline::entryTimes(e.key, *e.entry));
  }
  entries.insert(entries.end(), combined.partners.begin(), combined.partners.end());
  const model::timeline::Summary s =
      model::timeline::summarize(created, entries, nowNanos, combined.end, stuckAfterNanos);
  row.summary = model::timeline::toJson(s, nowNanos);
  row.complete = s.complete;
  row.startupSeconds = s.startupSeconds();
  if (s.blame) {
    row.blameParty = s.blame->party;
    row.blamePhase = s.blame->phase;
  }
  if (const auto& why = s.failure ? s.failure : s.stuck) {
    row.reason = model::failure::name(why->reason);
    row.reasonParty = why->party;
  }
  for (const auto& party : parties) {
    TaskRow::Party p{party, std::nullopt, {}};
    if (auto it = s.parties.find(party); it != s.parties.end())
      p.startupSeconds = s.startupSeconds(it->second);
    row.parties.push_back(std::move(p));
  }
  // A complete task's path, as the summary's "criticalPath" gives each phase's seconds.
  for (const auto& phase : s.criticalPath) {
    auto seconds = phase.seconds();
    if (!seconds) continue;
    const auto* name = std::find_if(std::begin(model::timeline::kPhaseNames),
                                    std::end(model::timeline::kPhaseNames),
                                    [&](const char* n) { return phase.phase == n; });
    if (name == std::end(model::timeline::kPhaseNames)) continue;
    auto i = static_cast<std::size_t>(name - std::begin(model::timeline::kPhaseNames));
    row.path[i] += *seconds;
    for (auto& p : row.parties)
      if (p.name == phase.party) p.path[i] += *seconds;
  }
  return row;
}

} // namespace kuscia_host::plugins::history
