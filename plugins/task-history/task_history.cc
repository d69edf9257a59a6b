#include "task_history.h"

#include <algorithm>
#include <thread>

#include "history_api.h"
#include <kuscia_model/control_plane.h>
#include <kuscia_model/finished_tasks.h>
#include <kuscia_model/kept_facts.h>
#include <kuscia_model/kuscia.h>
#include <kuscia_model/kuscia_model.h>
#include <kuscia_model/kuscia_time.h>
#include <kuscia_model/status_entries.h>

namespace kuscia_host::plugins::history {

using nlohmann::json;

namespace {

constexpr uint64_t kTickMillis = 1000;
// tasks, pods, Events, TaskResources (every namespace), routes, jobs: all listed before the first
// resync.
constexpr std::size_t kSubscriptions = 6;
constexpr std::size_t kResyncBatch = 200;
constexpr int64_t kOrphanNanos = 600 * model::kSecond;
// Pending events whose room is kept between ticks.
constexpr std::size_t kPendingKept = 1024;

// The task subscription's fields, in this order.
enum TaskField : std::size_t {
  kTaskCreate,
  kTaskPhase,
  kTaskInitiator,
  kTaskParties,
  kTaskCompletion, // the task's end, and why (what summary.failure reads beside the entries)
  kTaskReason,
  kTaskMessage,
  kTaskKept,       // the facts kept on the task (kept_facts.h)
  kTaskConditions, // its ResourceCreated: the task's preparing
  kTaskPods,
  kTaskServices,
  kTaskPorts, // its allocatedPorts: the party whose cluster wrote it (timeline::localParty)
  kTaskFieldCount
};

} // namespace

TaskHistory::TaskHistory(sdk::Host host, std::string_view domain, std::string_view configJson)
    : Plugin(host), config_(parseHistoryConfig(configJson)), domain_(domain),
      recordings_(host.counter("kuscia_history_recordings_total",
                               "Recordings the database took: written (they added something) or "
                               "unchanged (it held them already)",
                               {"result"})),
      failures_(host.counter("kuscia_history_write_failures_total",
                             "Database calls that failed (each retry counts)", {})),
      dropped_(host.counter("kuscia_history_dropped_total",
                            "Recordings dropped because the queue was full (a resync restores "
                            "those whose task still exists)",
                            {})),
      pruned_(host.counter("kuscia_history_pruned_total",
                           "Tasks deleted by retentionDays or maxTasks", {})),
      queueDepth_(
          host.gauge("kuscia_history_queue_depth", "Recordings waiting for the database", {})),
      inFlight_(host.gauge("kuscia_history_tasks_due", "Tasks whose recording is due", {})) {
  HistoryWriter::Options o;
  o.capacity = static_cast<std::size_t>(config_.queueSize);
  o.retentionNanos = config_.retentionDays * 86400 * model::kSecond;
  o.maxTasks = static_cast<std::size_t>(config_.maxTasks);
  std::string database = config_.database, password = config_.password;
  // The instances of this host recording into the same database with the same settings share
  // one writer: a task's recordings by several domains are written together.
  const std::string key = json{database, password, o.capacity, o.retentionNanos, o.maxTasks}.dump();
  writer_ = host.libraryState<HistoryWriters>().get(key, [database, password, o] {
    return std::make_unique<HistoryWriter>(
        [database, password] { return openStore(database, password); }, o);
  });
  taskSub_ = host.subscribe(model::taskSubscription(
      config_.taskNamespace,
      {"/metadata/creationTimestamp", "/status/phase", "/spec/initiator", "/spec/parties",
       "/status/completionTime", "/status/reason", "/status/message", model::kKeptFactsPointer,
       "/status/conditions", "/status/podStatuses", "/status/serviceStatuses",
       "/status/allocatedPorts"}));
  podSub_ = host.subscribe(model::domainSubscription("pods", model::DomainPods::podFields()));
  // Every party's reservation, and a p2p initiator's stubs of its partners.
  taskResourceSub_ = host.subscribe(model::control::allTaskResourceSubscription());
  routeSub_ = host.subscribe(model::route::routeSubscription());
  eventSub_ = host.subscribe(model::podEventSubscription());
  jobSub_ = host.subscribe(model::kusciaSubscription(
      model::control::kKusciaJobs, config_.taskNamespace,
      {"/metadata/creationTimestamp", "/spec", "/status", model::job::kObservedPointer}));
  host.registerRoute(std::string(kHistoryRoute));
}

TaskHistory::~TaskHistory() {
  writer_->detach(user_, std::chrono::milliseconds(0));
}

void TaskHistory::onStart() {
  sdk::Host h = host();
  user_ = writer_->attach([h] { return h.wallTimeNanos(); }, domain_);
  timer_ = host().startTimer(kTickMillis, kTickMillis);
  for (const char* result : {"written", "unchanged"})
    recordings_.add(0, {result});
  host().info(
      "recording task timelines in " +
      std::string(config_.database.rfind("postgres", 0) == 0 ? "PostgreSQL" : config_.database) +
      " (retention " + std::to_string(config_.retentionDays) + " days)");
}

void TaskHistory::onStop() {
  // What is due goes now; the writer has a few seconds to write it.
  readPending();
  for (const auto& [task, at] : due_)
    recordCached(task);
  due_.clear();
  writer_->detach(user_, std::chrono::seconds(5));
  poll();
}

void TaskHistory::onEvent(const sdk::Event& e) {
  if (e.type == KH_EVENT_SYNCED) {
    synced_.insert(e.subscriptionId);
    if (synced_.size() == kSubscriptions) startResync();
    return;
  }
  if (e.subscriptionId == taskSub_) return onTask(e);
  if (e.subscriptionId == jobSub_) return onJob(e);
  if (e.subscriptionId == routeSub_) return pods_.onRoute(e);
  if (e.subscriptionId != podSub_ && e.subscriptionId != eventSub_ &&
      e.subscriptionId != taskResourceSub_)
    return;
  if (e.subscriptionId == eventSub_ && e.type == KH_EVENT_DELETED) return; // what it said stays
  // Kept as it came, and read with the others at the next tick (or before anything reads the
  // facts): one pass over a second's events, warm, instead of a cold call each.
  pending_.push_back({e.subscriptionId, e.type, std::string(e.key), std::string(e.uid),
                      std::string(e.fieldsJson), host().wallTimeNanos(),
                      synced_.size() == kSubscriptions});
}

void TaskHistory::onJob(const sdk::Event& e) {
  if (e.type == KH_EVENT_DELETED) return; // kept: the history outlives the job
  const nlohmann::json f = model::parseFields(e.fieldsJson, 4);
  nlohmann::json meta = {{"name", std::string(model::nameOf(e.key))},
                         {"namespace", config_.taskNamespace}};
  if (f[0].is_string()) meta["creationTimestamp"] = f[0];
  if (f[3].is_string()) meta["annotations"] = {{model::job::kObservedAnnotation, f[3]}};
  JobRecord job;
  job.job = meta["name"].get<std::string>();
  job.namespaceName = config_.taskNamespace;
  job.phase = f[2].is_object() ? model::textOf(f[2], "phase") : std::string();
  job.createNanos = model::parseTime(model::fieldString(f, 0)).value_or(0);
  job.object = {{"metadata", std::move(meta)},
                {"spec", f[1].is_object() ? f[1] : nlohmann::json::object()},
                {"status", f[2].is_object() ? f[2] : nlohmann::json::object()}};
  writer_->enqueueJob(std::move(job));
}

void TaskHistory::readPending() {
  auto wanted = [](const std::string&) { return true; };
  auto held = [this](const std::string& task) { return due_.count(task) > 0; };
  for (const PendingEvent& p : pending_) {
    sdk::Event e;
    e.subscriptionId = p.subscription;
    e.type = p.type;
    e.key = p.key;
    e.uid = p.uid;
    e.fieldsJson = p.fields;
    const std::string task = p.subscription == podSub_ ? pods_.onPod(e, p.at, wanted, held)
                             : p.subscription == taskResourceSub_
                                 ? pods_.onTaskResource(e)
                                 : pods_.onPodEvent(e, p.at, wanted);
    // A new fact of a task's pod: the task is recorded again (before the initial lists are in,
    // the resync that follows them looks at every task anyway).
    if (p.afterSync && !task.empty()) markDue(task, p.at);
  }
  pending_.clear();
  // A burst's capacity is not kept for a quiet hour.
  if (pending_.capacity() > kPendingKept) pending_.shrink_to_fit();
}

void TaskHistory::onTask(const sdk::Event& e) {
  std::string name(model::nameOf(e.key));
  if (e.type == KH_EVENT_DELETED) {
    readPending(); // its pods' last facts
    // Its last state, when a recording was due; then nothing of it is held.
    if (due_.erase(name) > 0) record(name, e.uid, e.fieldsJson);
    stuckChecks_.erase(name);
    pods_.forgetTask(name);
    return;
  }
  if (synced_.size() < 3) return; // the resync after the initial lists looks at it
  markDue(name, host().wallTimeNanos());
}

void TaskHistory::markDue(const std::string& task, int64_t changedNanos) {
  // The first change sets the time; later ones ride along.
  due_.emplace(task, changedNanos + config_.recordDelaySeconds * model::kSecond);
}

namespace {

// Whether spec.parties names `domain`.
bool partyOf(const json& parties, const std::string& domain) {
  if (parties.is_array())
    for (const auto& p : parties)
      if (p.is_object() && p.value("domainID", "") == domain) return true;
  return false;
}

// The entries `keep` accepts of the parsed fields' status maps, moved out of them.
template <class Keep> void takeEntries(json& fields, const Keep& keep, json& pods, json& services) {
  for (std::size_t group : {kTaskPods, kTaskServices}) {
    if (!fields[group].is_object()) continue;
    json& out = group == kTaskPods ? pods : services;
    for (auto& [key, entry] : fields[group].items())
      if (keep(key)) out[key] = std::move(entry);
  }
}

// The task's end among its fields (completionTime, reason, message), as JSON values.
// (nlohmann::json's implicit noexcept move: see TaskRow in history_doc.h.)
// NOLINTNEXTLINE(bugprone-exception-escape)
struct EndFields {
  json completion, reason, message, conditions, ports;
  std::string resourceCreated; // of the conditions
  std::string localParty;      // of the ports
  template <class Get> static EndFields of(const Get& get) {
    EndFields e{get(kTaskCompletion),
                get(kTaskReason),
                get(kTaskMessage),
                get(kTaskConditions),
                get(kTaskPorts),
                {},
                {}};
    e.resourceCreated = model::timeline::resourceCreatedTime(&e.conditions);
    e.localParty = model::timeline::localParty(&e.ports);
    return e;
  }
  // Views of them for a document written from texts (valid while this lives).
  void into(model::TaskTexts& t) const {
    auto view = [](const json& v) {
      return v.is_string() ? std::optional<std::string_view>(v.get_ref<const std::string&>())
                           : std::nullopt;
    };
    t.completionTime = view(completion);
    t.reason = view(reason);
    t.message = view(message);
    if (!resourceCreated.empty()) t.resourceCreatedTime = resourceCreated;
    t.localParty = localParty;
  }
};

} // namespace

bool TaskHistory::record(const std::string& task, std::string_view uid, std::string_view fieldsJson,
                         bool* finished, bool refresh) {
  // The entries of a domain that records into the same writer are in that domain's recording,
  // written with this one (a centralized host records each domain with an instance): this one
  // leaves them out, unparsed. Another party's entries are kept when nothing here records them.
  const std::vector<std::string> others = writer_->othersRecording(user_);
  bool mine = false;
  auto kept = [&](std::string_view key) {
    std::string_view party = model::namespaceOf(key);
    // A task whose spec this host cannot read (another version) is still this domain's when its
    // status holds an entry of the domain.
    mine = mine || party == domain_;
    return std::find(others.begin(), others.end(), party) == others.end();
  };
  auto namesDomain = [this](const json& parties) { return partyOf(parties, domain_); };
  std::string phase;
  std::string keptFacts; // what was kept of pods that may be gone
  auto spans = model::arrayElements(fieldsJson);
  // The document written from the texts where the scanner reads them as the parser would (the
  // common case: about a third of the instructions of parsing the entries and building from
  // them); else from the entries parsed.
  std::optional<model::TimelineText> text;
  std::optional<model::DomainPods::EntryTextList> podTexts, serviceTexts;
  if (spans && spans->size() == kTaskFieldCount) {
    podTexts = model::entryTextsWhere((*spans)[kTaskPods], kept);
    if (podTexts) serviceTexts = model::entryTextsWhere((*spans)[kTaskServices], kept);
  }
  if (serviceTexts) {
    phase = model::stringValue((*spans)[kTaskPhase]).value_or("");
    mine = mine || model::stringValue((*spans)[kTaskInitiator]).value_or("") == domain_;
    mine = mine || namesDomain(model::parseJson((*spans)[kTaskParties]));
    if (finished != nullptr) *finished = model::finishedPhase(phase);
    if (!mine) return true;
    const std::optional<std::string> create = model::stringValue((*spans)[kTaskCreate]);
    model::TaskTexts texts{task, config_.taskNamespace};
    if (!phase.empty()) texts.phase = phase;
    if (create) texts.createTime = *create;
    const EndFields end =
        EndFields::of([&](std::size_t i) { return model::parseJson((*spans)[i]); });
    end.into(texts);
    keptFacts = model::stringValue((*spans)[kTaskKept]).value_or("");
    text = pods_.documentTextOf(texts, *podTexts, *serviceTexts, uid, keptFacts);
  }
  if (!text) {
    json create, pods, services;
    EndFields end;
    // An entry the scanner does not read as the parser would: the kept entries parsed.
    std::optional<json> scannedPods, scannedServices;
    if (serviceTexts) {
      scannedPods = model::entriesWhere((*spans)[kTaskPods], kept);
      if (scannedPods) scannedServices = model::entriesWhere((*spans)[kTaskServices], kept);
    }
    if (scannedServices) {
      create = model::parseJson((*spans)[kTaskCreate]);
      end = EndFields::of([&](std::size_t i) { return model::parseJson((*spans)[i]); });
      pods = std::move(*scannedPods);
      services = std::move(*scannedServices);
    } else {
      // Text the scanner cannot walk: every field parsed.
      json f = model::parseFields(fieldsJson, kTaskFieldCount);
      phase = model::fieldString(f, kTaskPhase);
      mine = model::fieldString(f, kTaskInitiator) == domain_ || namesDomain(f[kTaskParties]);
      takeEntries(f, kept, pods, services);
      create = std::move(f[kTaskCreate]);
      end = EndFields::of([&f](std::size_t i) { return std::move(f[i]); });
      keptFacts = model::fieldString(f, kTaskKept);
      if (finished != nullptr) *finished = model::finishedPhase(phase);
      if (!mine) return true;
    }
    text = pods_.documentText({task, config_.taskNamespace, phase, &create, nullptr, &services,
                               &pods, keptFacts, &end.completion, &end.reason, &end.message,
                               &end.conditions, &end.ports},
                              uid);
  }
  return enqueue(task, std::move(*text), phase, refresh);
}

bool TaskHistory::enqueue(const std::string& task, model::TimelineText text,
                          const std::string& phase, bool refresh) {
  // As text: the store writes it as it is and summarises the times that come with it.
  const int64_t now = host().wallTimeNanos();
  Recording r{task, config_.taskNamespace, domain_, now, json(), std::move(text)};
  r.stuckAfterNanos = config_.stuckAfterSeconds * model::kSecond;
  // Not finished: looked at again once it may be stuck (the row summarised at that time), unless
  // this is that look.
  r.refresh = refresh;
  if (!model::finishedPhase(phase) && !refresh)
    stuckChecks_[task] = now + r.stuckAfterNanos + model::kSecond;
  if (writer_->enqueue(user_, std::move(r))) return true;
  droppedSinceResync_ = true;
  return false;
}

bool TaskHistory::recordCached(const std::string& task, bool refresh) {
  bool ok = true;
  std::string key = config_.taskNamespace + "/" + task;
  std::string finishedRv, recorded;
  host().cacheGet(taskSub_, key, [&](const sdk::Object& o) {
    bool finished = false;
    ok = record(task, o.uid, o.fieldsJson, &finished, refresh);
    if (ok && finished) {
      finishedRv = std::string(o.resourceVersion);
      recorded = std::string(o.fieldsJson);
    }
  });
  // A finished task recorded (or queued to be): the host may forget it. A newer version is
  // released only when what this instance sees of it is what was recorded; otherwise its event
  // brings another recording first.
  if (!finishedRv.empty())
    host().cacheRelease(taskSub_, key, finishedRv,
                        [&recorded](const sdk::Object& o) { return o.fieldsJson == recorded; });
  return ok;
}

void TaskHistory::onTimer(uint64_t timerId, uint64_t /*userTag*/) {
  if (timerId == timer_) tick();
}

void TaskHistory::tick() {
  readPending();
  const int64_t now = host().wallTimeNanos();
  for (auto it = due_.begin(); it != due_.end();) {
    if (it->second > now) {
      ++it;
      continue;
    }
    recordCached(it->first);
    it = due_.erase(it);
  }
  for (auto it = stuckChecks_.begin(); it != stuckChecks_.end();) {
    if (it->second > now || due_.count(it->first) > 0) { // a recording on its way looks anyway
      ++it;
      continue;
    }
    const std::string task = it->first;
    it = stuckChecks_.erase(it);
    recordCached(task, true);
  }
  // A deleted task's pods went with it (onTask); what is left to drop: deleted pods no
  // recording waits for, and Events of pods never seen.
  pods_.sweep(
      now, kOrphanNanos, [this](const std::string& task) { return due_.count(task) > 0; },
      [](const std::string&) { return true; });
  resyncSome();
  poll();
}

void TaskHistory::startResync() {
  resync_.clear();
  resyncNext_ = 0;
  host().cacheList(taskSub_, "", [this](const sdk::Object& o) {
    resync_.emplace_back(model::nameOf(o.key));
    return false;
  });
  droppedSinceResync_ = false;
}

void TaskHistory::resyncSome() {
  // Half the queue at most, so that live recordings keep their room.
  std::size_t room = writer_->room();
  std::size_t budget = std::min(kResyncBatch, room - room / 2);
  while (budget > 0 && resyncNext_ < resync_.size()) {
    recordCached(resync_[resyncNext_++]);
    --budget;
  }
  if (resyncNext_ == resync_.size() && !resync_.empty()) {
    resync_.clear();
    resync_.shrink_to_fit();
    resyncNext_ = 0;
  }
}

void TaskHistory::poll() {
  HistoryWriter::Counters c = writer_->snapshot(user_);
  auto delta = [](uint64_t now, uint64_t before) {
    return static_cast<double>(now > before ? now - before : 0);
  };
  recordings_.add(delta(c.written, reported_.written), {"written"});
  recordings_.add(delta(c.unchanged, reported_.unchanged), {"unchanged"});
  failures_.add(delta(c.failures, reported_.failures));
  dropped_.add(delta(c.dropped, reported_.dropped));
  pruned_.add(delta(c.pruned, reported_.pruned));
  queueDepth_.set(static_cast<double>(c.depth));
  inFlight_.set(static_cast<double>(due_.size()));
  if (c.failing && c.episode != loggedEpisode_) {
    loggedEpisode_ = c.episode;
    loggedFailing_ = true;
    host().warn("recording task history fails: " + c.lastError +
                " (retrying with backoff; recordings wait in the queue, and further failures "
                "until it works again are only counted)");
  } else if (!c.failing && loggedFailing_) {
    loggedFailing_ = false;
    host().info("recording task history works again (" + c.store + ")");
  }
  // What the queue could not hold is in the tasks' statuses: look at every task again once the
  // database takes writes.
  if (!c.failing && c.depth == 0 && droppedSinceResync_ && resync_.empty()) {
    host().info("recordings were dropped while the database could not keep up: looking at "
                "every task again");
    startResync();
  }
  reported_ = std::move(c);
}

void TaskHistory::flush(std::chrono::milliseconds wait) {
  readPending();
  for (const auto& [task, at] : due_)
    recordCached(task);
  due_.clear();
  while (resyncNext_ < resync_.size())
    recordCached(resync_[resyncNext_++]);
  auto until = std::chrono::steady_clock::now() + wait;
  while (writer_->snapshot(user_).depth > 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  poll();
}

void TaskHistory::serveOffline(std::string_view configJson, const sdk::HttpRequest& request,
                               sdk::HttpResponse& response) {
  HistoryConfig config = parseHistoryConfig(configJson);
  auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  std::unique_ptr<HistoryStore> store;
  try {
    store = openStore(config.database, config.password, true);
  } catch (const StoreError& e) {
    response.status = 503;
    response.body = json{{"message", e.what()}}.dump();
    return;
  }
  serveHistory(*store, request, response, now);
}

void TaskHistory::onHttpRequest(const sdk::HttpRequest& request, sdk::HttpResponse& response) {
  auto open = [this] { return openStore(config_.database, config_.password); };
  sdk::DeferredResponse later = response.defer();
  if (!later) {
    // Not deferrable (cannot happen with the host this plugin needs): answer here.
    std::unique_ptr<HistoryStore> store;
    answerFromStore(store, open, request, response, host().wallTimeNanos());
    return;
  }
  if (!reader_) {
    sdk::Host h = host();
    reader_ = std::make_unique<HistoryReader>(open, [h] { return h.wallTimeNanos(); });
  }
  reader_->submit(request, std::move(later));
}

} // namespace kuscia_host::plugins::history
