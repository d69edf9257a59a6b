// A task's timeline document written straight as text: what dumpJson() writes of the document
// model::timeline::fromParts() builds, and what model::timeline::entryTimes() reads of each of its
// entries, without the document's DOM. task-history records a document per domain and task; as
// a DOM it was built (about 80,000 instructions a recording), dumped and freed, and read again
// for the summary, while the text and the times are all the store needs of a new recording.
#pragma once

#include <kuscia_model/pod_events.h>
#include <kuscia_model/timeline.h>
#include <kuscia_model/timeline_summary.h>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kuscia_host::model {

struct TimelineText {
  std::string json;              // dumpJson() of the document
  std::string phase, createTime; // the document's "phase" and "createTime" when strings, else ""
  model::timeline::TaskEnd end;  // what the document says of the task's end (TaskEnd::of)
  // entryTimes() of each of the document's entries, in the entries' (key) order.
  std::vector<model::timeline::EntryTimes> entries;
  // The partner entries of its "partnerReservations" (timeline_summary.h, partnerEntriesOf).
  std::vector<model::timeline::EntryTimes> partners;
};

// The document of fromParts(t) (its partnerReservations included), with "uid" added to the entries
// `entryUids` names (entry key, pod UID) and to the document when `uid` is not empty.
TimelineText timelineText(const model::timeline::TaskParts& t,
                          const std::vector<std::pair<std::string, std::string>>& entryUids,
                          std::string_view uid);

// A task as the texts of its projected fields give it, for timelineTextOf(): strings decoded.
struct TaskTexts {
  std::string_view name, namespaceName;
  std::optional<std::string_view> phase, createTime; // none: the document has none
  // The task's status: when it ended and why (none: it says nothing), and when its objects were
  // created (its ResourceCreated condition's time).
  std::optional<std::string_view> completionTime, reason, message, resourceCreatedTime;
  std::string_view localParty;                 // timeline::localParty() of its status ("" none)
  const nlohmann::json* routeOutage = nullptr; // the document's "routeOutage" (route_outage.h)
};
// One status entry as its text gives it (status_entries.h, entryFieldTexts(): none with
// evidence, which the DOM path writes), with what a domain
// knows beyond it merged (DomainPods): what the document's entry is built from.
struct EntryText {
  std::string key;  // decoded
  bool pod = false; // of podStatuses
  // The instant of each time field, in EntryTimes::fields() order (none: absent, or not a time).
  std::array<std::optional<int64_t>, model::timeline::EntryTimes::kTimeCount> times;
  std::string_view podPhase; // its value's text, a string with nothing to escape ("" none)
  // The pod's reasons, each with the time it was seen (nullptr or empty: none).
  const std::map<std::string, model::timeline::PodFacts::Reason>* reasons = nullptr;
};
// The same document as timelineText() writes of the DOM these texts parse to (with the facts
// merged as PodFacts::fill() merges them), "uid" added as timelineText() adds it: entries sorted
// by key here (the later of one key wins).
// `partners`: the document's "partnerReservations" (an object; empty: none).
TimelineText timelineTextOf(const TaskTexts& t, std::vector<EntryText>& entries,
                            const std::vector<std::pair<std::string, std::string>>& entryUids,
                            std::string_view uid,
                            const nlohmann::json& partners = nlohmann::json::object());

} // namespace kuscia_host::model
