#include "otel_export.h"

#include <kuscia_host/kube_text.hpp>
#include <kuscia_model/control_plane.h>
#include <kuscia_model/job_view.h>
#include <kuscia_model/timeline.h>
#include <kuscia_model/timeline_summary.h>

#include <algorithm>

#include <kuscia_model/kuscia.h>
#include <kuscia_model/kuscia_model.h>

namespace kuscia_host::plugins::otel {

using nlohmann::json;

namespace {

constexpr uint64_t kTickMillis = 1000;
constexpr int kSweepTicks = 5;
// tasks, pods, events, task resources (every namespace), routes, jobs
constexpr std::size_t kSubscriptionCount = 6;
// Events of a pod this instance never sees as a task's go after this long.
constexpr int64_t kOrphanNanos = int64_t{600} * 1000000000;

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
  taskSub_ = host.subscribe(model::taskSubscription(
      config_.taskNamespace, {std::begin(kTaskFields), std::end(kTaskFields)}));
  podSub_ = host.subscribe(model::domainSubscription("pods", model::DomainPods::podFields()));
  // Every party's reservation, and a p2p initiator's stubs of its partners.
  taskResourceSub_ = host.subscribe(model::control::allTaskResourceSubscription());
  routeSub_ = host.subscribe(model::route::routeSubscription());
  eventSub_ = host.subscribe(model::podEventSubscription());
  jobSub_ = host.subscribe(model::job::jobSubscription(config_.taskNamespace));
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
  if (e.subscriptionId == jobSub_) return onJob(e);
  if (e.subscriptionId == routeSub_) return pods_.onRoute(e);
  auto wanted = [this](const std::string& task) { return this->wanted(task); };
  if (e.subscriptionId == podSub_)
    pods_.onPod(e, host().wallTimeNanos(), wanted,
                [this](const std::string& task) { return held(task); });
  else if (e.subscriptionId == eventSub_)
    pods_.onPodEvent(e, host().wallTimeNanos(), wanted);
  else if (e.subscriptionId == taskResourceSub_)
    pods_.onTaskResource(e);
}

void OtelExport::onTimer(uint64_t timerId, uint64_t /*userTag*/) {
  if (timerId != timer_) return;
  pollExporter();
  static_assert(kSweepTicks > 0);
  if (++ticks_ % kSweepTicks == 0) sweep();
}

// A job is read from the cache when a task's root is due; a change to it (the approval's
// observation arriving) may let a root that waits for it go out.
void OtelExport::onJob(const sdk::Event& e) {
  if (e.type == KH_EVENT_DELETED || synced_.size() < kSubscriptionCount) return;
  for (const auto& t : model::job::jobOfFields(e.fieldsJson).job.tasks)
    if (!t.name.empty() && tasks_.count(t.name) > 0) evaluateCached(t.name);
}

void OtelExport::onTask(const sdk::Event& e) {
  std::string name(model::nameOf(e.key));
  if (e.type == KH_EVENT_DELETED) {
    unsynced_.erase(name);
    return forgetTask(name);
  }
  if (synced_.size() < kSubscriptionCount) {
    unsynced_.insert(name);
    return;
  }
  evaluate(name, e.uid, e.resourceVersion, model::parseFields(e.fieldsJson, kTaskFieldCount));
}

json OtelExport::documentOf(const TaskFacts& t, const json& fields) const {
  const json& kept = fields[kTaskKept];
  return pods_.document(
      {t.name, t.namespaceName, t.phase, &fields[kTaskCreate], &fields[kTaskPodStatuses],
       &fields[kTaskServiceStatuses], nullptr,
       kept.is_string() ? std::string_view(kept.get_ref<const std::string&>()) : std::string_view(),
       &fields[kTaskCompletion], &fields[kTaskReason], &fields[kTaskMessage],
       &fields[kTaskConditions], &fields[kTaskAllocatedPorts]});
}

std::optional<json> OtelExport::document(const std::string& task) const {
  std::optional<json> doc;
  host().cacheGet(taskSub_, config_.taskNamespace + "/" + task, [&](const sdk::Object& o) {
    json fields = model::parseFields(o.fieldsJson, kTaskFieldCount);
    TaskFacts t = taskFactsOf(task, config_.taskNamespace, fields);
    t.uid = std::string(o.uid);
    doc = documentOf(t, fields);
  });
  return doc;
}

json OtelExport::jobContext(const std::string& job, const std::string& task, const json& doc,
                            int64_t nowNanos) const {
  std::optional<model::job::JobFields> j;
  host().cacheGet(jobSub_, config_.taskNamespace + "/" + job,
                  [&j](const sdk::Object& o) { j = model::job::jobOfFields(o.fieldsJson); });
  if (!j) return nullptr;
  // The job's tasks as their documents have them (its queue counts the others' times).
  std::map<std::string, json> docs;
  for (const auto& t : j->job.tasks) {
    if (t.name.empty()) continue;
    std::optional<json> d = t.name == task ? std::optional<json>(doc) : document(t.name);
    if (!d) continue;
    (*d)["summary"] = model::timeline::summarize(*d, nowNanos);
    docs.emplace(t.name, std::move(*d));
  }
  return model::job::jobContext(
      model::job::jobDocument(j->job, model::job::observationsOf(j->observed), docs, nowNanos),
      task);
}

void OtelExport::evaluate(const std::string& name, std::string_view uid, std::string_view rv,
                          const json& fields) {
  if (recent_.count(name) > 0) return release(name, rv); // sent
  TaskFacts t = taskFactsOf(name, config_.taskNamespace, fields);
  t.uid = std::string(uid);
  bool mine = t.initiator == domain_ ||
              std::find(t.parties.begin(), t.parties.end(), domain_) != t.parties.end();
  if (!mine) return release(name, rv);
  const int64_t now = host().wallTimeNanos();
  const json doc = documentOf(t, fields);
  // The root's host also sends what came before the task in its job.
  JobContext before;
  if (!t.job.empty()) before = [&] { return jobContext(t.job, name, doc, now); };
  Plan plan = planSpans(doc, t, domain_, now, config_.stuckAfterSeconds * int64_t{1000000000},
                        host().deploymentMode() == "p2p", before);
  auto held = tasks_.find(name);
  if (plan.finished && held == tasks_.end() && plan.finishedAt &&
      now - *plan.finishedAt > config_.resendWindowSeconds * int64_t{1000000000}) {
    forgetTask(name); // history: it started long before this host saw it
    return release(name, rv);
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
    release(name, rv);
  }
}

void OtelExport::release(const std::string& name, std::string_view rv) {
  // Sent, too old or not this domain's: no later version of it matters to this instance, so a
  // newer one is released as well.
  host().cacheRelease(taskSub_, config_.taskNamespace + "/" + name, std::string(rv),
                      [](const sdk::Object&) { return true; });
}

void OtelExport::evaluateCached(const std::string& name) {
  bool found =
      host().cacheGet(taskSub_, config_.taskNamespace + "/" + name, [&](const sdk::Object& o) {
        evaluate(name, o.uid, o.resourceVersion, model::parseFields(o.fieldsJson, kTaskFieldCount));
      });
  if (!found) forgetTask(name);
}

void OtelExport::forgetTask(const std::string& name) {
  tasks_.erase(name);
  recent_.erase(name);
  pods_.forgetTask(name);
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
  pods_.sweep(
      now, kOrphanNanos, [this](const std::string& task) { return held(task); },
      [this](const std::string& task) { return wanted(task); });
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
