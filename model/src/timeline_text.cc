#include <kuscia_model/timeline_text.h>

#include <kuscia_host/kube_text.hpp>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <map>

#include <kuscia_model/json_text.h>

namespace kuscia_host::model {

using nlohmann::json;

namespace {

namespace timeline = model::timeline;

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

// One of the SDK's names of times, durations and phases: plain words, written as they are.
void appendName(std::string& out, const char* name) {
  out += '"';
  out += name;
  out += '"';
}

// A pod's reasons as PodFacts::fill() puts them in its entry, each with the time it was seen
// ("since"), as dump() writes them; and as entryTimes() reads them.
void appendReasons(std::string& out,
                   const std::map<std::string, model::timeline::PodFacts::Reason>& reasons,
                   timeline::EntryTimes& times) {
  out += '{';
  bool first = true;
  for (const auto& [phase, r] : reasons) {
    if (!first) out += ',';
    first = false;
    appendKey(out, phase);
    out += '{';
    if (!r.message.empty()) {
      out += "\"message\":";
      appendJsonString(out, r.message);
      out += ',';
    }
    out += "\"reason\":";
    appendJsonString(out, r.reason);
    out += ",\"since\":";
    char digits[24];
    auto [end, ec] = std::to_chars(digits, digits + sizeof digits, r.at);
    out.append(digits, end);
    out += '}';
    times.reasons[phase] = {r.reason, r.message};
  }
  out += '}';
}

// One entry as entry() builds it and dump() writes it (members by name), and its times, from its
// parts: `podPhase(out)` appends the podPhase's value (false: it has none), `reasons(out, times)`
// the reasons' value and fills the times' (false: it has none).
// `evidence` is the entry's (entry(): an object, or null when it has none), read into the times
// as entryTimes() reads it.
template <class PodPhase, class Reasons>
void appendEntry(std::string& out, std::string_view key, timeline::detail::EntryParts p, bool pod,
                 const std::string* uid, timeline::EntryTimes& times, const PodPhase& podPhase,
                 const Reasons& reasons, const json& evidence = json()) {
  byName(p.durations, p.nDurations);
  out += "{\"durations\":{";
  for (std::size_t i = 0; i < p.nDurations; ++i) {
    if (i > 0) out += ',';
    appendName(out, p.durations[i].first);
    out += ':';
    appendJsonNumber(out, p.durations[i].second);
  }
  out += '}';
  if (!evidence.is_null()) {
    out += ",\"evidence\":";
    appendJson(out, evidence);
    times.readEvidence(evidence);
  }
  out += pod ? R"(,"kind":"pod","missing":[)" : R"(,"kind":"service","missing":[)";
  for (std::size_t i = 0; i < p.nMissing; ++i) {
    if (i > 0) out += ',';
    appendName(out, p.missing[i]);
  }
  auto slash = key.find('/');
  out += "],\"name\":";
  appendJsonString(out, key.substr(slash == key.npos ? 0 : slash + 1));
  out += ",\"namespace\":";
  appendJsonString(out, key.substr(0, slash == key.npos ? 0 : slash));
  out += ",\"negative\":[";
  for (std::size_t i = 0; i < p.nNegative; ++i) {
    if (i > 0) out += ',';
    appendName(out, p.negative[i]);
  }
  out += ']';
  const std::size_t before = out.size();
  out += ",\"podPhase\":";
  if (!podPhase(out)) out.resize(before);
  // What entryTimes() reads of the entry: its kind, times and reasons (entryParts reads only
  // the time fields EntryTimes names); then the times by name, for the text.
  times.key = std::string(key);
  times.pod = pod;
  const std::size_t beforeReasons = out.size();
  out += ",\"reasons\":";
  if (!reasons(out, times)) out.resize(beforeReasons);
  for (std::size_t i = 0; i < p.nTimes; ++i)
    if (auto member = timeline::EntryTimes::memberNamed(p.times[i].first))
      times.*member = p.times[i].second;
  byName(p.times, p.nTimes);
  out += ",\"times\":{";
  for (std::size_t i = 0; i < p.nTimes; ++i) {
    if (i > 0) out += ',';
    appendName(out, p.times[i].first);
    out += ':';
    char text[48];
    out += '"';
    out.append(text, sdk::formatTimeTo(text, p.times[i].second, sdk::TimePrecision::kAsGiven));
    out += '"';
  }
  out += '}';
  if (uid != nullptr) {
    out += ",\"uid\":";
    appendJsonString(out, *uid);
  }
  out += '}';
}

// The document around its entries, members by name: `completionTime` and `evidence` are the
// document's (null: none; timeline.h), `create(out)` and `phase(out)` append their
// values (false: the document has none), `entry(out, source, entryUid, times)` each of `sources`
// (entries by key; the later of two of one key wins, as fromParts() assigns a service's over a
// pod's), with the UID `entryUids` gives its key (nullptr: none), whichever kind wins.
// `partners`: the document's "partnerReservations" (null or empty: none), text.partners their
// entries. text.phase and text.createTime are the caller's.
template <class Source, class Create, class Phase, class Entry>
void appendDocument(TimelineText& text, std::string_view name, std::string_view namespaceName,
                    std::vector<Source>& sources, const Create& create, const Phase& phase,
                    const Entry& entry,
                    const std::vector<std::pair<std::string, std::string>>& entryUids,
                    std::string_view uid, const json& completionTime, const json& evidence,
                    std::string_view resourceCreated, const json* partners,
                    const json* routeOutage) {
  std::stable_sort(sources.begin(), sources.end(),
                   [](const Source& a, const Source& b) { return a.key < b.key; });
  std::string& out = text.json;
  out.reserve(512 + 400 * sources.size());
  out += '{';
  if (completionTime.is_string()) {
    out += "\"completionTime\":";
    appendJson(out, completionTime);
    out += ',';
  }
  const std::size_t beforeCreate = out.size();
  out += "\"createTime\":";
  if (create(out))
    out += ',';
  else
    out.resize(beforeCreate);
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
    entry(out, s, entryUid, text.entries.emplace_back());
  }
  out += '}';
  if (!evidence.is_null()) {
    out += ",\"evidence\":";
    appendJson(out, evidence);
  }
  out += ",\"namespace\":";
  appendJsonString(out, namespaceName);
  if (partners != nullptr && partners->is_object() && !partners->empty()) {
    out += ",\"partnerReservations\":";
    appendJson(out, *partners);
    text.partners = timeline::partnerEntriesOf(*partners, [&sources](std::string_view party) {
      return std::any_of(sources.begin(), sources.end(),
                         [party](const Source& s) { return timeline::keyOfParty(s.key, party); });
    });
  }
  const std::size_t before = out.size();
  out += ",\"phase\":";
  if (!phase(out)) out.resize(before);
  if (!resourceCreated.empty()) {
    out += ",\"resourceCreatedTime\":";
    appendJsonString(out, resourceCreated);
  }
  if (routeOutage != nullptr && routeOutage->is_object()) {
    out += ",\"routeOutage\":";
    appendJson(out, *routeOutage);
  }
  out += ",\"task\":";
  appendJsonString(out, name);
  if (!uid.empty()) {
    out += ",\"uid\":";
    appendJsonString(out, uid);
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
  auto appendValue = [](std::string& out, const json* value) {
    if (value == nullptr) return false;
    appendJson(out, *value);
    return true;
  };
  appendDocument(
      text, t.name, t.namespaceName, sources,
      [&](std::string& out) { return appendValue(out, t.creationTimestamp); },
      [&](std::string& out) { return appendValue(out, t.phase); },
      [&](std::string& out, const Source& s, const std::string* entryUid,
          timeline::EntryTimes& times) {
        const timeline::detail::EntryParts p = timeline::detail::entryParts(*s.status, s.pod);
        appendEntry(
            out, s.key, p, s.pod, entryUid, times,
            [&p, &appendValue](std::string& o) { return appendValue(o, p.podPhase); },
            [&p, &appendValue](std::string& o, timeline::EntryTimes& tm) {
              if (!appendValue(o, p.reasons)) return false;
              tm.readReasons(*p.reasons);
              return true;
            },
            timeline::detail::evidenceOf(timeline::kEvidenceFields, p.evidence));
      },
      entryUids, uid,
      t.completionTime != nullptr && t.completionTime->is_string() ? *t.completionTime : json(),
      timeline::taskEvidence(t), timeline::resourceCreatedTime(t.conditions), t.partnerReservations,
      t.routeOutage);
  if (t.creationTimestamp != nullptr && t.creationTimestamp->is_string())
    text.createTime = t.creationTimestamp->get_ref<const std::string&>();
  if (t.phase != nullptr && t.phase->is_string())
    text.phase = t.phase->get_ref<const std::string&>();
  text.end = timeline::TaskEnd::of(
      timeline::partText(t.phase), timeline::partText(t.completionTime),
      timeline::partText(t.reason), timeline::partText(t.message),
      timeline::resourceCreatedTime(t.conditions), timeline::localParty(t.allocatedPorts));
  if (t.routeOutage != nullptr && t.routeOutage->is_object()) text.end.readOutage(*t.routeOutage);
  return text;
}

TimelineText timelineTextOf(const TaskTexts& t, std::vector<EntryText>& entries,
                            const std::vector<std::pair<std::string, std::string>>& entryUids,
                            std::string_view uid, const json& partners) {
  TimelineText text;
  appendDocument(
      text, t.name, t.namespaceName, entries,
      [&t](std::string& out) {
        if (!t.createTime) return false;
        appendJsonString(out, *t.createTime);
        return true;
      },
      [&t](std::string& out) {
        if (!t.phase) return false;
        appendJsonString(out, *t.phase);
        return true;
      },
      [](std::string& out, const EntryText& e, const std::string* entryUid,
         timeline::EntryTimes& times) {
        const auto fields = timeline::EntryTimes::fields();
        const timeline::detail::EntryParts p =
            timeline::detail::entryTimeParts(e.pod, [&](const char* field) {
              for (std::size_t i = 0; i < fields.size(); ++i)
                if (fields[i].first == field) return e.times[i];
              return std::optional<int64_t>();
            });
        appendEntry(
            out, e.key, p, e.pod, entryUid, times,
            [&e](std::string& o) {
              if (!e.pod || e.podPhase.empty()) return false;
              o += e.podPhase;
              return true;
            },
            [&e](std::string& o, timeline::EntryTimes& tm) {
              if (e.reasons == nullptr || e.reasons->empty()) return false;
              appendReasons(o, *e.reasons, tm);
              return true;
            });
      },
      entryUids, uid, t.completionTime ? json(*t.completionTime) : json(),
      timeline::taskEvidence(t.reason.value_or(""), t.message.value_or(""), t.localParty),
      t.resourceCreatedTime.value_or(""), &partners, t.routeOutage);
  if (t.createTime) text.createTime = *t.createTime;
  if (t.phase) text.phase = *t.phase;
  text.end = timeline::TaskEnd::of(t.phase.value_or(""), t.completionTime.value_or(""),
                                   t.reason.value_or(""), t.message.value_or(""),
                                   t.resourceCreatedTime.value_or(""), t.localParty);
  if (t.routeOutage != nullptr && t.routeOutage->is_object()) text.end.readOutage(*t.routeOutage);
  return text;
}

} // namespace kuscia_host::model
