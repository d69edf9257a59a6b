#include "history_doc.h"

#include <kuscia_host/kube_text.hpp>
#include <kuscia_host/timeline.hpp>
#include <kuscia_host/timeline_summary.hpp>

#include <algorithm>
#include <set>

#include "kuscia.h"

namespace kuscia_host::plugins::history {

using nlohmann::json;

namespace {

const json& member(const json& obj, const char* key) {
  static const json kEmpty = json::object();
  if (!obj.is_object()) return kEmpty;
  auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? *it : kEmpty;
}

std::string textOf(const json& obj, const char* key) {
  if (!obj.is_object()) return {};
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// One entry of both: the flat fields sdk::timeline::entry() reads, rebuilt so that durations and
// "missing" follow the merged times.
json mergeEntry(const std::string& key, const json& stored, const json& incoming) {
  std::string was = textOf(member(stored, "times"), "createTime");
  std::string is = textOf(member(incoming, "times"), "createTime");
  if (!was.empty() && !is.empty() && was != is) return incoming; // a new incarnation
  json flat = member(stored, "times");
  flat.merge_patch(member(incoming, "times"));
  json reasons = member(stored, "reasons");
  for (const auto& [phase, r] : member(incoming, "reasons").items())
    reasons[phase] = r;
  if (!reasons.empty()) flat["reasons"] = std::move(reasons);
  std::string podPhase = textOf(incoming, "podPhase");
  if (podPhase.empty()) podPhase = textOf(stored, "podPhase");
  if (!podPhase.empty()) flat["podPhase"] = podPhase;
  bool pod = textOf(incoming, "kind") == "pod" || textOf(stored, "kind") == "pod";
  json out = sdk::timeline::entry(key, flat, pod);
  std::string uid = textOf(incoming, "uid");
  if (uid.empty()) uid = textOf(stored, "uid");
  if (!uid.empty()) out["uid"] = uid;
  return out;
}

} // namespace

json mergeRecording(const json& stored, const json& incoming) {
  if (!stored.is_object()) return incoming;
  json out = incoming;
  out.erase("summary");
  json entries = json::object();
  const json& before = member(stored, "entries");
  const json& now = member(incoming, "entries");
  for (const auto& [key, e] : before.items())
    entries[key] = now.contains(key) ? mergeEntry(key, e, now[key]) : e;
  for (const auto& [key, e] : now.items())
    if (!entries.contains(key)) entries[key] = e;
  out["entries"] = std::move(entries);
  for (const char* field : {"phase", "createTime"})
    if (!out.contains(field) && stored.contains(field)) out[field] = stored[field];
  return out;
}

json combine(std::vector<StoredRecording> recordings) {
  if (recordings.empty()) return json();
  StoredRecording* latest = &recordings.front();
  for (auto& r : recordings)
    if (r.atNanos > latest->atNanos) latest = &r;
  // Others' entries first, oldest recording first, so the latest wins; then each recorder's own.
  // Each recording's entry is taken once, by one of the two walks: moved, not copied.
  std::vector<StoredRecording*> order;
  order.reserve(recordings.size());
  for (auto& r : recordings)
    order.push_back(&r);
  std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return a->atNanos != b->atNanos ? a->atNanos < b->atNanos : a->recorder < b->recorder;
  });
  json entries = json::object();
  for (bool own : {false, true})
    for (auto* r : order) {
      auto it = r->document.find("entries"); // end() when the document is not an object
      if (it == r->document.end() || !it->is_object()) continue;
      for (auto e = it->begin(); e != it->end(); ++e)
        if ((namespaceOf(e.key()) == r->recorder) == own) entries[e.key()] = std::move(*e);
    }
  json doc = std::move(latest->document);
  doc.erase("summary");
  doc["entries"] = std::move(entries);
  return doc;
}

TaskRow taskRowOf(const json& document, int64_t nowNanos) {
  TaskRow row;
  row.phase = textOf(document, "phase");
  std::optional<int64_t> created = sdk::parseTime(textOf(document, "createTime"));
  if (created) row.createNanos = *created;
  // The summary as values (what sdk::timeline::summarize(document) answers as JSON): the row's
  // columns are read from them, and the JSON is built once, to be stored.
  std::vector<sdk::timeline::EntryTimes> entries;
  std::set<std::string> parties;
  for (const auto& [key, e] : member(document, "entries").items()) {
    if (auto party = namespaceOf(key); !party.empty()) parties.emplace(party);
    entries.push_back(sdk::timeline::entryTimes(key, e));
  }
  const sdk::timeline::Summary s = sdk::timeline::summarize(created, std::move(entries), nowNanos);
  row.summary = sdk::timeline::toJson(s, nowNanos);
  row.complete = s.complete;
  row.startupSeconds = s.startupSeconds();
  if (s.blame) {
    row.blameParty = s.blame->party;
    row.blamePhase = s.blame->phase;
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
    const auto* name =
        std::find_if(std::begin(sdk::timeline::kPhaseNames), std::end(sdk::timeline::kPhaseNames),
                     [&](const char* n) { return phase.phase == n; });
    if (name == std::end(sdk::timeline::kPhaseNames)) continue;
    auto i = static_cast<std::size_t>(name - std::begin(sdk::timeline::kPhaseNames));
    row.path[i] += *seconds;
    for (auto& p : row.parties)
      if (p.name == phase.party) p.path[i] += *seconds;
  }
  return row;
}

} // namespace kuscia_host::plugins::history
