#include "otel_export.h"

#include <kuscia_host/kube_text.hpp>
#include <kuscia_host/timeline.hpp>

#include <algorithm>

#include "kuscia.h"
#include "kuscia_model.h"

namespace kuscia_host::plugins::otel {

using nlohmann::json;

namespace {

constexpr uint64_t kTickMillis = 1000;
constexpr int kSweepTicks = 5;
constexpr std::size_t kSubscriptionCount = 3; // tasks, pods, events
// Events of a pod this instance never sees as a task's go after this long.
constexpr int64_t kOrphanNanos = int64_t{600} * 1000000000;

enum PodField : std::size_t { kPodTask, kPodConditions, kPodContainers, kPodFieldCount };
} // namespace

OtelExport::OtelExport(sdk::Host host, std::string_view domain, std::string_view configJson)
    : Plugin(host), config_(parseOtelConfig(configJson)), domain_(domain),
      exported_(
          host.counter("kuscia_otel_spans_exported_total", "Spans the OTLP receiver accepted", {})),
      failed_(host.counter("kuscia_otel_spans_failed_total",
                           "Spans not accepted: rejected (partial success), a status not retried, "
                           "or still failing after retryGiveUpSeconds",
                           {})),
      dropped_(host.counter("kuscia_otel_spans_dropped_total",
                            "Spans dropped, oldest first, because the queue was full", {})),
      queueDepth_(host.gauge("kuscia_otel_queue_depth", "Spans waiting to be sent", {})),
      inFlight_(host.gauge("kuscia_otel_tasks_in_flight",
                           "Tasks whose startup this instance follows (not sent yet)", {})) {
  exporter_ =
      std::make_unique<OtlpExporter>(config_, resourceOf(config_, domain_, host.deploymentMode()));
  taskSub_ = host.subscribe(
      taskSubscription(config_.taskNamespace, {std::begin(kTaskFields), std::end(kTaskFields)}));
  podSub_ = host.subscribe(domainSubscription(
      "pods", {kTaskIdPointer, "/status/conditions", "/status/containerStatuses"}));
  eventSub_ = host.subscribe(podEventSubscription());
}

OtelExport::~OtelExport() {
  exporter_->stop();
}

void OtelExport::onStart() {
  startedNanos_ = host().wallTimeNanos();
  exporter_->start();
  timer_ = host().startTimer(kTickMillis, kTickMillis);
  host().info("sending task startups as traces to " + config_.endpoint.url + " (" +
              (config_.json ? "json" : "protobuf") + (config_.gzip ? ", gzip" : "") + ")");
}

void OtelExport::onStop() {
  exporter_->stop();
  pollExporter();
}

void OtelExport::onEvent(const sdk::Event& e) {
  if (e.type == KH_EVENT_SYNCED) {
    synced_.insert(e.subscriptionId);
    if (synced_.size() < kSubscriptionCount) return;
    std::set<std::string> names = std::move(unsynced_);
    unsynced_.clear();
    for (const auto& name : names)
      evaluateCached(name);
    return;
  }
  if (e.subscriptionId == taskSub_) return onTask(e);
  if (e.subscriptionId == podSub_) return onPod(e);
  if (e.subscriptionId == eventSub_) return onPodEvent(e);
}

void OtelExport::onTimer(uint64_t timerId, uint64_t /*userTag*/) {
  if (timerId != timer_) return;
  pollExporter();
  static_assert(kSweepTicks > 0);
  if (++ticks_ % kSweepTicks == 0) sweep();
}

void OtelExport::onTask(const sdk::Event& e) {
  std::string name(nameOf(e.key));
  if (e.type == KH_EVENT_DELETED) {
    unsynced_.erase(name);
    return forgetTask(name);
  }
  if (synced_.size() < kSubscriptionCount) {
    unsynced_.insert(name);
    return;
  }
  evaluate(name, e.uid, parseFields(e.fieldsJson, kTaskFieldCount));
}

void OtelExport::onPod(const sdk::Event& e) {
  std::string key(e.key);
  if (e.type == KH_EVENT_DELETED) {
    auto it = pods_.find(key);
    if (it == pods_.end()) return;
    if (tasks_.count(it->second.task) > 0) {
      it->second.gone = true; // its facts are still owed to its task's spans
      it->second.seenNanos = host().wallTimeNanos();
    } else {
      pods_.erase(it);
    }
    return;
  }
  json f = parseFields(e.fieldsJson, kPodFieldCount);
  std::string task = fieldString(f, kPodTask);
  if (task.empty()) {
    pods_.erase(key);
    return;
  }
  if (recent_.count(task) > 0) return; // its spans are out
  const int64_t now = host().wallTimeNanos();
  PodState& p = pods_[key];
  if (p.uid != e.uid) {
    // A new incarnation, or Events of another one came first; Events naming no incarnation are
    // kept.
    if (!p.task.empty() || !p.uid.empty()) p = PodState{};
    p.uid = std::string(e.uid);
  }
  p.task = task;
  p.gone = false;
  p.seenNanos = now;
  if (const json* ready = trueCondition(f[kPodConditions], "Ready"))
    if (auto t = sdk::parseTime(ready->value("lastTransitionTime", "")))
      p.firstReady = std::min(p.firstReady.value_or(*t), *t);
  if (!p.containersStart) p.containersStart = sdk::timeline::containersStartTime(f[kPodContainers]);
  p.facts.addContainersWaiting(f[kPodContainers], now);
}

void OtelExport::onPodEvent(const sdk::Event& e) {
  auto ev = podEventOf(e);
  if (!ev) return;
  const std::string& key = ev->key;
  const std::string& uid = ev->uid;
  auto it = pods_.find(key);
  if (it != pods_.end() && recent_.count(it->second.task) > 0) return;
  PodState& p = pods_[key];
  if (!uid.empty() && p.uid != uid) {
    if (!p.task.empty()) return; // another incarnation than the pod's
    p = PodState{};
    p.uid = uid;
  }
  p.seenNanos = host().wallTimeNanos();
  p.facts.addEvent(ev->reason, ev->message, ev->at);
}

json OtelExport::documentOf(const TaskFacts& t, const json& fields) const {
  json status = json::object();
  if (!t.phase.empty()) status["phase"] = t.phase;
  if (fields[kTaskPodStatuses].is_object()) status["podStatuses"] = fields[kTaskPodStatuses];
  if (fields[kTaskServiceStatuses].is_object())
    status["serviceStatuses"] = fields[kTaskServiceStatuses];
  json meta = {{"name", t.name}, {"namespace", t.namespaceName}};
  if (fields[kTaskCreate].is_string()) meta["creationTimestamp"] = fields[kTaskCreate];
  json doc = sdk::timeline::fromTask({{"metadata", std::move(meta)}, {"status", status}});
  if (!status.contains("podStatuses")) return doc;
  const json& podStatuses = status["podStatuses"];
  for (const auto& [key, p] : pods_) {
    if (p.task != t.name) continue;
    auto it = podStatuses.find(key);
    if (it == podStatuses.end() || !it->is_object()) continue; // the status is the source
    json merged = *it;
    using sdk::formatTime;
    using sdk::TimePrecision;
    // This domain's own knowledge: the first Ready of the incarnation (when the status's
    // readyTime is of the same incarnation), every container running, the pulls and reasons.
    auto create = sdk::parseTime(merged.value("createTime", ""));
    auto ready = sdk::parseTime(merged.value("readyTime", ""));
    if (p.firstReady && ready && create && *p.firstReady >= *create && *p.firstReady <= *ready)
      merged["firstReadyTime"] = formatTime(*p.firstReady, TimePrecision::kAsGiven);
    if (p.containersStart)
      merged["containersStartTime"] = formatTime(*p.containersStart, TimePrecision::kAsGiven);
    p.facts.fill(merged);
    if (merged.contains("reasons"))
      for (const auto& [phase, r] : p.facts.reasons())
        if (merged["reasons"].contains(phase)) merged["reasons"][phase]["since"] = r.at;
    json entry = sdk::timeline::entry(key, merged, true);
    if (!p.uid.empty()) entry["uid"] = p.uid;
    doc["entries"][key] = std::move(entry);
  }
  return doc;
}

std::optional<json> OtelExport::document(const std::string& task) const {
  std::optional<json> doc;
  host().cacheGet(taskSub_, config_.taskNamespace + "/" + task, [&](const sdk::Object& o) {
    json fields = parseFields(o.fieldsJson, kTaskFieldCount);
    TaskFacts t = taskFactsOf(task, config_.taskNamespace, fields);
    t.uid = std::string(o.uid);
    doc = documentOf(t, fields);
  });
  return doc;
}

void OtelExport::evaluate(const std::string& name, std::string_view uid, const json& fields) {
  if (recent_.count(name) > 0) return; // sent
  TaskFacts t = taskFactsOf(name, config_.taskNamespace, fields);
  t.uid = std::string(uid);
  bool mine = t.initiator == domain_ ||
              std::find(t.parties.begin(), t.parties.end(), domain_) != t.parties.end();
  if (!mine) return;
  const int64_t now = host().wallTimeNanos();
  Plan plan =
      planSpans(documentOf(t, fields), t, domain_, now,
                config_.stuckAfterSeconds * int64_t{1000000000}, host().deploymentMode() == "p2p");
  auto held = tasks_.find(name);
  if (plan.finished && held == tasks_.end() && plan.finishedAt &&
      now - *plan.finishedAt > config_.resendWindowSeconds * int64_t{1000000000}) {
    forgetTask(name); // history: it started long before this host saw it
    return;
  }
  bool stuck = std::any_of(plan.spans.begin(), plan.spans.end(),
                           [](const SpanData& s) { return s.pending; });
  if (!plan.finished && !stuck) {
    if (held == tasks_.end()) tasks_.emplace(name, TaskState{});
    return;
  }
  TaskState& state = held != tasks_.end() ? held->second : tasks_[name];
  std::vector<SpanData> out;
  for (auto& s : plan.spans) {
    std::string id = hex(s.spanId);
    auto sent = state.sent.find(id);
    // Once; a pending phase again when it has ended.
    if (sent != state.sent.end() && !(sent->second && !s.pending)) continue;
    state.sent[id] = s.pending;
    out.push_back(std::move(s));
  }
  exporter_->enqueue(std::move(out));
  if (plan.finished) {
    forgetTask(name);
    recent_[name] = now;
  }
}

void OtelExport::evaluateCached(const std::string& name) {
  bool found =
      host().cacheGet(taskSub_, config_.taskNamespace + "/" + name, [&](const sdk::Object& o) {
        evaluate(name, o.uid, parseFields(o.fieldsJson, kTaskFieldCount));
      });
  if (!found) forgetTask(name);
}

void OtelExport::forgetTask(const std::string& name) {
  tasks_.erase(name);
  recent_.erase(name);
  for (auto it = pods_.begin(); it != pods_.end();)
    it = it->second.task == name ? pods_.erase(it) : std::next(it);
}

void OtelExport::sweep() {
  const int64_t now = host().wallTimeNanos();
  std::vector<std::string> names;
  names.reserve(tasks_.size());
  for (const auto& [name, state] : tasks_)
    names.push_back(name);
  for (const auto& name : names)
    evaluateCached(name);
  const int64_t window = config_.resendWindowSeconds * int64_t{1000000000};
  for (auto it = recent_.begin(); it != recent_.end();)
    it = now - it->second > window ? recent_.erase(it) : std::next(it);
  for (auto it = pods_.begin(); it != pods_.end();) {
    const PodState& p = it->second;
    bool orphan = p.task.empty() && now - p.seenNanos > kOrphanNanos;
    bool done =
        !p.task.empty() && tasks_.count(p.task) == 0 && (p.gone || recent_.count(p.task) > 0);
    it = orphan || done ? pods_.erase(it) : std::next(it);
  }
}

void OtelExport::pollExporter() {
  OtlpExporter::Counters c = exporter_->snapshot();
  auto delta = [](uint64_t now, uint64_t before) { return static_cast<double>(now - before); };
  if (c.exported > reported_.exported) exported_.add(delta(c.exported, reported_.exported));
  if (c.failed > reported_.failed) failed_.add(delta(c.failed, reported_.failed));
  if (c.dropped > reported_.dropped) dropped_.add(delta(c.dropped, reported_.dropped));
  queueDepth_.set(static_cast<double>(c.queueDepth));
  inFlight_.set(static_cast<double>(tasks_.size()));
  if (c.failing && c.episode != loggedEpisode_) {
    loggedEpisode_ = c.episode;
    loggedFailing_ = true;
    host().warn("sending spans to " + config_.endpoint.url + " fails: " + c.lastError +
                " (retrying with backoff; further failures until it works again are only "
                "counted in kuscia_otel_spans_failed_total)");
  } else if (!c.failing && loggedFailing_) {
    loggedFailing_ = false;
    host().info("sending spans to " + config_.endpoint.url + " works again (" +
                std::to_string(c.failed) + " failed and " + std::to_string(c.dropped) +
                " dropped since start)");
  }
  if (c.partials > loggedPartials_) {
    if (loggedPartials_ == 0)
      host().warn("the OTLP receiver accepted only part of a request: " + c.lastPartial +
                  " (further partial successes are only counted)");
    loggedPartials_ = c.partials;
  }
  reported_ = std::move(c);
}

} // namespace kuscia_host::plugins::otel
