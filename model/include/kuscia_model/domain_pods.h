// What this domain's task pods and their Events tell beyond the task's status, for plugins that
// build a task's timeline document from the task alone (otel-export, task-history): the first
// Ready of an incarnation, every container running, the image pulls, why each phase waited
// (kuscia_model/pod_events.h). task-timeline keeps the same facts on its own (its entry board).
//
// The owner routes the events of two subscriptions here: pods of its domain with podFields(), in
// that order, and podEventSubscription() (kuscia.h). Single-threaded, like the plugin instance.
#pragma once

#include <kuscia_host/plugin.hpp>
#include <kuscia_model/control_plane.h>
#include <kuscia_model/pod_events.h>
#include <kuscia_model/route_outage.h>

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <kuscia_model/timeline_text.h>

namespace kuscia_host::model {

// A task as its projected fields show it: what a document is built from.
struct TaskStatusView {
  std::string name, namespaceName, phase;
  const nlohmann::json* creationTimestamp = nullptr; // a string, or absent
  const nlohmann::json* podStatuses = nullptr;       // objects, or absent
  const nlohmann::json* serviceStatuses = nullptr;
  // Pod entries the caller gives up, instead of podStatuses: this domain's facts are merged into
  // them where they are (no copy), and they are left moved from.
  nlohmann::json* podStatusesToTake = nullptr;
  // The facts kept on the task (kept_facts.h: its annotation's value, "" none): what the
  // document takes for a pod this domain no longer holds (deleted with its finished task).
  std::string_view keptFacts;
  // The task's status: when it ended and why (strings, or absent).
  const nlohmann::json* completionTime = nullptr;
  const nlohmann::json* reason = nullptr;
  const nlohmann::json* message = nullptr;
  const nlohmann::json* conditions = nullptr;     // its status's (ResourceCreated), or absent
  const nlohmann::json* allocatedPorts = nullptr; // its status's (timeline::localParty), or absent
};

class DomainPods {
public:
  // The pod subscription's projected fields, in the order onPod reads them.
  static std::vector<std::string> podFields();

  // Whether the owner still wants facts for a task (false: it is done with it).
  using Wanted = std::function<bool(const std::string& task)>;

  // A pod event. A deleted pod's facts stay while `held(task)` (its task still owes a
  // document), else they go. The task whose pod's facts were taken ("" when none: deleted, not a
  // task's, not wanted).
  std::string onPod(const sdk::Event& e, int64_t nowNanos, const Wanted& wanted,
                    const Wanted& held);
  // An Event of the pod subscription podEventSubscription(). The task of the pod it is about
  // ("" when that pod is not known as a task's yet).
  std::string onPodEvent(const sdk::Event& e, int64_t nowNanos, const Wanted& wanted);
  // An event of control::taskResourceSubscription(): its party's pods of its task take its
  // reservation's times (kept after Kuscia deletes it, while the task's pods are held); or of
  // control::partnerTaskResourceSubscription() (a p2p initiator's stubs of its partners): the
  // document's "partnerReservations". The task ("" when the event names none or changed nothing).
  std::string onTaskResource(const sdk::Event& e);
  // An event of route::routeSubscription(): a task that failed on the route has its outage in
  // its document ("routeOutage", route_outage.h), as known when the document is built.
  void onRoute(const sdk::Event& e) { routes_.onEvent(e); }

  // The timeline document of the task (kuscia_model/timeline.h), this domain's facts merged into
  // its pods' entries; the status is the source of which entries there are. Each of this domain's
  // pod entries carries "uid" when known. "partnerReservations": the reservations of the parties
  // it has no entries of, seen (their stubs) or kept on the task (kept_facts.h).
  nlohmann::json document(const TaskStatusView& task) const;
  // The same document as text, with "uid" added to it when `uid` is not empty, and what the
  // summary reads of its entries (timeline_text.h): no DOM of the document is built.
  TimelineText documentText(const TaskStatusView& task, std::string_view uid) const;

  // The same text from the texts of the task's fields and of its status entries, none parsed:
  // (decoded key, entry text) as entryTextsWhere() gives them. nullopt when an entry holds what
  // the scanner does not read as the parser would (entryFieldTexts()), or a pod this domain no
  // longer holds has facts kept on the task (`keptFacts`): documentText() then.
  using EntryTextList = std::vector<std::pair<std::string, std::string_view>>;
  std::optional<TimelineText> documentTextOf(const TaskTexts& task, const EntryTextList& pods,
                                             const EntryTextList& services, std::string_view uid,
                                             std::string_view keptFacts = {}) const;

  void forgetTask(const std::string& task);
  // Drops the Events of pods never seen as a task's after `orphanNanos`, and the facts of pods
  // whose task is not `held` and that are deleted or whose task is not `wanted`.
  void sweep(int64_t nowNanos, int64_t orphanNanos, const Wanted& held, const Wanted& wanted);
  std::size_t size() const { return pods_.size(); }

private:
  struct PodState {
    std::string uid, task;
    model::timeline::PodFacts facts;
    std::optional<int64_t> containersStart, firstReady;
    bool gone = false;     // deleted; kept until its task's document is done with it
    int64_t seenNanos = 0; // the last event about it
  };
  // The pod `key` as held for `task` (nullptr: none of the task's).
  const PodState* heldPod(const std::string& task, std::string_view key) const;
  // The pod's first Ready when it is of the incarnation of a status entry with these createTime
  // and readyTime (between the two).
  static std::optional<int64_t> firstReadyOf(const PodState& p, std::optional<int64_t> create,
                                             std::optional<int64_t> ready);
  // The status's pod entries (an object) with this domain's facts merged into those of its pods,
  // and the UIDs of those pods (entry key, UID).
  nlohmann::json withFacts(const std::string& task, nlohmann::json pods,
                           std::vector<std::pair<std::string, std::string>>& uids,
                           std::string_view keptFacts) const;
  // The document's "partnerReservations" (kept_facts.h, partnerReservations).
  nlohmann::json partnersOf(const std::string& task, std::string_view keptFacts,
                            const std::function<bool(std::string_view party)>& holds) const;
  // `build(parts, uids)` of the document's parts, this domain's facts merged.
  template <typename Build> auto build(const TaskStatusView& t, const Build& build) const;

  std::map<std::string, PodState, std::less<>> pods_; // "<ns>/<name>"
  control::Reservations reservations_;                // each party's TaskResource's times
  route::Routes routes_;                              // the routes and their outages
};

} // namespace kuscia_host::model
