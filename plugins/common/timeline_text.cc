#include "timeline_text.h"

#include <kuscia_host/kube_text.hpp>

#include <algorithm>
#include <cstddef>

#include "json_text.h"

namespace kuscia_host::plugins {

using nlohmann::json;

namespace {

namespace timeline = sdk::timeline;

// The members of an object in the order dump() writes them (its map's): by name.
template <typename Pair, std::size_t N> void byName(Pair (&pairs)[N], std::size_t n) {
  std::sort(pairs, pairs + n, [](const Pair& a, const Pair& b) {
    return std::string_view(a.first) < std::string_view(b.first);
  });
}

void appendKey(std::string& out, std::string_view key) {
  appendJsonString(out, key);
  out += ':';
}

// One entry as entry() builds it and dump() writes it (members by name), and its times.
void appendEntry(std::string& out, std::string_view key, const json& status, bool pod,
                 const std::string* uid, timeline::EntryTimes& times) {
  timeline::detail::EntryParts p = timeline::detail::entryParts(status, pod);
  byName(p.durations, p.nDurations);
  out += "{\"durations\":{";
  for (std::size_t i = 0; i < p.nDurations; ++i) {
    if (i > 0) out += ',';
    appendKey(out, p.durations[i].first);
    appendJsonNumber(out, p.durations[i].second);
  }
  out += pod ? R"(},"kind":"pod","missing":[)" : R"(},"kind":"service","missing":[)";
  for (std::size_t i = 0; i < p.nMissing; ++i) {
    if (i > 0) out += ',';
    appendJsonString(out, p.missing[i]);
  }
  auto slash = key.find('/');
  out += "],\"name\":";
  appendJsonString(out, key.substr(slash == key.npos ? 0 : slash + 1));
  out += ",\"namespace\":";
  appendJsonString(out, key.substr(0, slash == key.npos ? 0 : slash));
  out += ",\"negative\":[";
  for (std::size_t i = 0; i < p.nNegative; ++i) {
    if (i > 0) out += ',';
    appendJsonString(out, p.negative[i]);
  }
  out += ']';
  if (p.podPhase != nullptr) {
    out += ",\"podPhase\":";
    appendJson(out, *p.podPhase);
  }
  if (p.reasons != nullptr) {
    out += ",\"reasons\":";
    appendJson(out, *p.reasons);
  }
  // What entryTimes() reads of the entry: its kind, times and reasons (entryParts reads only
  // the time fields EntryTimes names); then the times by name, for the text.
  times.key = std::string(key);
  times.pod = pod;
  for (std::size_t i = 0; i < p.nTimes; ++i)
    if (auto member = timeline::EntryTimes::memberNamed(p.times[i].first))
      times.*member = p.times[i].second;
  if (p.reasons != nullptr) times.readReasons(*p.reasons);
  byName(p.times, p.nTimes);
  out += ",\"times\":{";
  for (std::size_t i = 0; i < p.nTimes; ++i) {
    if (i > 0) out += ',';
    appendKey(out, p.times[i].first);
    out += '"';
    out += sdk::formatTime(p.times[i].second, sdk::TimePrecision::kAsGiven);
    out += '"';
  }
  out += '}';
  if (uid != nullptr) {
    out += ",\"uid\":";
    appendJsonString(out, *uid);
  }
  out += '}';
}

} // namespace

TimelineText timelineText(const timeline::TaskParts& t,
                          const std::vector<std::pair<std::string, std::string>>& entryUids,
                          std::string_view uid) {
  TimelineText text;
  // The entries of both groups by key; a service's replaces a pod's of the same key, as
  // fromParts() assigns them in that order.
  struct Source {
    std::string_view key;
    const json* status;
    bool pod;
  };
  std::vector<Source> sources;
  for (auto [group, pod] : {std::pair{t.podStatuses, true}, std::pair{t.serviceStatuses, false}})
    if (group != nullptr && group->is_object())
      for (auto it = group->begin(); it != group->end(); ++it)
        sources.push_back({it.key(), &*it, pod});
  std::stable_sort(sources.begin(), sources.end(),
                   [](const Source& a, const Source& b) { return a.key < b.key; });
  std::string& out = text.json;
  out.reserve(512 + 400 * sources.size());
  out += '{';
  if (t.creationTimestamp != nullptr) {
    out += "\"createTime\":";
    appendJson(out, *t.creationTimestamp);
    out += ',';
    if (t.creationTimestamp->is_string())
      text.createTime = t.creationTimestamp->get_ref<const std::string&>();
  }
  out += "\"entries\":{";
  text.entries.reserve(sources.size());
  bool first = true;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const Source& s = sources[i];
    if (i + 1 < sources.size() && sources[i + 1].key == s.key) continue; // the later one wins
    if (!first) out += ',';
    first = false;
    appendKey(out, s.key);
    const std::string* entryUid = nullptr;
    for (const auto& [key, u] : entryUids)
      if (key == s.key) entryUid = &u;
    appendEntry(out, s.key, *s.status, s.pod, entryUid, text.entries.emplace_back());
  }
  out += "},\"namespace\":";
  appendJsonString(out, t.namespaceName);
  if (t.phase != nullptr) {
    out += ",\"phase\":";
    appendJson(out, *t.phase);
    if (t.phase->is_string()) text.phase = t.phase->get_ref<const std::string&>();
  }
  out += ",\"task\":";
  appendJsonString(out, t.name);
  if (!uid.empty()) {
    out += ",\"uid\":";
    appendJsonString(out, uid);
  }
  out += '}';
  return text;
}

} // namespace kuscia_host::plugins
