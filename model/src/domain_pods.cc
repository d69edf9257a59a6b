#include <kuscia_model/domain_pods.h>
#include <kuscia_model/kept_facts.h>

#include <kuscia_host/kube_text.hpp>
#include <kuscia_model/timeline.h>
#include <kuscia_model/timeline_summary.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include <kuscia_model/kuscia.h>
#include <kuscia_model/kuscia_model.h>
#include <kuscia_model/pod_fields.h>
#include <kuscia_model/status_entries.h>

namespace kuscia_host::model {

using nlohmann::json;

std::vector<std::string> DomainPods::podFields() {
  return podFactPointers();
}

std::string DomainPods::onPod(const sdk::Event& e, int64_t nowNanos, const Wanted& wanted,
                              const Wanted& held) {
  std::string key(e.key);
  if (e.type == KH_EVENT_DELETED) {
    auto it = pods_.find(key);
    if (it == pods_.end()) return {};
    if (held(it->second.task)) {
      it->second.gone = true; // its facts are still owed to its task's document
      it->second.seenNanos = nowNanos;
    } else {
      pods_.erase(it);
    }
    return {};
  }
  PodFields f = readPodFacts(e.fieldsJson);
  std::string& task = f.task;
  if (task.empty()) {
    pods_.erase(key);
    return {};
  }
  if (!wanted(task)) return {};
  PodState& p = pods_[key];
  if (p.uid != e.uid) {
    // A new incarnation, or Events of another one came first; Events naming no incarnation are
    // kept.
    if (!p.task.empty() || !p.uid.empty()) p = PodState{};
    p.uid = std::string(e.uid);
  }
  p.task = task;
  p.gone = false;
  p.seenNanos = nowNanos;
  if (f.ready.isTrue && f.ready.lastTransitionTime.kind == TimeText::kString)
    if (auto t = sdk::parseTime(f.ready.lastTransitionTime.text))
      p.firstReady = std::min(p.firstReady.value_or(*t), *t);
  if (!p.containersStart) p.containersStart = f.containersStart;
  for (const auto& [reason, message] : f.waitingReasons)
    p.facts.addContainerWaiting(reason, message, nowNanos);
  return task;
}

std::string DomainPods::onPodEvent(const sdk::Event& e, int64_t nowNanos, const Wanted& wanted) {
  auto ev = podEventOf(e);
  if (!ev) return {};
  const std::string& uid = ev->uid;
  auto it = pods_.find(ev->key);
  if (it != pods_.end() && !it->second.task.empty() && !wanted(it->second.task)) return {};
  PodState& p = pods_[ev->key];
  if (!uid.empty() && p.uid != uid) {
    if (!p.task.empty()) return p.task; // another incarnation than the pod's
    p = PodState{};
    p.uid = uid;
  }
  p.seenNanos = nowNanos;
  p.facts.addEvent(ev->reason, ev->message, ev->at);
  return p.task;
}

const DomainPods::PodState* DomainPods::heldPod(const std::string& task,
                                                std::string_view key) const {
  auto held = pods_.find(key);
  return held == pods_.end() || held->second.task != task ? nullptr : &held->second;
}

std::optional<int64_t> DomainPods::firstReadyOf(const PodState& p, std::optional<int64_t> create,
                                                std::optional<int64_t> ready) {
  // The first Ready of the incarnation, when the status's readyTime is of the same incarnation.
  if (p.firstReady && ready && create && *p.firstReady >= *create && *p.firstReady <= *ready)
    return p.firstReady;
  return std::nullopt;
}

json DomainPods::withFacts(const std::string& task, json pods,
                           std::vector<std::pair<std::string, std::string>>& uids,
                           std::string_view keptFacts) const {
  // The status's pod entries, this domain's knowledge merged into those of the pods it holds
  // facts of, before the document is built: each entry is built once.
  // The task's pods this domain holds facts of, found from the status's entries (the status
  // is the source): a look-up each, not a walk over every pod held. A pod no longer held takes
  // what was kept of it on the task.
  std::optional<json> kept; // parsed at the first pod that needs it
  for (auto it = pods.begin(); it != pods.end(); ++it) {
    const PodState* held = heldPod(task, it.key());
    if (!it->is_object()) continue;
    if (held == nullptr) {
      if (keptFacts.empty()) continue;
      if (!kept) kept = keptEntries(keptFacts);
      if (const json* k = keptFor(*kept, it.key(), *it)) addKeptFacts(*it, *k);
      continue;
    }
    const PodState& p = *held;
    json& merged = *it;
    using sdk::formatTime;
    using sdk::TimePrecision;
    // This domain's own knowledge: the first Ready, every container running, the pulls and
    // reasons.
    if (auto first = firstReadyOf(p, sdk::parseTime(merged.value("createTime", "")),
                                  sdk::parseTime(merged.value("readyTime", ""))))
      merged["firstReadyTime"] = formatTime(*first, TimePrecision::kAsGiven);
    if (p.containersStart)
      merged["containersStartTime"] = formatTime(*p.containersStart, TimePrecision::kAsGiven);
    p.facts.fill(merged);
    if (merged.contains("reasons"))
      for (const auto& [phase, r] : p.facts.reasons())
        if (merged["reasons"].contains(phase)) merged["reasons"][phase]["since"] = r.at;
    if (!p.uid.empty()) uids.emplace_back(it.key(), p.uid);
  }
  // Every pod of a party that reserves: its TaskResource's times.
  for (auto it = pods.begin(); it != pods.end(); ++it) {
    const control::ReservationTimes* r =
        it->is_object() ? reservations_.of(task, namespaceOf(it.key())) : nullptr;
    for (std::size_t i = 0; r != nullptr && i < r->size(); ++i)
      if ((*r)[i])
        (*it)[control::kReservationTimes[i]] =
            sdk::formatTime(*(*r)[i], sdk::TimePrecision::kAsGiven);
  }
  return pods;
}

std::string DomainPods::onTaskResource(const sdk::Event& e) {
  auto changed = reservations_.onEvent(e);
  return changed ? changed->first : std::string();
}

std::optional<TimelineText> DomainPods::documentTextOf(const TaskTexts& task,
                                                       const EntryTextList& pods,
                                                       const EntryTextList& services,
                                                       std::string_view uid,
                                                       std::string_view keptFacts) const {
  // The time fields' places in EntryText::times (EntryTimes::fields() order).
  enum : std::size_t {
    kCreate,
    kSchedule,
    kStart,
    kReady,
    kFirstReady,
    kPullStart,
    kPullEnd,
    kContainersStart,
    kReserving // then reservedTime, schedulableTime
  };
  static_assert(
      model::timeline::EntryTimes::fields()[kFirstReady].first == "firstReadyTime" &&
      model::timeline::EntryTimes::fields()[kPullStart].first == "imagePullStartTime" &&
      model::timeline::EntryTimes::fields()[kContainersStart].first == "containersStartTime" &&
      model::timeline::EntryTimes::fields()[kReserving].first == control::kReservationTimes[0] &&
      model::timeline::EntryTimes::fields()[kReserving + 2].first == control::kReservationTimes[2]);
  const std::string name(task.name);
  std::vector<std::pair<std::string, std::string>> uids; // entry key, pod UID (as withFacts())
  std::vector<EntryText> entries;
  entries.reserve(pods.size() + services.size());
  std::optional<json> kept; // parsed at the first pod no longer held
  for (auto [group, pod] : {std::pair{&pods, true}, std::pair{&services, false}})
    for (const auto& [key, text] : *group) {
      auto fields = entryFieldTexts(text);
      if (!fields) return std::nullopt;
      EntryText& e = entries.emplace_back();
      e.key = key;
      e.pod = pod;
      e.times = fields->times;
      e.podPhase = fields->podPhase;
      if (!pod) continue;
      if (const control::ReservationTimes* r = reservations_.of(name, namespaceOf(key)))
        for (std::size_t i = 0; i < r->size(); ++i)
          if ((*r)[i]) e.times[kReserving + i] = (*r)[i];
      // This domain's own knowledge, where withFacts() merges it.
      const PodState* held = heldPod(name, key);
      if (held == nullptr) {
        if (keptFacts.empty()) continue;
        if (!kept) kept = keptEntries(keptFacts);
        if (kept->contains(key)) return std::nullopt; // kept facts: documentText() merges them
        continue;
      }
      const PodState& p = *held;
      if (auto first = firstReadyOf(p, e.times[kCreate], e.times[kReady]))
        e.times[kFirstReady] = first;
      if (p.containersStart) e.times[kContainersStart] = p.containersStart;
      if (auto t = p.facts.imagePullStart()) e.times[kPullStart] = t;
      if (auto t = p.facts.imagePullEnd()) e.times[kPullEnd] = t;
      e.reasons = &p.facts.reasons();
      if (!p.uid.empty()) uids.emplace_back(key, p.uid);
    }
  const json partners = partnersOf(name, keptFacts, [&entries](std::string_view party) {
    return std::any_of(entries.begin(), entries.end(),
                       [party](const EntryText& e) { return timeline::keyOfParty(e.key, party); });
  });
  const json outage =
      task.message
          ? routes_.outageFor(*task.message, sdk::parseTime(task.completionTime.value_or("")))
          : json();
  TaskTexts withOutage = task;
  withOutage.routeOutage = &outage;
  return timelineTextOf(withOutage, entries, uids, uid, partners);
}

json DomainPods::partnersOf(const std::string& task, std::string_view keptFacts,
                            const std::function<bool(std::string_view party)>& holds) const {
  // Most tasks keep no partner: their annotation is not parsed for none.
  const bool keptAny = keptFacts.find("\"partners\"") != std::string_view::npos;
  return partnerReservations(keptAny ? keptFacts : std::string_view(),
                             reservations_.partners(task, holds), holds);
}

// The parts of the task's document: `pods`, when the status has pod entries, holds them with
// this domain's facts (withFacts).
template <typename Build>
auto DomainPods::build(const TaskStatusView& t, const Build& build) const {
  const json* given = t.podStatusesToTake != nullptr ? t.podStatusesToTake : t.podStatuses;
  const bool hasPods = given != nullptr && given->is_object();
  const json taskPhase = t.phase.empty() ? json() : json(t.phase);
  const bool created = t.creationTimestamp != nullptr && t.creationTimestamp->is_string();
  json pods;
  std::vector<std::pair<std::string, std::string>> uids; // entry key, pod UID
  if (hasPods && t.podStatusesToTake != nullptr)
    pods = withFacts(t.name, std::move(*t.podStatusesToTake), uids, t.keptFacts);
  else if (hasPods)
    pods = withFacts(t.name, *t.podStatuses, uids, t.keptFacts);
  const json* entries = hasPods ? &pods : given;
  const json partners = partnersOf(t.name, t.keptFacts, [&](std::string_view party) {
    return (entries != nullptr && timeline::holdsParty(*entries, party)) ||
           (t.serviceStatuses != nullptr && timeline::holdsParty(*t.serviceStatuses, party));
  });
  const json outage = routes_.outageFor(timeline::partText(t.message),
                                        sdk::parseTime(timeline::partText(t.completionTime)));
  return build(model::timeline::TaskParts{t.name, t.namespaceName,
                                          t.phase.empty() ? nullptr : &taskPhase,
                                          created ? t.creationTimestamp : nullptr, entries,
                                          t.serviceStatuses, t.completionTime, t.reason, t.message,
                                          t.conditions, &partners, t.allocatedPorts, &outage},
               uids);
}

json DomainPods::document(const TaskStatusView& t) const {
  return build(t, [](const model::timeline::TaskParts& parts, auto& uids) {
    json doc = model::timeline::fromParts(parts);
    for (auto& [key, uid] : uids)
      doc["entries"][key]["uid"] = std::move(uid);
    return doc;
  });
}

TimelineText DomainPods::documentText(const TaskStatusView& t, std::string_view uid) const {
  return build(t, [uid](const model::timeline::TaskParts& parts, const auto& uids) {
    return timelineText(parts, uids, uid);
  });
}

void DomainPods::forgetTask(const std::string& task) {
  for (auto it = pods_.begin(); it != pods_.end();)
    it = it->second.task == task ? pods_.erase(it) : std::next(it);
  reservations_.forget(task);
}

void DomainPods::sweep(int64_t nowNanos, int64_t orphanNanos, const Wanted& held,
                       const Wanted& wanted) {
  for (auto it = pods_.begin(); it != pods_.end();) {
    const PodState& p = it->second;
    bool orphan = p.task.empty() && nowNanos - p.seenNanos > orphanNanos;
    bool done = !p.task.empty() && !held(p.task) && (p.gone || !wanted(p.task));
    it = orphan || done ? pods_.erase(it) : std::next(it);
  }
  // A reservation goes with the last pod of its task held here.
  std::set<std::string_view> tasks;
  for (const auto& [key, p] : pods_)
    tasks.insert(p.task);
  reservations_.forgetUnless(
      [&](const std::string& task) { return tasks.count(task) > 0 || held(task); });
}

} // namespace kuscia_host::model
